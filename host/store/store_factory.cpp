#include "config/config.h"
#include "store/postgresql/pg_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_error.h"

namespace ductwork {

std::unique_ptr<StoreFactory> make_store_factory(const DatabaseConfig& config, std::shared_ptr<const Clock> clock) {
  if (config.adapter == "sqlite") return std::make_unique<sqlite::SqliteStoreFactory>(config.path, std::move(clock));
  if (config.adapter == "postgresql") {
    if (config.url.empty()) throw StoreError("database.url: required with database.adapter postgresql");
    return std::make_unique<pg::PgStoreFactory>(config.url, config.pool, std::move(clock));
  }
  throw StoreError("database adapter " + config.adapter + " is not supported");
}

std::string database_name(const DatabaseConfig& config) {
  if (config.adapter != "postgresql") return config.path;
  try {
    return pg::parse_target(config.url).display;
  } catch (const StoreError&) {
    return "(an invalid database.url)";
  }
}

}  // namespace ductwork
