#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
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
  // An owned value, for rows built before they are queued (StepRows).
  // std::monostate binds NULL.
  using Value = std::variant<std::string, int64_t, std::monostate>;

  // One value of a row being queued, borrowed from the caller until add()
  // returns: add() copies text into the batch's own buffer, so queuing a row
  // allocates nothing per value (a 100,000-wide fan-out queues millions).
  class Cell {
   public:
    Cell() : kind_(Kind::kNull) {}                  // NULL
    Cell(const std::string& text) : text_(text) {}  // NOLINT(google-explicit-constructor): a row is a braced list
    Cell(std::string_view text) : text_(text) {}     // NOLINT(google-explicit-constructor)
    Cell(const char* text) : text_(text) {}          // NOLINT(google-explicit-constructor)
    Cell(int64_t number) : kind_(Kind::kNumber), number_(number) {}  // NOLINT(google-explicit-constructor)
    Cell(std::monostate) : kind_(Kind::kNull) {}                     // NOLINT(google-explicit-constructor)
    Cell(const Value& value);                                        // NOLINT(google-explicit-constructor)

    // Binds the value to `stmt`'s placeholder `index` (text copied).
    void bind_to(Statement& stmt, int index) const;

   private:
    friend class BatchInsert;
    friend class OwnedRow;
    enum class Kind : uint8_t { kText, kNumber, kNull };
    Kind kind_ = Kind::kText;
    std::string_view text_;
    int64_t number_ = 0;
  };

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
  void add(std::initializer_list<Cell> values) { add(values.begin(), values.size()); }
  void add(const Cell* values, size_t count);
  void add(const std::vector<Value>& values);
  void add(const class OwnedRow& row);
  // Writes every queued row.
  void flush();
  // Rows queued and not yet written.
  size_t queued_rows() const { return pending_.size() / static_cast<size_t>(width_); }

 private:
  // A queued value: text at [offset, offset + size) of text_, a number, or
  // NULL.
  struct Slot {
    int64_t number;
    size_t offset;
    size_t size;
    Cell::Kind kind;
  };

  void append(const Cell& cell);
  void write(size_t first_row, size_t rows);

  Connection& conn_;
  std::string head_;
  std::string row_;
  int width_;
  std::vector<Slot> pending_;
  std::string text_;  // every queued text value, back to back
  int exceptions_at_start_;
};

// A row kept past the values it was made from (a new step's rows held until
// its transaction writes them, StepRows): every text value back to back in
// one buffer, so a kept row costs one allocation, not one per value. A
// value can be replaced (set); the replacement goes to the buffer's end,
// which keeps room for a few.
class OwnedRow {
 public:
  static constexpr size_t kMaxWidth = 16;

  OwnedRow() = default;
  template <size_t N>
  explicit OwnedRow(const std::array<BatchInsert::Cell, N>& cells) : OwnedRow(cells.data(), N) {
    static_assert(N <= kMaxWidth, "a row wider than OwnedRow::kMaxWidth");
  }
  OwnedRow(const BatchInsert::Cell* cells, size_t count);

  size_t size() const { return width_; }
  // The value at `column`, borrowed from this row until it changes.
  BatchInsert::Cell operator[](size_t column) const;
  // The text at `column`; std::logic_error when it holds no text.
  std::string_view text(size_t column) const;
  // The number at `column`, or nullptr when it holds none.
  const int64_t* number(size_t column) const;
  bool is_null(size_t column) const;
  void set(size_t column, std::string_view text);

 private:
  struct Slot {
    int64_t number = 0;
    uint32_t offset = 0;
    uint32_t size = 0;
    BatchInsert::Cell::Kind kind = BatchInsert::Cell::Kind::kNull;
  };
  const Slot& slot(size_t column) const;

  std::array<Slot, kMaxWidth> slots_{};
  size_t width_ = 0;
  std::string text_;
};

}  // namespace ductwork::sql
