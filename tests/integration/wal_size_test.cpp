// SQLite only: a host that stops cleanly leaves a small -wal (issue 41
// item 14: 315 MB were left after a drain of 30,000 steps, the size of the
// log at its longest).
#include <sys/stat.h>

#include <string>

#include "harness.h"

namespace ductwork::it {
namespace {

long long file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
}

void expect_small_wal_after_drain(const ConfigOptions& options) {
  Workspace ws(options);
  ws.define("inc.yml", chain_definition("IncTwice", {"Inc", "Inc"}));
  std::string lines;
  for (int i = 0; i < 2500; ++i) lines += "[" + std::to_string(i) + "]\n";
  ws.write("args.txt", lines);
  ProcessResult r = ws.run({"trigger", "IncTwice", "--from", ws.file("args.txt")}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  const std::string wal = ws.db_path() + "-wal";
  // The workload fills the log: what a drain must give back.
  ASSERT_GT(file_size(wal), 1 << 20) << "the trigger alone should leave a large -wal";
  ws.drain(120);
  // Read before anything else opens the database (the sqlite3 shell, as
  // the last connection to close, would checkpoint and delete it).
  const long long left = file_size(wal);
  EXPECT_LE(left, 64 * 1024) << "the -wal is " << left << " bytes after a clean drain of 5,000 steps";
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines WHERE status = 'completed'"), "2500\n");
}

TEST(SqliteWalTest, ACleanDrainLeavesASmallWal) { expect_small_wal_after_drain(ConfigOptions{}); }

TEST(SqliteWalTest, ACleanDrainInThreadsLeavesASmallWal) {
  ConfigOptions options;
  options.extra = "forking: none\n";
  expect_small_wal_after_drain(options);
}

}  // namespace
}  // namespace ductwork::it
