// Where the database lives: a path in a folder that does not exist yet is
// created on first use (owner-only), and a path that cannot be a database
// fails at once, naming it. Before the fix each command waited out Poco's
// 60 s login timeout and then said only "unable to open database file".
#include <signal.h>
#include <sys/stat.h>

#include <chrono>

#include "harness.h"

namespace ductwork::it {
namespace {

// The workspace's config with the database at `path`.
void use_database_path(Workspace& ws, const std::string& path) {
  ws.write_config_text("database:\n  path: \"" + path + "\"\nplugins:\n  directory: \"" DUCTWORK_PLUGIN_DIR
                       "\"\ndefinitions:\n  directory: \"" + ws.definitions_dir() +
                       "\"\npipelines: \"*\"\njob_worker: {count: 1, polling_timeout: 0.05}\n"
                       "pipeline_advancer: {count: 1, polling_timeout: 0.05}\n");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every folder created, not only the last (issue 41 item 14: var/ was 0755).
TEST(DatabasePathTest, AMissingFolderIsCreatedOwnerOnly) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("Inc2", {"Inc", "Inc"}));
  const std::string folder = ws.file("var/state");
  use_database_path(ws, folder + "/ductwork.sqlite3");

  auto start = std::chrono::steady_clock::now();
  ProcessResult r = ws.run({"migrate"}, 20);
  EXPECT_LT(seconds_since(start), 5.0) << "migrate waited on a timeout";
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const std::string& made : {ws.file("var"), folder}) {
    struct stat st {};
    ASSERT_EQ(::stat(made.c_str(), &st), 0) << made << " was not created";
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u) << made << ": " << std::oct << (st.st_mode & 0777);
  }

  std::string id = ws.trigger("Inc2", {"1"});
  ASSERT_FALSE(id.empty());
  ws.drain(30);
  // status reads the same file: the run finished there.
  ProcessResult status = ws.run({"status", id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.describe();
  EXPECT_EQ(parse_json(status.out, "status")["status"], "completed") << status.out;
}

// A blank name and SQLite's ":memory:" created files of those names in the
// current folder (a durable engine cannot use an in-memory database: every
// process would have its own): refused, naming what was given.
TEST(DatabasePathTest, ABlankOrInMemoryDatabaseIsRefused) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("Inc1", {"Inc"}));
  const std::vector<std::string> commands[] = {{"trigger", "Inc1", "1"}, {"migrate"}, {"start", "--drain"}};
  for (const char* url : {" ", "\t", ":memory:", "sqlite::memory:", "file::memory:?cache=shared"}) {
    SCOPED_TRACE(std::string("DUCTWORK_DATABASE_URL='") + url + "'");
    for (const auto& command : commands) {
      ProcessResult r = ws.run_with_env(command, {{"DUCTWORK_DATABASE_URL", url}}, 20);
      EXPECT_EQ(r.exit_code, 2) << command[0] << ": " << r.describe() << r.err;
      EXPECT_NE(r.err.find("DUCTWORK_DATABASE_URL (database): expected the path of a SQLite database file"),
                std::string::npos)
          << r.err;
    }
  }
  for (const char* path : {" ", ":memory:"}) {
    SCOPED_TRACE(std::string("database.path '") + path + "'");
    use_database_path(ws, path);
    ProcessResult r = ws.run({"trigger", "Inc1", "1"}, 20);
    EXPECT_EQ(r.exit_code, 2) << r.describe() << r.err;
    EXPECT_NE(r.err.find("database.path: expected the path of a SQLite database file"), std::string::npos) << r.err;
  }
  for (const char* name : {" ", "\t", ":memory:", "file::memory:?cache=shared"}) {
    EXPECT_FALSE(testsupport::file_exists(ws.file(name))) << "a file named '" << name << "' was created";
  }
}

TEST(DatabasePathTest, TriggerIntoAMissingFolderWorksWithoutMigrate) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("Inc1", {"Inc"}));
  use_database_path(ws, ws.file("deep/er/still/ductwork.sqlite3"));
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(ws.trigger("Inc1", {"1"}).empty());
  EXPECT_LT(seconds_since(start), 5.0);
}

// A regular file where the database's folder should be: every command that
// opens the database fails within a second or two, exit 2, naming the path.
TEST(DatabasePathTest, AFolderThatIsAFileFailsAtOnceNamingThePath) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("Inc1", {"Inc"}));
  const std::string blocker = ws.write("blocker", "not a folder\n");
  const std::string path = blocker + "/ductwork.sqlite3";
  use_database_path(ws, path);
  for (std::vector<std::string> args : {std::vector<std::string>{"migrate"}, {"trigger", "Inc1", "1"}, {"start", "--drain"}}) {
    SCOPED_TRACE(args[0]);
    auto start = std::chrono::steady_clock::now();
    ProcessResult r = ws.run(args, 20);
    EXPECT_LT(seconds_since(start), 5.0) << "waited on a timeout";
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a folder"), std::string::npos) << r.err;
  }
}

// A folder where the database file should be.
TEST(DatabasePathTest, ADatabasePathThatIsAFolderFailsAtOnce) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("Inc1", {"Inc"}));
  const std::string path = ws.file("var");
  ws.write("var/keep", "");
  use_database_path(ws, path);
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = ws.run({"trigger", "Inc1", "1"}, 20);
  EXPECT_LT(seconds_since(start), 5.0) << "waited on a timeout";
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

// Defect 21: the database, -wal and -shm files were created 0644 even under
// umask 000. They hold every argument and output: owner-only, whatever the
// umask of the process that created them.
TEST(DatabasePathTest, DataFilesAreOwnerOnlyUnderAnyUmask) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("Inc1", {"Inc"}));
  // The shell sets umask 000 for the command it runs; the host must not
  // inherit a world-readable default from it.
  std::string command = "umask 000 && exec '" DUCTWORK_BINARY "' trigger Inc1 1 -c '" + ws.config_path() + "'";
  testsupport::ProcessOptions options = ws.process_options(20);
  ProcessResult r = testsupport::run_process({"/bin/sh", "-c", command}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (std::string suffix : {"", "-wal", "-shm"}) {
    std::string path = ws.db_path() + suffix;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      EXPECT_NE(suffix, "") << "no database file";
      continue;  // SQLite removes -wal/-shm when the last connection closes cleanly
    }
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path << " is " << std::oct << (st.st_mode & 0777);
  }
  // While a host runs, -wal and -shm exist: check them then too.
  testsupport::Subprocess host(
      {"/bin/sh", "-c", "umask 000 && exec '" DUCTWORK_BINARY "' start -c '" + ws.config_path() + "'"}, options);
  ASSERT_TRUE(eventually(10, [&] {
    return host.stdout_so_far().find("Supervisor started") != std::string::npos &&
           testsupport::file_exists(ws.db_path() + "-shm");
  })) << host.stdout_so_far();
  for (std::string suffix : {"-wal", "-shm"}) {
    struct stat st {};
    std::string path = ws.db_path() + suffix;
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path << " is " << std::oct << (st.st_mode & 0777);
  }
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(30).exit_code, 0);
}

}  // namespace
}  // namespace ductwork::it
