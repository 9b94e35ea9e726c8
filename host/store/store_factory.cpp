#include "config/config.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_error.h"

namespace ductwork {

std::unique_ptr<StoreFactory> make_store_factory(const DatabaseConfig& config) {
  if (config.adapter == "sqlite") return std::make_unique<sqlite::SqliteStoreFactory>(config.path);
  throw StoreError("database adapter " + config.adapter + " is not supported");
}

}  // namespace ductwork
