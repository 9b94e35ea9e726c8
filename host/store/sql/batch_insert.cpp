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

void BatchInsert::Cell::bind_to(Statement& stmt, int index) const {
  switch (kind_) {
    case Kind::kNumber:
      stmt.bind(index, number_);
      break;
    case Kind::kNull:
      stmt.bind_null(index);
      break;
    case Kind::kText:
      stmt.bind(index, text_);
      break;
  }
}

void BatchInsert::add(const std::vector<Value>& values) {
  if (static_cast<int>(values.size()) != width_) throw std::logic_error("BatchInsert: row of the wrong width");
  for (const Value& value : values) append(Cell(value));
  if (pending_.size() >= kRowsPerStatement * static_cast<size_t>(width_)) flush();
}

void BatchInsert::add(const OwnedRow& row) {
  if (static_cast<int>(row.size()) != width_) throw std::logic_error("BatchInsert: row of the wrong width");
  for (size_t i = 0; i < row.size(); ++i) append(row[i]);
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
  std::string sql;
  sql.reserve(head_.size() + 16 + rows * (row_.size() + 1));  // 16: room for the dialect's longer verb
  append_batch_statement(sql, conn_.dialect(), head_);
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

namespace {
// Room kept at the end of a row's buffer for values set later (a claim's
// process id and instant).
constexpr size_t kRoomToSet = 80;
}  // namespace

OwnedRow::OwnedRow(const BatchInsert::Cell* cells, size_t count) : width_(count) {
  if (count > kMaxWidth) throw std::logic_error("OwnedRow: a row wider than kMaxWidth");
  size_t text = 0;
  for (size_t i = 0; i < count; ++i) text += cells[i].text_.size();
  text_.reserve(text + kRoomToSet);
  for (size_t i = 0; i < count; ++i) {
    const BatchInsert::Cell& cell = cells[i];
    slots_[i] = Slot{cell.number_, static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(cell.text_.size()),
                     cell.kind_};
    if (cell.kind_ == BatchInsert::Cell::Kind::kText) text_.append(cell.text_);
  }
}

const OwnedRow::Slot& OwnedRow::slot(size_t column) const {
  if (column >= width_) throw std::logic_error("OwnedRow: no column " + std::to_string(column));
  return slots_[column];
}

BatchInsert::Cell OwnedRow::operator[](size_t column) const {
  const Slot& s = slot(column);
  switch (s.kind) {
    case BatchInsert::Cell::Kind::kNumber:
      return BatchInsert::Cell(s.number);
    case BatchInsert::Cell::Kind::kNull:
      return BatchInsert::Cell();
    case BatchInsert::Cell::Kind::kText:
      break;
  }
  return BatchInsert::Cell(std::string_view(text_).substr(s.offset, s.size));
}

std::string_view OwnedRow::text(size_t column) const {
  const Slot& s = slot(column);
  if (s.kind != BatchInsert::Cell::Kind::kText) {
    throw std::logic_error("OwnedRow: column " + std::to_string(column) + " holds no text");
  }
  return std::string_view(text_).substr(s.offset, s.size);
}

const int64_t* OwnedRow::number(size_t column) const {
  const Slot& s = slot(column);
  return s.kind == BatchInsert::Cell::Kind::kNumber ? &s.number : nullptr;
}

bool OwnedRow::is_null(size_t column) const { return slot(column).kind == BatchInsert::Cell::Kind::kNull; }

void OwnedRow::set(size_t column, std::string_view text) {
  slot(column);
  if (!text.empty() && text.data() >= text_.data() && text.data() < text_.data() + text_.size()) {
    set(column, std::string(text));  // borrowed from this row: the append may move it
    return;
  }
  slots_[column] = Slot{0, static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(text.size()),
                        BatchInsert::Cell::Kind::kText};
  text_.append(text);
}

}  // namespace ductwork::sql
