#pragma once

#include <string>
#include <vector>

namespace ductwork {

// One schema file, embedded into the binary at build time from
// schema/<dialect>/NNN_name.sql so an installed host needs no schema folder.
// Both dialects share one numbering: the same file names in the same order,
// a migration one dialect does not need being a file with comments only.
struct Migration {
  std::string version;  // file name without .sql, e.g. "001_create_tables"
  std::string sql;
  // Names the file was recorded under before a renumbering (its
  // "-- formerly: NAME" lines): a database that recorded one of them has
  // applied it.
  std::vector<std::string> formerly;
};

// Whether `sql` holds a statement (not only comments and blank lines).
bool has_statements(const std::string& sql);

// The migrations of each dialect, in file-name order.
const std::vector<Migration>& sqlite_migrations();
const std::vector<Migration>& postgresql_migrations();

}  // namespace ductwork
