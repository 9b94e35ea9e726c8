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

BatchInsert::Cell::Cell(const Value& value) {
  if (const std::string* text = std::get_if<std::string>(&value)) {
    text_ = *text;
  } else if (const int64_t* number = std::get_if<int64_t>(&value)) {
    kind_ = Kind::kNumber;
    number_ = *number;
  } else {
    kind_ = Kind::kNull;
  }
}

BatchInsert::Value BatchInsert::Cell::owned() const {
  switch (kind_) {
    case Kind::kNumber:
      return number_;
    case Kind::kNull:
      return std::monostate{};
    case Kind::kText:
      break;
  }
  return std::string(text_);
}

void BatchInsert::add(const std::vector<Value>& values) {
  if (static_cast<int>(values.size()) != width_) throw std::logic_error("BatchInsert: row of the wrong width");
  for (const Value& value : values) append(Cell(value));
  if (pending_.size() >= kRowsPerStatement * static_cast<size_t>(width_)) flush();
}

void BatchInsert::add(const Cell* values, size_t count) {
  if (static_cast<int>(count) != width_) throw std::logic_error("BatchInsert: row of the wrong width");
  for (size_t i = 0; i < count; ++i) append(values[i]);
  if (pending_.size() >= kRowsPerStatement * static_cast<size_t>(width_)) flush();
}

void BatchInsert::append(const Cell& cell) {
  pending_.push_back(Slot{cell.number_, text_.size(), cell.text_.size(), cell.kind_});
  if (cell.kind_ == Cell::Kind::kText) text_.append(cell.text_);
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
  text_.clear();  // keeps its capacity for the next rows
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
      const Slot& slot = pending_[r * static_cast<size_t>(width_) + static_cast<size_t>(c)];
      switch (slot.kind) {
        case Cell::Kind::kNumber:
          stmt.bind(index++, slot.number);
          break;
        case Cell::Kind::kNull:
          stmt.bind_null(index++);
          break;
        case Cell::Kind::kText:  // text_ is not touched until the statement ran
          stmt.bind_kept(index++, std::string_view(text_).substr(slot.offset, slot.size));
          break;
      }
    }
  }
  stmt.exec_deferred();  // nobody reads the row count
}

}  // namespace ductwork::sql
