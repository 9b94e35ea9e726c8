// A SQLite database corrupted in the middle, not in its header (issue 41,
// item 4). Before: with random bytes written into leaf pages of `jobs`,
// `ductwork start` restarted its children 89 times in 70 s, each dying on
// "Database is not usable", completed nothing, never exited, and `health`
// said healthy throughout. Now the supervisor counts such exits, stops with
// exit 1 naming the database, and `health` fails meanwhile. SQLite only:
// the bytes of a server's files are not the tests' to write.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <sstream>

#include "harness.h"

namespace ductwork::it {
namespace {

// Writes 400 random bytes into each of the first `pages` leaf pages of
// `table`, past the page header, as a bad disk or a stray write would.
void corrupt_leaf_pages(const Workspace& ws, const std::string& table, int pages) {
  const long page_size = std::stol(ws.sql("PRAGMA page_size"));
  std::istringstream leaves(ws.sql("SELECT pageno FROM dbstat WHERE name = '" + table +
                                   "' AND pagetype = 'leaf' ORDER BY pageno LIMIT " + std::to_string(pages)));
  std::mt19937 rng(41);
  int fd = ::open(ws.db_path().c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  int written = 0;
  for (std::string line; std::getline(leaves, line);) {
    char garbage[400];
    for (char& c : garbage) c = static_cast<char>(rng() & 0xff);
    const off_t at = (std::stol(line) - 1) * page_size + 100;
    ASSERT_EQ(::pwrite(fd, garbage, sizeof garbage, at), static_cast<ssize_t>(sizeof garbage));
    ++written;
  }
  ::close(fd);
  ASSERT_EQ(written, pages) << "the table has fewer leaf pages than the test corrupts";
}

TEST(CorruptDatabaseTest, StartStopsWithExit1NamingTheDatabaseAndHealthFailsMeanwhile) {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  std::string lines;
  for (int i = 0; i < 3000; ++i) lines += "[" + std::to_string(i) + "]\n";
  const std::string from = ws.write("args.jsonl", lines);
  ProcessResult triggered = ws.run({"trigger", "EchoOne", "--from", from}, 60);
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe() << triggered.err;
  ASSERT_EQ(ws.sql("PRAGMA wal_checkpoint(TRUNCATE)").substr(0, 2), "0|");
  corrupt_leaf_pages(ws, "jobs", 10);

  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(90));
  int health_calls = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (host.running() && std::chrono::steady_clock::now() < give_up) {
    // Once the supervisor has written down that a child exited on the
    // corrupt database, `health` must not say healthy.
    const bool seen = host.stdout_so_far().find("Host problem reported to health") != std::string::npos;
    ProcessResult health = ws.run({"health"});
    if (seen && host.running()) {
      ++health_calls;
      EXPECT_EQ(health.exit_code, 1) << health.out;
      // (Or, in the last instant, the supervisor has removed its row already.)
      EXPECT_TRUE(health.out.find("is not usable") != std::string::npos ||
                  health.out.find("no supervisor is running") != std::string::npos)
          << health.out;
    }
  }
  ProcessResult r = host.wait(5);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_LT(r.seconds, 30) << "the supervisor stops instead of restarting its children for ever";
  EXPECT_NE(r.out.find("Database is not usable; stopping the host"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(ws.db_path()), std::string::npos) << "the log names the database: " << r.out;
  EXPECT_LE(count_of(r.out, "\"Child started\""), 8u) << r.out;
  EXPECT_GT(health_calls, 0) << "health was never asked between the first such exit and the stop";
}

}  // namespace
}  // namespace ductwork::it
