// The file system under the database: full, or read-only.
//
// A full disk under a running host. Before: runs whose results could not be
// written stayed in_progress until the orphan sweep (3 x reaper_timeout, 15
// minutes by default) and `start --drain` did not finish. A worker that
// could not close its own claim keeps it and closes it (as a crash) as soon
// as the database takes writes again; the step is re-run and each success
// is committed once.
//
// A read-only file system: commands that write fail at once naming the
// database and why (exit 1), nothing is half-written, reads still work.
//
// Each needs its own file system: a small tmpfs mounted over the workspace
// (skipped where mounting is not allowed).
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "harness.h"

namespace ductwork::it {
namespace {

class TmpfsMount {
 public:
  TmpfsMount(const std::string& at, const char* options) : at_(at) {
    mounted_ = ::mount("tmpfs", at.c_str(), "tmpfs", 0, options) == 0;
    if (!mounted_) why_ = std::strerror(errno);
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  bool remount_read_only() {
    return ::mount("tmpfs", at_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) == 0;
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string at_;
  bool mounted_ = false;
  std::string why_;
};

// Writes `path` until the file system is full, to the last byte (in 64 KB,
// then 4 KB, then 1-byte writes: a few free pages would let small commits
// through); returns the bytes written.
size_t fill(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  std::string chunk(64 * 1024, 'x');
  size_t written = 0;
  for (size_t size : {chunk.size(), size_t{4096}, size_t{1}}) {
    for (;;) {
      ssize_t n = ::write(fd, chunk.data(), size);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
  }
  ::fsync(fd);
  ::close(fd);
  return written;
}

TEST(FullDiskTest, ClaimsAreRecoveredAsSoonAsTheDatabaseTakesWritesAgain) {
  Workspace ws;
  TmpfsMount disk(ws.dir(), "size=2m,mode=0700");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.why();
  // The mount hid what the workspace had written: write it again.
  ConfigOptions options;
  options.job_worker_extra = "max_crash: 20";
  options.extra = "supervisor: {reaper_timeout: 30, polling_timeout: 0.1}\n";
  ws.write_config(options);
  ws.define("gated.yml", chain_definition("Gated", {"Gate", "Echo"}));
  // The steps wait at a gate (outside the small file system) that the test
  // opens only once the disk is full, so every result meets a full disk.
  testsupport::TempDir gate_dir;
  const std::string gate = gate_dir.file("gate");
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(ws.trigger("Gated", {json{{"file", gate}, {"value", 700}}.dump()}));
  for (const auto& id : ids) ASSERT_FALSE(id.empty());

  std::string sqlite3 = find_on_path("sqlite3");
  if (sqlite3.empty()) GTEST_SKIP() << "sqlite3 not installed";

  testsupport::Subprocess host(ws.command({"start", "--drain"}), ws.process_options(120));
  ASSERT_TRUE(eventually(30, [&] { return ws.status(ids[0])["runs"][0]["steps"][0]["status"] == "in_progress"; }))
      << host.stdout_so_far();
  // The WAL is truncated to nothing and then held by a reader's snapshot,
  // so it cannot restart from its beginning either (the host checkpoints in
  // the background): every commit must grow the file and meets the full
  // disk; none can slip into WAL space allocated before.
  ProcessResult truncated =
      testsupport::run_process({sqlite3, ws.db_path(), ".timeout 10000", "PRAGMA wal_checkpoint(TRUNCATE);"});
  ASSERT_EQ(truncated.out, "0|0|0\n") << "the WAL was truncated: " << truncated.describe();
  const std::string reading = gate_dir.file("reading");
  testsupport::Subprocess reader({sqlite3, ws.db_path(), "BEGIN; SELECT COUNT(*) FROM pipelines;",
                                  ".shell touch " + reading, ".shell sleep 60", "COMMIT;"},
                                 ws.process_options(90));
  ASSERT_TRUE(eventually(10, [&] { return testsupport::file_exists(reading); })) << reader.stderr_so_far();
  size_t filler_bytes = fill(ws.file("filler"));
  ASSERT_GT(filler_bytes, 0u);
  gate_dir.write("gate", "");
  // The running steps end while nothing can be written.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(host.running()) << "a full disk must not stop the host: " << host.stdout_so_far();
  std::filesystem::remove(ws.file("filler"));
  auto freed = std::chrono::steady_clock::now();
  reader.signal(SIGKILL);  // its snapshot is released with it
  reader.wait(10);

  ProcessResult r = host.wait(60);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - freed).count();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(seconds, 15) << "recovered at once, not by the orphan sweep (90 s here)";
  EXPECT_GT(count_of(r.out, "Abandoned claim closed as a crash after the database took writes again"), 0u)
      << "a worker met the full disk with a result in hand and closed its claim once it could: " << r.out;
  int crashed_on_full_disk = 0;
  for (const auto& id : ids) {
    json doc = ws.status(id);
    EXPECT_EQ(doc["status"], "completed") << doc.dump();
    for (const auto& step : doc["runs"][0]["steps"]) {
      for (const auto& e : step["executions"]) {
        crashed_on_full_disk += e["result_type"] == "process_crashed" &&
                                e["error_message"].get<std::string>().find("disk is full") != std::string::npos;
      }
    }
    for (const auto& step : doc["runs"][0]["steps"]) {
      int successes = 0;
      for (const auto& e : step["executions"]) successes += e["result_type"] == "success";
      EXPECT_EQ(successes, 1) << "each step's success committed once: " << step.dump();
    }
    EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], 700);
  }
  EXPECT_GT(crashed_on_full_disk, 0) << "the results that could not be written were recorded as crashes: "
                                     << ws.status(ids[0]).dump(2);
}

TEST(ReadOnlyTest, WritingCommandsFailAtOnceAndReadsStillWork) {
  Workspace ws;
  TmpfsMount disk(ws.dir(), "size=8m,mode=0700");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.why();
  ws.write_config(ConfigOptions{DUCTWORK_PLUGIN_DIR, "", "supervisor: {polling_timeout: 0.1, shutdown_timeout: 2}\n"});
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  std::string id = ws.trigger("IncOne", {"1"});
  ASSERT_FALSE(id.empty());
  // A command run once so the compiled-definition cache exists before the
  // file system turns read-only (a cache it cannot write is no error).
  ASSERT_TRUE(disk.remount_read_only()) << std::strerror(errno);
  DbSnapshot before = ws.snapshot();

  for (std::vector<std::string> args : {std::vector<std::string>{"trigger", "IncOne", "2"}, {"start", "--drain"}}) {
    SCOPED_TRACE(args[0]);
    auto start = std::chrono::steady_clock::now();
    ProcessResult r = ws.run(args, 30);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_LT(seconds, 5) << "no waiting on a busy timeout";
    std::string all = r.out + r.err;
    EXPECT_NE(all.find("database " + ws.db_path()), std::string::npos) << all;
    EXPECT_NE(all.find("attempt to write a readonly database"), std::string::npos) << all;
    EXPECT_NE(all.find("its file system is read-only"), std::string::npos) << all;
  }
  EXPECT_EQ(ws.snapshot(), before) << "nothing written";
  EXPECT_EQ(ws.status(id)["status"], "in_progress") << "status still reads";
  EXPECT_EQ(ws.list().size(), 1u) << "list still reads";
}

}  // namespace
}  // namespace ductwork::it
