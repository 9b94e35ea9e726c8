#pragma once

#include <string>

#include "store/sqlite/sqlite_connection.h"

namespace ductwork::sqlite {

// The database clock, read once per transaction so every row the
// transaction writes carries the same instant.
inline std::string db_now(Connection& conn) {
  auto stmt = conn.prepare("SELECT dw_now()");
  stmt.step();
  return stmt.text(0);
}

}  // namespace ductwork::sqlite
