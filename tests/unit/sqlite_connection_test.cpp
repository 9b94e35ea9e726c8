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
