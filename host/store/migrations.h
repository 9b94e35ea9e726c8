#pragma once

#include <string>
#include <vector>

namespace ductwork {

// One schema file, embedded into the binary at build time from
// schema/<dialect>/NNN_name.sql so an installed host needs no schema folder.
struct Migration {
  std::string version;  // file name without .sql, e.g. "001_create_tables"
  std::string sql;
};

// The migrations of each dialect, in file-name order.
const std::vector<Migration>& sqlite_migrations();
const std::vector<Migration>& postgresql_migrations();

}  // namespace ductwork
