// `ductwork start` and `ductwork serve` run in Poco's ServerApplication
// (cli/server_shell.cpp): their options as Poco's OptionSet reads them,
// `--pidfile`, and the signals that stop them.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "http_client.h"

namespace ductwork::it {
namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ServerShellTest, ServeWritesItsPidfileAndRemovesItWhenAskedToStop) {
  for (int sig : {SIGTERM, SIGQUIT, SIGINT}) {
    SCOPED_TRACE(strsignal(sig));
    Workspace ws(http_options());
    const std::string pidfile = ws.file("serve.pid");
    Served serve(ws, {"serve", "--pidfile", pidfile});
    ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
    EXPECT_EQ(file_text(pidfile), std::to_string(serve.process().pid()) + "\n");
    EXPECT_EQ(get(serve.address(), "/healthz", "").status, 200);
    serve.process().signal(sig);
    ProcessResult stopped = serve.process().wait(60);
    EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
    EXPECT_NE(stopped.out.find("\"HTTP server stopped\""), std::string::npos) << stopped.out;
    EXPECT_FALSE(std::filesystem::exists(pidfile));
  }
}

TEST(ServerShellTest, StartKeepsItsOwnPidInThePidfileWhileItsChildrenWork) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("IncTwice", {"Inc", "Inc"}));
  const std::string pidfile = ws.file("host.pid");
  testsupport::Subprocess host(ws.command({"start", "--pidfile", pidfile}), ws.process_options(120));
  const std::string mine = std::to_string(host.pid()) + "\n";
  ASSERT_TRUE(eventually(30, [&] { return file_text(pidfile) == mine || !host.running(); }))
      << host.stdout_so_far() << host.stderr_so_far();
  ASSERT_EQ(file_text(pidfile), mine) << host.stderr_so_far();
  std::string id = ws.trigger("IncTwice", {"1"});
  ASSERT_TRUE(eventually(60, [&] { return ws.status(id)["status"] == "completed"; })) << host.stdout_so_far();
  EXPECT_EQ(file_text(pidfile), mine) << "a child wrote the supervisor's pidfile";
  host.signal(SIGTERM);
  ProcessResult stopped = host.wait(60);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  EXPECT_FALSE(std::filesystem::exists(pidfile));
}

TEST(ServerShellTest, APidfileNamingARunningProcessIsRefusedAndAStaleOneTakenOver) {
  Workspace ws(empty_database());
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  const std::string pidfile = ws.write("host.pid", std::to_string(::getpid()) + "\n");
  ProcessResult refused = ws.run({"start", "--drain", "--pidfile", pidfile}, 30);
  EXPECT_EQ(refused.exit_code, 2) << refused.describe();
  EXPECT_NE(refused.err.find("--pidfile " + pidfile + ": names process " + std::to_string(::getpid()) +
                             ", which is running"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(file_text(pidfile), std::to_string(::getpid()) + "\n");
  EXPECT_FALSE(ws.database_created()) << "nothing is written on a refusal";

  // No process has this id (above the kernel's pid_max).
  ws.write("host.pid", "99999999\n");
  ProcessResult drained = ws.run({"start", "--drain", "--pidfile", pidfile}, 60);
  EXPECT_EQ(drained.exit_code, 0) << drained.describe();
  EXPECT_FALSE(std::filesystem::exists(pidfile)) << "taken over, then removed at exit";
}

TEST(ServerShellTest, BadOptionsOfStartAndServeAreExitTwoNamingThem) {
  Workspace ws(empty_database());
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"start", "--bogus"}, "ductwork start: unknown option --bogus for 'start'"},
      {{"serve", "--drain"}, "ductwork serve: unknown option --drain for 'serve'"},
      {{"start", "-x"}, "ductwork start: unknown option -x for 'start'"},
      {{"start", "--drain=yes"}, "ductwork start: --drain takes no value (got --drain=yes)"},
      {{"start", "--drain", "--drain"}, "ductwork start: --drain given more than once"},
      {{"serve", "stray"}, "ductwork serve: usage: ductwork serve"},
      {{"start", "stray"}, "ductwork start: usage: ductwork start"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[1]);
    ProcessResult r = ws.run(c.args, 30);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  // Without the -c that ws.run appends, so the option is last.
  ProcessResult missing = ws.run_raw({"start", "--pidfile"}, 30);
  EXPECT_EQ(missing.exit_code, 2) << missing.describe();
  EXPECT_NE(missing.err.find("ductwork start: --pidfile needs a value"), std::string::npos) << missing.err;
  EXPECT_FALSE(ws.database_created()) << "nothing is written on bad options";

  // Poco's option reader takes an unambiguous prefix, and --config=PATH.
  ProcessResult prefix = ws.run_raw({"start", "--dr", "--config=" + ws.config_path()}, 60);
  EXPECT_EQ(prefix.exit_code, 0) << prefix.describe();
  EXPECT_NE(prefix.out.find("Drained"), std::string::npos) << prefix.out;
}

}  // namespace
}  // namespace ductwork::it
