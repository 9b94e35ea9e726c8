// The -wal write buffer (store/sqlite/wal_write_buffer.h): a commit reaches
// the file in a few writes instead of two per page, and nothing another
// connection or a later process reads is ever missing or overwritten: a
// commit is in the file when it returns, a rolled-back transaction's frames
// never land on frames another writer committed since, a transaction larger
// than the buffer commits whole, and a process that dies mid-transaction
// leaves the last commit intact.
#include "store/sqlite/wal_write_buffer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "temp_dir.h"

namespace ductwork::sqlite {
namespace {

// One raw connection; `vfs` null is the process default (the buffer).
class Db {
 public:
  Db(const std::string& path, const char* vfs = nullptr) {
    int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
    if (rc != SQLITE_OK) ADD_FAILURE() << "open " << path << ": " << sqlite3_errstr(rc);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~Db() { sqlite3_close_v2(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  int exec(const std::string& sql) { return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }
  void ok(const std::string& sql) { ASSERT_EQ(exec(sql), SQLITE_OK) << sql << ": " << sqlite3_errmsg(db_); }
  std::string text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(stmt, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    } else {
      out = std::string("error: ") + sqlite3_errmsg(db_);
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// `rows` rows of ~1 KB each: about one 4 KiB page per four rows.
std::string insert_rows(const std::string& table, int from, int rows) {
  return "WITH RECURSIVE n(i) AS (SELECT " + std::to_string(from) + " UNION ALL SELECT i + 1 FROM n WHERE i < " +
         std::to_string(from + rows - 1) + ") INSERT INTO " + table + " SELECT i, randomblob(1000) FROM n";
}

class WalWriteBufferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    install_wal_write_buffer();
    ASSERT_STREQ(sqlite3_vfs_find(nullptr)->zName, "ductwork-wal-buffer");
    path_ = dir_.file("w.sqlite3");
    Db setup(path_);
    setup.ok("PRAGMA journal_mode=WAL");
    setup.ok("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)");
  }
  testsupport::TempDir dir_;
  std::string path_;
};

TEST_F(WalWriteBufferTest, ACommitIsInTheFileInAFewWritesWhenItReturns) {
  Db writer(path_);
  writer.ok("PRAGMA wal_autocheckpoint=0");
  const WalWriteCounts before = wal_write_counts();
  writer.ok(insert_rows("t", 1, 120));  // ~30 pages: 60 writes asked
  const WalWriteCounts after = wal_write_counts();
  EXPECT_GE(after.asked - before.asked, 60u);
  EXPECT_LE(after.written - before.written, (after.asked - before.asked) / 10)
      << "asked " << after.asked - before.asked;
  // A connection on the platform's own VFS reads the file, not our buffer.
  Db reader(path_, "unix");
  EXPECT_EQ(reader.text("SELECT COUNT(*) FROM t"), "120");
}

TEST_F(WalWriteBufferTest, ARolledBackTransactionNeverOverwritesALaterCommit) {
  Db a(path_);
  Db b(path_);
  a.ok("PRAGMA cache_size=5");  // the pager spills frames to the -wal mid-transaction
  const WalWriteCounts before = wal_write_counts();
  a.ok("BEGIN IMMEDIATE");
  a.ok(insert_rows("t", 1, 400));
  ASSERT_GT(wal_write_counts().asked, before.asked) << "the transaction never spilled to the -wal";
  a.ok("ROLLBACK");
  // B commits where A's rolled-back frames were; then A touches its -wal
  // again (a read), which must not write anything stale over B's commit.
  b.ok(insert_rows("t", 1000, 40));
  EXPECT_EQ(a.text("SELECT COUNT(*) FROM t"), "40");
  a.ok(insert_rows("t", 2000, 8));
  Db check(path_, "unix");
  EXPECT_EQ(check.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(check.text("SELECT COUNT(*) FROM t"), "48");
  EXPECT_EQ(check.text("SELECT COUNT(*) FROM t WHERE id >= 1000 AND id < 1040 AND length(v) = 1000"), "40");
}

TEST_F(WalWriteBufferTest, ATransactionLargerThanTheBufferCommitsWhole) {
  Db writer(path_);
  writer.ok(insert_rows("t", 1, 24000));  // ~24 MB, six buffers' worth
  Db check(path_, "unix");
  EXPECT_EQ(check.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(check.text("SELECT COUNT(*) FROM t"), "24000");
}

// In a forked child: `body`, then _exit without closing anything.
void in_child_that_dies(const std::function<void()>& body) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
}

TEST_F(WalWriteBufferTest, AProcessThatDiesKeepsItsCommitsAndLosesItsOpenTransaction) {
  in_child_that_dies([&] {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
    sqlite3_exec(db, insert_rows("t", 1, 30).c_str(), nullptr, nullptr, nullptr);  // committed
    sqlite3_exec(db, "PRAGMA cache_size=5; BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    sqlite3_exec(db, insert_rows("t", 100, 300).c_str(), nullptr, nullptr, nullptr);  // never committed
  });
  Db check(path_, "unix");
  EXPECT_EQ(check.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(check.text("SELECT COUNT(*) FROM t"), "30");
}

}  // namespace
}  // namespace ductwork::sqlite
