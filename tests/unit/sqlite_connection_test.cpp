// The SQLite connection's statement cache and batch inserts: misuse that
// used to lose data silently is now loud. A nested use of one SQL text
// reset the outer statement mid-iteration; a BatchInsert dropped rows that
// were never flushed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "store/sql/batch_insert.h"
#include "store/sqlite/sqlite_connection.h"
#include "temp_dir.h"

namespace ductwork::sqlite {
namespace {

using sql::BatchInsert;
using sql::OwnedRow;
using sql::Statement;

class SqliteConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = std::make_unique<Connection>(dir_.file("c.sqlite3"));
    conn_->exec_script("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  }
  int64_t rows() {
    auto s = conn_->prepare("SELECT COUNT(*) FROM t");
    s.step();
    return s.int64(0);
  }
  testsupport::TempDir dir_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(SqliteConnectionTest, ANestedUseOfTheSameSqlIsRefused) {
  conn_->exec_script("INSERT INTO t (v) VALUES ('a'), ('b')");
  const std::string sql = "SELECT v FROM t ORDER BY id";
  {
    auto outer = conn_->prepare(sql);
    ASSERT_TRUE(outer.step());
    EXPECT_THROW(conn_->prepare(sql), std::logic_error) << "would reset the outer statement";
    ASSERT_TRUE(outer.step()) << "the outer statement was not disturbed";
    EXPECT_EQ(outer.text(0), "b");
  }
  auto again = conn_->prepare(sql);  // free once the handle is gone
  ASSERT_TRUE(again.step());
  EXPECT_EQ(again.text(0), "a");
  // A different SQL text may be used while another is borrowed.
  EXPECT_EQ(rows(), 2);
}

TEST_F(SqliteConnectionTest, AMovedStatementStaysBorrowedUntilItsLastHandleEnds) {
  const std::string sql = "SELECT COUNT(*) FROM t";
  {
    auto first = conn_->prepare(sql);
    Statement moved = std::move(first);
    EXPECT_THROW(conn_->prepare(sql), std::logic_error);
  }
  EXPECT_NO_THROW(conn_->prepare(sql));
}

TEST_F(SqliteConnectionTest, BatchInsertWritesEveryFlushedRow) {
  BatchInsert batch(*conn_, "INSERT INTO t (v) VALUES ", "(?)", 1);
  for (int i = 0; i < 2500; ++i) batch.add({std::string("v") + std::to_string(i)});
  batch.flush();
  EXPECT_EQ(rows(), 2500);
}

// add() borrows its values only while it runs: text from temporaries that
// are gone by the flush, numbers, NULLs and owned rows all arrive as
// queued, across the automatic flush of every 1,000 rows.
TEST_F(SqliteConnectionTest, BatchInsertKeepsItsOwnCopyOfEveryQueuedValue) {
  conn_->exec_script("CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT, n INTEGER, w TEXT)");
  BatchInsert batch(*conn_, "INSERT INTO u (id, v, n, w) VALUES ", "(?, ?, ?, ?)", 4);
  for (int64_t i = 0; i < 1500; ++i) {
    std::string text = "text-" + std::to_string(i) + std::string(40, 'x');  // longer than any short-string buffer
    if (i % 2 == 0) {
      batch.add({i, text, i * 3, std::monostate{}});
    } else {
      batch.add(std::vector<BatchInsert::Value>{i, text, i * 3, std::string("odd")});
    }
    text.assign(text.size(), '?');  // overwritten before the row is written
  }
  batch.flush();
  auto s = conn_->prepare("SELECT COUNT(*), SUM(v = 'text-' || id || printf('%.40c', 'x')), SUM(n = id * 3), "
                          "SUM(w IS NULL), SUM(w = 'odd') FROM u");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.int64(0), 1500);
  EXPECT_EQ(s.int64(1), 1500) << "every text as it was when queued";
  EXPECT_EQ(s.int64(2), 1500);
  EXPECT_EQ(s.int64(3), 750);
  EXPECT_EQ(s.int64(4), 750);
}

// A kept row (StepRows) holds its values in one buffer: a value set later
// (a claim's process and instant) replaces the old one, also when the new
// text is borrowed from the row itself, and the row is written as it
// stands at the time it is added.
TEST_F(SqliteConnectionTest, AnOwnedRowIsWrittenWithTheValuesSetLast) {
  conn_->exec_script("CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT, n INTEGER, w TEXT)");
  std::string source = "first-" + std::string(40, 'a');
  OwnedRow row(std::array<BatchInsert::Cell, 4>{int64_t{7}, source, std::monostate{}, "short"});
  source.assign(source.size(), '?');  // the row keeps its own copy
  EXPECT_EQ(row.size(), 4u);
  EXPECT_EQ(row.text(1), "first-" + std::string(40, 'a'));
  ASSERT_NE(row.number(0), nullptr);
  EXPECT_EQ(*row.number(0), 7);
  EXPECT_EQ(row.number(1), nullptr);
  EXPECT_TRUE(row.is_null(2));
  EXPECT_THROW(row.text(0), std::logic_error);
  EXPECT_THROW(row.text(4), std::logic_error);
  for (int i = 0; i < 20; ++i) row.set(3, std::string(30 + i, 'z'));  // past the room kept for edits
  row.set(2, row.text(1));                                              // borrowed from the row itself
  EXPECT_FALSE(row.is_null(2));
  BatchInsert batch(*conn_, "INSERT INTO u (id, v, n, w) VALUES ", "(?, ?, ?, ?)", 4);
  batch.add(row);
  batch.flush();
  auto s = conn_->prepare("SELECT id, v, n, w FROM u");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.int64(0), 7);
  EXPECT_EQ(s.text(1), "first-" + std::string(40, 'a'));
  EXPECT_EQ(s.text(2), "first-" + std::string(40, 'a'));
  EXPECT_EQ(s.text(3), std::string(49, 'z'));
  EXPECT_FALSE(s.step());
}

// A batch's statements are INSERT OR FAIL on SQLite (Dialect::
// batch_insert_into: no statement journal). A row that breaks a constraint
// leaves the rows before it in its statement, and the error still reaches
// the caller; rolling back the savepoint (or the transaction) around it
// undoes them all, which is what every caller does.
TEST_F(SqliteConnectionTest, AFailingBatchLeavesNothingOnceItsSavepointIsRolledBack) {
  auto insert_with_a_duplicate = [&] {
    BatchInsert batch(*conn_, "INSERT INTO t (id, v) VALUES ", "(?, ?)", 2);
    batch.add({int64_t{1}, "one"});
    batch.add({int64_t{2}, "two"});
    batch.add({int64_t{1}, "one again"});
    batch.flush();
  };
  conn_->exec_script("BEGIN; SAVEPOINT s;");
  EXPECT_THROW(insert_with_a_duplicate(), StoreError);
  EXPECT_EQ(rows(), 2) << "OR FAIL: the rows before the failing one stay until the rollback";
  conn_->exec_script("ROLLBACK TO s; RELEASE s;");
  EXPECT_EQ(rows(), 0);
  conn_->exec_script("COMMIT;");
  EXPECT_EQ(rows(), 0);
}

TEST_F(SqliteConnectionTest, ABatchInsertDestroyedWithUnflushedRowsAborts) {
  EXPECT_DEATH(
      {
        BatchInsert batch(*conn_, "INSERT INTO t (v) VALUES ", "(?)", 1);
        batch.add({std::string("lost")});
      },
      "BatchInsert destroyed with 1 unflushed value\\(s\\) for \"INSERT INTO t \\(v\\) VALUES \": call flush\\(\\)");
}

TEST_F(SqliteConnectionTest, UnflushedRowsAreDroppedQuietlyWhileAnExceptionUnwinds) {
  // The transaction rolls back anyway; aborting here would hide the error.
  EXPECT_THROW(
      {
        BatchInsert batch(*conn_, "INSERT INTO t (v) VALUES ", "(?)", 1);
        batch.add({std::string("discarded")});
        throw std::runtime_error("the write failed");
      },
      std::runtime_error);
  EXPECT_EQ(rows(), 0);
}

}  // namespace
}  // namespace ductwork::sqlite

namespace ductwork::sqlite {
namespace {

// A statement that meets a file damaged under the process says what
// happened to the file, as the periodic storage check does, whichever of
// the two notices first.
TEST(SqliteDamagedFileTest, AStatementThatMeetsAnOverwrittenFileNamesWhatHappened) {
  testsupport::TempDir dir;
  const std::string path = dir.file("d.sqlite3");
  {
    Connection writer(path);
    writer.exec_script("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    for (int i = 0; i < 200; ++i) {
      writer.prepare("INSERT INTO t (v) VALUES (?)").bind(1, std::string(500, 'x')).exec();
    }
    writer.exec_script("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  Connection reader(path);  // has read the schema, not the table's pages
  const auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f << std::string(size, '\x5a');
  }
  try {
    auto count = reader.prepare("SELECT COUNT(*), MAX(length(v)) FROM t");
    count.step();
    FAIL() << "a read of garbage pages succeeded";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.fault(), StoreFault::kUnusable);
    EXPECT_NE(std::string(e.what()).find("is no longer a SQLite database"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("SELECT COUNT(*)"), std::string::npos) << "and which statement met it";
  }
}

}  // namespace
}  // namespace ductwork::sqlite
