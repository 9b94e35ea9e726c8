#pragma once

#include <memory>
#include <string>

#include "store/sqlite/sqlite_connection.h"

namespace ductwork::sqlite {

// Stores on one SQLite file: every thread of the process shares one
// connection (SharedDatabase explains why).
class SqliteStoreFactory final : public StoreFactory {
 public:
  explicit SqliteStoreFactory(std::string path, std::shared_ptr<const Clock> clock = nullptr)
      : shared_(std::make_shared<SharedDatabase>(std::move(path), std::move(clock))) {}
  std::unique_ptr<Store> open() override { return std::make_unique<sql::SqlStore>(shared_); }
  const Clock& clock() const override { return shared_->conn.clock(); }

 private:
  std::shared_ptr<SharedDatabase> shared_;
};

}  // namespace ductwork::sqlite
