#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "store/sql/sql_connection.h"

namespace ductwork::sql {

// Inserts many rows into one table with multi-row INSERT statements: full
// batches of kRowsPerStatement rows, the remainder split into power-of-two
// chunks so that only a dozen statement shapes per table ever reach the
// connection's statement cache, however the row counts vary.
//
//   BatchInsert links(conn, "INSERT INTO branch_links (id, parent_branch_id, child_branch_id, "
//                           "created_at, updated_at) VALUES ", "(?, ?, ?, ?, ?)", 5);
//   links.add({id, parent, child, now, now});
//   links.flush();  // before the transaction commits: queued rows are not written otherwise
class BatchInsert {
 public:
  static constexpr size_t kRowsPerStatement = 1000;
  // std::monostate binds NULL.
  using Value = std::variant<std::string, int64_t, std::monostate>;

  // `head` is "INSERT INTO t (cols) VALUES ", `row` one parenthesised tuple
  // of `width` '?' placeholders (expressions around them are allowed).
  BatchInsert(Connection& conn, std::string head, std::string row, int width);
  BatchInsert(BatchInsert&&) = default;
  // Rows queued and never flushed would be lost silently: outside of stack
  // unwinding (where the transaction rolls back anyway) that is a bug, and
  // the process aborts naming the table.
  ~BatchInsert();

  // Queues one row (width values); writes a full batch as soon as one is
  // queued.
  void add(std::vector<Value> values);
  // Writes every queued row.
  void flush();

 private:
  void write(size_t first_row, size_t rows);

  Connection& conn_;
  std::string head_;
  std::string row_;
  int width_;
  std::vector<Value> pending_;
  int exceptions_at_start_;
};

// branch_links rows: (id, parent_branch_id, child_branch_id, created_at,
// updated_at). Fan-out, fan-in and revive all write them in bulk.
// A new step's job, its first execution and that execution's availability:
// the same three rows whether a trigger, a fan-out or a fan-in makes them.
// Bound as (id, step_id, klass, input_args, started, created, updated),
// (id, job_id, started, created, updated) and
// (id, execution_id, pipeline_klass, available_from, created, updated).
inline BatchInsert jobs_insert(Connection& conn) {
  return BatchInsert(conn,
                     "INSERT INTO jobs (id, step_id, klass, input_args, started_at, created_at, updated_at) VALUES ",
                     "(?, ?, ?, ?, ?, ?, ?)", 7);
}
inline BatchInsert first_executions_insert(Connection& conn) {
  return BatchInsert(conn,
                     "INSERT INTO executions (id, job_id, retry_count, crash_count, started_at, created_at, "
                     "updated_at) VALUES ",
                     "(?, ?, 0, 0, ?, ?, ?)", 5);
}
inline BatchInsert availabilities_insert(Connection& conn) {
  return BatchInsert(conn,
                     "INSERT INTO availabilities (id, execution_id, pipeline_klass, started_at, created_at, "
                     "updated_at) VALUES ",
                     "(?, ?, ?, ?, ?, ?)", 6);
}

inline BatchInsert branch_links_insert(Connection& conn) {
  return BatchInsert(conn, "INSERT INTO branch_links (id, parent_branch_id, child_branch_id, created_at, updated_at) VALUES ",
                     "(?, ?, ?, ?, ?)", 5);
}

}  // namespace ductwork::sql
