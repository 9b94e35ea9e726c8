#include "store/sql/batch_insert.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

namespace ductwork::sql {

BatchInsert::BatchInsert(Connection& conn, std::string head, std::string row, int width)
    : conn_(conn),
      head_(std::move(head)),
      row_(std::move(row)),
      width_(width),
      exceptions_at_start_(std::uncaught_exceptions()) {}

BatchInsert::~BatchInsert() {
  if (pending_.empty() || std::uncaught_exceptions() > exceptions_at_start_) return;
  std::fprintf(stderr, "ductwork: BatchInsert destroyed with %zu unflushed value(s) for \"%s\": call flush()\n",
               pending_.size(), head_.c_str());
  std::abort();
}

void BatchInsert::add(std::vector<Value> values) {
  if (static_cast<int>(values.size()) != width_) throw std::logic_error("BatchInsert: row of the wrong width");
  for (auto& v : values) pending_.push_back(std::move(v));
  if (pending_.size() >= kRowsPerStatement * static_cast<size_t>(width_)) flush();
}

void BatchInsert::flush() {
  size_t rows = pending_.size() / static_cast<size_t>(width_);
  size_t done = 0;
  while (done < rows) {
    size_t left = rows - done;
    size_t chunk = kRowsPerStatement;
    if (left < chunk) {
      chunk = 1;
      while (chunk * 2 <= left) chunk *= 2;
    }
    write(done, chunk);
    done += chunk;
  }
  pending_.clear();
}

void BatchInsert::write(size_t first_row, size_t rows) {
  std::string sql = head_;
  sql.reserve(head_.size() + rows * (row_.size() + 1));
  for (size_t r = 0; r < rows; ++r) {
    if (r > 0) sql += ',';
    sql += row_;
  }
  Statement stmt = conn_.prepare(sql);
  int index = 1;
  for (size_t r = first_row; r < first_row + rows; ++r) {
    for (int c = 0; c < width_; ++c) {
      const Value& v = pending_[r * static_cast<size_t>(width_) + static_cast<size_t>(c)];
      if (std::holds_alternative<int64_t>(v)) {
        stmt.bind(index++, std::get<int64_t>(v));
      } else if (std::holds_alternative<std::monostate>(v)) {
        stmt.bind_null(index++);
      } else {
        stmt.bind_kept(index++, std::get<std::string>(v));  // pending_ outlives stmt
      }
    }
  }
  stmt.exec_deferred();  // nobody reads the row count
}

}  // namespace ductwork::sql
