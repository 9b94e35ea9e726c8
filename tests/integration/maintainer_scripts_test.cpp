// The package's maintainer scripts (packaging/debian/postinst, postrm) run
// as dpkg runs them, in a scratch root (issue 41 item 17): $DPKG_ROOT puts
// every path they touch under it, and the commands that act on the
// machine itself (getent, adduser, deluser, chown to the new user,
// systemctl) are stand-ins on PATH that record their arguments. What
// docs/packaging.md promises is checked: install creates the user and
// /var/lib/ductwork (mode 0750, the user's) and does not start the
// service; remove keeps the state; purge removes it and the user.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

class MaintainerScriptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root());
    // A stand-in: records "NAME ARGS" in the log; getent answers from the
    // state file adduser / deluser keep.
    auto stub = [&](const std::string& name, const std::string& body) {
      const std::string path =
          tmp_.write("bin/" + name, "#!/bin/sh\necho \"" + name + " $*\" >> \"" + log() + "\"\n" + body + "\n");
      fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    };
    const std::string user = tmp_.file("user-exists");
    stub("getent", "[ \"$1 $2\" = \"passwd ductwork\" ] && [ -e " + user +
                       " ] && { echo 'ductwork:x:999:999::/var/lib/ductwork:/usr/sbin/nologin'; exit 0; }\nexit 2");
    stub("adduser", "touch " + user);
    stub("deluser", "rm -f " + user);
    stub("chown", "");
    stub("systemctl", "");
  }

  std::string root() const { return tmp_.file("root"); }
  std::string log() const { return tmp_.file("calls.log"); }

  // Runs the script with its argument(s); returns what the stand-ins were
  // asked since the last run.
  std::string run(const std::string& script, const std::vector<std::string>& args) {
    fs::remove(log());
    std::vector<std::string> argv = {"/bin/sh", std::string(DUCTWORK_SOURCE_DIR) + "/packaging/debian/" + script};
    argv.insert(argv.end(), args.begin(), args.end());
    testsupport::ProcessOptions options;
    options.env = {{"DPKG_ROOT", root()}, {"PATH", tmp_.file("bin") + ":/usr/sbin:/usr/bin:/sbin:/bin"}};
    options.timeout_seconds = 30;
    ProcessResult r = testsupport::run_process(argv, options);
    EXPECT_EQ(r.exit_code, 0) << script << ": " << r.describe() << r.out << r.err;
    return testsupport::file_exists(log()) ? testsupport::read_file(log()) : "";
  }

  bool is_dir(const std::string& path) const { return fs::is_directory(root() + path); }
  unsigned mode(const std::string& path) const {
    struct stat st {};
    return ::stat((root() + path).c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }

  testsupport::TempDir tmp_;
};

TEST_F(MaintainerScriptsTest, ConfigureCreatesTheUserAndTheStateFolderAndStartsNothing) {
  const std::string calls = run("postinst", {"configure"});
  EXPECT_EQ(calls,
            "getent passwd ductwork\n"
            "adduser --system --group --quiet --home /var/lib/ductwork --no-create-home --gecos Ductwork pipeline "
            "engine ductwork\n"
            "chown ductwork:ductwork " + root() + "/var/lib/ductwork\n");
  EXPECT_TRUE(is_dir("/var/lib/ductwork"));
  EXPECT_EQ(mode("/var/lib/ductwork"), 0750u);
  EXPECT_TRUE(is_dir("/etc/ductwork/pipelines"));
  EXPECT_EQ(calls.find("systemctl"), std::string::npos) << "no systemd running here: nothing to reload";
  EXPECT_EQ(calls.find("start"), std::string::npos) << "the service is not started on install";
}

TEST_F(MaintainerScriptsTest, AnUpgradeKeepsTheUserAndTheDatabaseAndReloadsSystemd) {
  run("postinst", {"configure"});
  const std::string db = root() + "/var/lib/ductwork/ductwork.sqlite3";
  std::ofstream(db) << "the database";
  tmp_.write("root/etc/ductwork/pipelines/report.yml", "pipeline: Report\n");
  fs::create_directories(root() + "/run/systemd/system");
  ::chmod((root() + "/var/lib/ductwork").c_str(), 0700);

  const std::string calls = run("postinst", {"configure", "0.1.0-1"});
  EXPECT_EQ(calls,
            "getent passwd ductwork\n"
            "chown ductwork:ductwork " + root() + "/var/lib/ductwork\n"
            "systemctl --system daemon-reload\n")
      << "the user exists: not added again";
  EXPECT_EQ(testsupport::read_file(db), "the database");
  EXPECT_TRUE(testsupport::file_exists(root() + "/etc/ductwork/pipelines/report.yml"));
  EXPECT_EQ(mode("/var/lib/ductwork"), 0750u);
}

TEST_F(MaintainerScriptsTest, OtherActionsOfPostinstDoNothing) {
  for (const char* action : {"abort-upgrade", "abort-remove", "abort-deconfigure", "triggered"}) {
    EXPECT_EQ(run("postinst", {action}), "") << action;
  }
  EXPECT_FALSE(fs::exists(root() + "/var")) << "nothing created";
  EXPECT_FALSE(fs::exists(root() + "/etc"));
}

TEST_F(MaintainerScriptsTest, RemoveKeepsTheStateAndPurgeRemovesItAndTheUser) {
  run("postinst", {"configure"});
  const std::string db = root() + "/var/lib/ductwork/ductwork.sqlite3";
  std::ofstream(db) << "the database";
  fs::create_directories(root() + "/run/systemd/system");

  for (const char* action : {"remove", "upgrade", "failed-upgrade", "abort-install", "disappear"}) {
    const std::string calls = run("postrm", {action});
    EXPECT_EQ(calls, "systemctl --system daemon-reload\n") << action;
    EXPECT_EQ(testsupport::read_file(db), "the database") << action << " removed the database";
  }
  EXPECT_TRUE(testsupport::file_exists(tmp_.file("user-exists")));

  const std::string calls = run("postrm", {"purge"});
  EXPECT_EQ(calls,
            "getent passwd ductwork\n"
            "deluser --system --quiet ductwork\n"
            "systemctl --system daemon-reload\n");
  EXPECT_FALSE(fs::exists(root() + "/var/lib/ductwork")) << "purge keeps the database";
  EXPECT_TRUE(is_dir("/var/lib")) << "only the package's folder goes";
  EXPECT_FALSE(fs::exists(root() + "/etc/ductwork/pipelines")) << "the empty definitions folder stays";
  EXPECT_FALSE(testsupport::file_exists(tmp_.file("user-exists")));
  // Purged twice (the user gone already): still fine.
  EXPECT_EQ(run("postrm", {"purge"}), "getent passwd ductwork\nsystemctl --system daemon-reload\n");
}

TEST_F(MaintainerScriptsTest, PurgeKeepsDefinitionsAnOperatorAdded) {
  run("postinst", {"configure"});
  tmp_.write("root/etc/ductwork/pipelines/report.yml", "pipeline: Report\n");
  run("postrm", {"purge"});
  EXPECT_FALSE(fs::exists(root() + "/var/lib/ductwork"));
  EXPECT_TRUE(testsupport::file_exists(root() + "/etc/ductwork/pipelines/report.yml"));
}

}  // namespace
}  // namespace ductwork::it
