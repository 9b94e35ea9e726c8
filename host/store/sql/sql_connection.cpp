#include "store/sql/sql_connection.h"

#include <stdexcept>

namespace ductwork::sql {

Statement Connection::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.emplace(sql, compile(sql)).first;
  StatementBackend* backend = it->second.get();
  if (backend->in_use) {
    throw std::logic_error("database " + name() + ": statement already in use (a nested use of the same SQL would "
                           "reset the outer one): " + sql);
  }
  backend->in_use = true;
  return Statement(backend);
}

void Connection::drop_statements() {
  for (const auto& [sql, backend] : cache_) {
    if (backend->in_use) throw std::logic_error("database " + name() + ": statements dropped while in use: " + sql);
  }
  cache_.clear();
}

void Connection::fail(const std::string& what, StoreFault fault) const {
  throw StoreError("database " + name() + ": " + what, fault);
}

std::string db_now(Connection& conn) {
  auto stmt = conn.prepare("SELECT dw_now()");
  stmt.step();
  return stmt.text(0);
}

}  // namespace ductwork::sql
