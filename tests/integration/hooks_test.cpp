// Lifecycle hooks through the real binary (SPEC §15, issue 36): which
// process runs each role's hooks and when, in forking and threaded mode,
// their order, and hooks that throw, crash or hang at start and stop,
// around a drain and a SIGHUP reload. The plugins are
// libfixture_hooks.so (a hook for every event, each appending a line to
// HOOKS_FIXTURE_LOG, misbehaving on request) and libfixture_hooks_second.so
// (worker hooks, its file name sorting after the first's).
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "harness.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

// One line of the hook log: "<plugin> <event> key=value ...".
struct HookLine {
  std::string plugin, event;
  std::map<std::string, std::string> fields;
};

class HooksTest : public ::testing::Test {
 protected:
  // A workspace whose plugins folder holds the testkit and both hook
  // plugins, pipelines Pool and Pool2 (one HookedPool step each).
  // With `one_pipeline`, Pool alone (a test that counts one worker's restarts).
  void make_workspace(bool forking, const std::string& extra = "", int job_workers = 2, bool one_pipeline = false) {
    ConfigOptions options;
    options.job_workers = job_workers;
    options.extra = std::string("forking: ") + (forking ? "fork" : "none") +
                    "\nsupervisor: {polling_timeout: 0.1, shutdown_timeout: 1.5}\n" + extra;
    ws_ = std::make_unique<Workspace>(options);
    const std::string plugins = ws_->file("plugins");
    fs::create_directories(plugins);
    for (const char* lib : {"libfixture_hooks.so", "libfixture_hooks_second.so"}) {
      fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/" + lib, plugins + "/" + lib);
    }
    fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins + "/libductwork_testkit.so");
    options.plugins_directory = plugins;
    ws_->write_config(options);
    ws_->define("pool.yml", chain_definition("Pool", {"HookedPool"}));
    if (!one_pipeline) ws_->define("pool2.yml", chain_definition("Pool2", {"HookedPool"}));
  }

  std::vector<std::pair<std::string, std::string>> env(const std::string& fail = "", int fail_times = 0) const {
    std::vector<std::pair<std::string, std::string>> out = {{"HOOKS_FIXTURE_LOG", log_path()}};
    if (!fail.empty()) out.emplace_back("HOOKS_FIXTURE_FAIL", fail);
    if (fail_times > 0) out.emplace_back("HOOKS_FIXTURE_FAIL_TIMES", std::to_string(fail_times));
    return out;
  }
  testsupport::ProcessOptions options(const std::string& fail = "", int fail_times = 0, double timeout = 60) const {
    testsupport::ProcessOptions o = ws_->process_options(timeout);
    for (auto& e : env(fail, fail_times)) o.env.push_back(e);
    return o;
  }
  std::string log_path() const { return ws_->file("hooks.log"); }
  std::string log_text() const {
    std::ifstream in(log_path());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::vector<HookLine> lines() const {
    std::vector<HookLine> out;
    std::istringstream in(log_text());
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      HookLine h;
      words >> h.plugin >> h.event;
      for (std::string word; words >> word;) {
        size_t eq = word.find('=');
        if (eq != std::string::npos) h.fields[word.substr(0, eq)] = word.substr(eq + 1);
      }
      out.push_back(h);
    }
    return out;
  }
  // "plugin event" of every line, in order.
  std::vector<std::string> sequence() const {
    std::vector<std::string> out;
    for (const auto& h : lines()) out.push_back(h.plugin + " " + h.event);
    return out;
  }
  size_t count(const std::string& event) const {
    size_t n = 0;
    for (const auto& h : lines()) n += h.event == event && h.plugin == "hooks" ? 1 : 0;
    return n;
  }
  // `start --drain` with the hook environment.
  ProcessResult drain(const std::string& fail = "", int fail_times = 0, double timeout = 60) const {
    return ws_->run_with_env({"start", "--drain"}, env(fail, fail_times), timeout);
  }

  std::unique_ptr<Workspace> ws_;
};

TEST_F(HooksTest, ForkingEachChildRunsItsRolesHooksAndTheSupervisorsRunInAChildOfTheirOwn) {
  make_workspace(/*forking=*/true);
  const std::string a = ws_->trigger("Pool"), b = ws_->trigger("Pool2");
  // Not a drain: it may end (and stop a child) before a child whose work
  // was done by another has even started. Stopped once every child ran.
  testsupport::Subprocess host(ws_->command({"start"}), options());
  ASSERT_TRUE(eventually(30, [&] {
    return count("on_advancer_start") == 1u && count("on_worker_start") == 2u &&
           ws_->status(a)["status"] == "completed" && ws_->status(b)["status"] == "completed";
  })) << host.stdout_so_far() << log_text();
  host.signal(SIGTERM);
  ProcessResult r = host.wait(30);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::vector<HookLine> hooks = lines();
  ASSERT_FALSE(hooks.empty()) << r.out;
  // The supervisor's hooks come first and last, each in a child of its own.
  EXPECT_EQ(hooks.front().event, "on_supervisor_start") << log_text();
  EXPECT_EQ(hooks.back().event, "on_supervisor_stop") << log_text();
  const std::string supervisor = hooks.front().fields["pid"];
  for (const auto& h : {hooks.front(), hooks.back()}) {
    EXPECT_EQ(h.fields.at("role"), "supervisor");
    EXPECT_EQ(h.fields.at("pid"), supervisor);
    EXPECT_NE(h.fields.at("self"), supervisor) << "the supervisor never runs plugin code itself";
    EXPECT_EQ(h.fields.at("pipelines"), "Pool,Pool2");
  }
  EXPECT_NE(hooks.front().fields["self"], hooks.back().fields["self"]) << "one short-lived child per event";
  // One advancer child (every pipeline) and one worker child per pipeline,
  // each running its own hooks in its own process.
  EXPECT_EQ(count("on_advancer_start"), 1u) << log_text();
  EXPECT_EQ(count("on_advancer_stop"), 1u) << log_text();
  EXPECT_EQ(count("on_worker_start"), 2u) << log_text();
  EXPECT_EQ(count("on_worker_stop"), 2u) << log_text();
  std::map<std::string, std::string> worker_of;  // pipeline -> pid
  for (const auto& h : hooks) {
    if (h.plugin != "hooks" || h.event == "on_supervisor_start" || h.event == "on_supervisor_stop") continue;
    EXPECT_EQ(h.fields.at("pid"), h.fields.at("self")) << "runs in the process whose start it is";
    EXPECT_NE(h.fields.at("pid"), supervisor);
    if (h.event == "on_advancer_start") {
      EXPECT_EQ(h.fields.at("pipelines"), "Pool,Pool2");
    }
    if (h.event == "on_worker_start") worker_of[h.fields.at("pipelines")] = h.fields.at("pid");
    if (h.event == "on_worker_stop") {
      EXPECT_EQ(worker_of[h.fields.at("pipelines")], h.fields.at("pid"));
    }
  }
  ASSERT_EQ(worker_of.size(), 2u) << log_text();
  // The step ran in the worker whose start hook opened its pool.
  for (const auto& [id, pipeline] : {std::pair{a, "Pool"}, std::pair{b, "Pool2"}}) {
    json doc = ws_->status(id);
    ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
    const json output = doc["runs"][0]["steps"][0]["output"];
    EXPECT_EQ(output["pool"], "open") << output.dump();
    EXPECT_EQ(std::to_string(output["pid"].get<int64_t>()), worker_of[pipeline]) << output.dump();
    EXPECT_EQ(output["opened_by"], output["pid"]) << output.dump();
  }
  // In a worker, every plugin's start hooks run before any stop hook, the
  // second plugin's after the first's (file-name order).
  for (const auto& [pipeline, pid] : worker_of) {
    std::vector<std::string> in_worker;
    for (const auto& h : hooks) {
      if (h.fields.count("self") && h.fields.at("self") == pid) in_worker.push_back(h.plugin + " " + h.event);
    }
    const std::vector<std::string> expected = {"hooks on_worker_start", "second on_worker_start",
                                               "hooks on_worker_stop", "second on_worker_stop"};
    EXPECT_EQ(in_worker, expected) << pipeline;
  }
  EXPECT_NE(r.out.find("fixture hook on_worker_start ran"), std::string::npos) << "hooks log through the host";
}

TEST_F(HooksTest, ThreadedEachHookRunsOncePerProcessAndRoleInRoleOrder) {
  make_workspace(/*forking=*/false, "", /*job_workers=*/3);
  const std::string a = ws_->trigger("Pool");
  ProcessResult r = drain();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::vector<std::string> expected = {
      "hooks on_supervisor_start", "hooks on_advancer_start", "hooks on_worker_start", "second on_worker_start",
      "hooks on_worker_stop",      "second on_worker_stop",   "hooks on_advancer_stop", "hooks on_supervisor_stop"};
  EXPECT_EQ(sequence(), expected) << "once per process and role, not per thread (3 workers, 2 advancers per pipeline)";
  for (const auto& h : lines()) {
    if (h.plugin != "hooks") continue;
    EXPECT_EQ(h.fields.at("self"), h.fields.at("pid")) << h.event;
    EXPECT_EQ(h.fields.at("pipelines"), "Pool,Pool2") << h.event;
  }
  json doc = ws_->status(a);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["output"]["pool"], "open") << doc.dump(2);
}

TEST_F(HooksTest, PluginsListsEachPluginsHooks) {
  make_workspace(/*forking=*/true);
  ProcessResult r = ws_->run({"plugins", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = parse_json(r.out, "plugins --json");
  std::map<std::string, json> by_name;
  for (const auto& p : doc["plugins"]) by_name[p["name"].get<std::string>()] = p;
  ASSERT_EQ(by_name.count("hooks"), 1u) << doc.dump(2);
  EXPECT_EQ(by_name["hooks"]["hooks"].size(), 6u) << doc.dump(2);
  EXPECT_EQ(by_name["hooks"]["hooks"][4], json({{"event", "on_worker_start"}, {"name", "worker_start"}}));
  EXPECT_EQ(by_name["hooks_second"]["hooks"],
            json::array({json({{"event", "on_worker_start"}, {"name", "second_start"}}),
                         json({{"event", "on_worker_stop"}, {"name", "second_stop"}})}));
  EXPECT_EQ(by_name["testkit"]["hooks"], json::array());
  ProcessResult text = ws_->run({"plugins"});
  EXPECT_NE(text.out.find("    hooks: on_worker_start second_start, on_worker_stop second_stop\n"), std::string::npos)
      << text.out;
}

TEST_F(HooksTest, AWorkerWhoseStartHookThrowsExitsAndIsRestartedWithAGrowingPause) {
  make_workspace(/*forking=*/true, "", 2, /*one_pipeline=*/true);
  const std::string id = ws_->trigger("Pool");
  ProcessResult r = drain("on_worker_start:throw", /*fail_times=*/3);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws_->status(id)["status"], "completed");
  // Logged with hook, plugin and error; three times, then it started.
  EXPECT_EQ(count_of(r.out, "\"msg\":\"Start hook failed\""), 3u) << r.out;
  EXPECT_NE(r.out.find("on_worker_start refused on purpose"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"hook\":\"worker_start\""), std::string::npos) << r.out;
  // Pauses of 1, 2 and 4 s before the restarts: not a tight loop.
  EXPECT_GT(r.seconds, 6.5) << r.describe();
  // What it opened is closed again: the second plugin never started, and
  // no worker stop hook ran for a worker that never started.
  EXPECT_EQ(count("on_worker_start"), 1u) << log_text();
}

TEST_F(HooksTest, HealthNamesTheFailingStartHookWhileTheSupervisorKeepsTrying) {
  make_workspace(/*forking=*/true);
  testsupport::Subprocess host(ws_->command({"start"}), options("on_worker_start:throw"));
  ProcessResult health;
  ASSERT_TRUE(eventually(20, [&] {
    health = ws_->run({"health"});
    return health.out.find("its start hook failed: on_worker_start hook worker_start of plugin hooks") !=
           std::string::npos;
  })) << health.describe() << host.stdout_so_far();
  EXPECT_NE(health.out.find("std::runtime_error: on_worker_start refused on purpose"), std::string::npos)
      << health.out;
  host.signal(SIGTERM);
  ProcessResult r = host.wait(20);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

TEST_F(HooksTest, ThreadedAFailingWorkerStartHookEndsStartWithExit1NamingItAfterClosingWhatStarted) {
  make_workspace(/*forking=*/false, "", 2, /*one_pipeline=*/true);
  const std::string id = ws_->trigger("Pool");
  ProcessResult r = drain("on_worker_start:throw");
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("ductwork start: on_worker_start hook worker_start of plugin hooks ("), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("failed: std::runtime_error: on_worker_start refused on purpose"), std::string::npos)
      << r.err;
  const std::vector<std::string> expected = {"hooks on_supervisor_start", "hooks on_advancer_start",
                                             "hooks on_advancer_stop", "hooks on_supervisor_stop"};
  EXPECT_EQ(sequence(), expected) << "the roles that started are stopped again";
  const json doc = ws_->status(id);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["status"], "pending") << "no loop ran: " << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 1u) << "queued, never claimed: " << doc.dump(2);
  EXPECT_TRUE(doc["runs"][0]["steps"][0]["executions"][0]["result_type"].is_null()) << doc.dump(2);
}

TEST_F(HooksTest, AFailingSupervisorStartHookMakesStartExit1NamingItBeforeAnyChildStarts) {
  make_workspace(/*forking=*/true);
  ProcessResult r = drain("on_supervisor_start:throw", 0, 30);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("ductwork start: on_supervisor_start hook supervisor_start of plugin hooks ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("on_supervisor_start refused on purpose"), std::string::npos) << r.err;
  EXPECT_EQ(count("on_worker_start") + count("on_advancer_start"), 0u) << log_text();
  EXPECT_EQ(r.out.find("Child started"), std::string::npos) << r.out;
  EXPECT_LE(process_rows(*ws_), 0) << "the supervisor never registered";
}

TEST_F(HooksTest, AWorkerStartHookThatCrashesIsLoggedWithItsBacktraceAndTheWorkerRestarted) {
  make_workspace(/*forking=*/true, "", 2, /*one_pipeline=*/true);
  const std::string id = ws_->trigger("Pool");
  ProcessResult r = drain("on_worker_start:crash", /*fail_times=*/1);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws_->status(id)["status"], "completed");
  EXPECT_NE(r.out.find("\"msg\":\"Child crashed in a hook\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hook on_worker_start worker_start (plugin hooks)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SIGSEGV"), std::string::npos) << r.out;
}

TEST_F(HooksTest, AStartHookThatHangsIsEndedAfterTheShutdownTimeoutAndTheWorkerRestarted) {
  make_workspace(/*forking=*/true, "", 2, /*one_pipeline=*/true);
  const std::string id = ws_->trigger("Pool");
  ProcessResult r = drain("on_worker_start:hang", /*fail_times=*/1);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws_->status(id)["status"], "completed");
  EXPECT_NE(r.out.find("Start hook did not finish in time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did not finish within supervisor.shutdown_timeout (1.5 s)"), std::string::npos) << r.out;
}

// Stop hooks: a failure is logged and shutdown goes on; a hang is given
// supervisor.shutdown_timeout, then the process ends anyway.
class HooksStopTest : public HooksTest, public ::testing::WithParamInterface<bool> {};

TEST_P(HooksStopTest, AThrowingStopHookIsLoggedAndShutdownGoesOn) {
  make_workspace(GetParam());
  // Work for every worker: a drain with nothing to do may stop a child
  // before it started (and ran any hook).
  ws_->trigger("Pool");
  ws_->trigger("Pool2");
  ProcessResult r = drain("on_worker_stop:throw");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("Stop hook failed; shutdown goes on"), std::string::npos) << r.out;
  EXPECT_EQ(count("on_supervisor_stop"), 1u) << "later stop hooks still ran: " << log_text();
  EXPECT_EQ(count_of(log_text(), "second on_worker_stop"), GetParam() ? 2u : 1u) << log_text();
}

TEST_P(HooksStopTest, AHangingStopHookIsEndedAfterTheShutdownTimeout) {
  make_workspace(GetParam());
  testsupport::Subprocess host(ws_->command({"start"}), options("on_worker_stop:hang"));
  ASSERT_TRUE(eventually(20, [&] { return count("on_worker_start") == (GetParam() ? 2u : 1u); }))
      << host.stdout_so_far();
  const auto signalled = std::chrono::steady_clock::now();
  host.signal(SIGTERM);
  ProcessResult r = host.wait(30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_GT(took, 1.4) << "the hook had supervisor.shutdown_timeout (1.5 s)";
  EXPECT_LT(took, 10.0) << r.describe();
  EXPECT_NE(r.out.find("Stop hook did not finish in time; giving up on it"), std::string::npos) << r.out;
  EXPECT_NE(log_text().find("hooks on_worker_stop hanging"), std::string::npos) << log_text();
  if (GetParam()) {
    EXPECT_EQ(count("on_supervisor_stop"), 1u) << "its own child: " << log_text();
  }
  EXPECT_EQ(process_rows(*ws_), 0) << "no row left behind";
}

INSTANTIATE_TEST_SUITE_P(Modes, HooksStopTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Forking" : "Threaded"; });

// SIGHUP: a forking host's children stop (their stop hooks run) and new
// children start (their start hooks run); the supervisor's hooks do not
// run again. A threaded host restarts whole, every role's hooks around it.
TEST_F(HooksTest, ForkingReloadRunsTheChildrensStopThenStartHooksAndNotTheSupervisors) {
  make_workspace(/*forking=*/true);
  testsupport::Subprocess host(ws_->command({"start"}), options());
  ASSERT_TRUE(eventually(20, [&] { return count("on_worker_start") == 2u && count("on_advancer_start") == 1u; }))
      << host.stdout_so_far();
  host.signal(SIGHUP);
  ASSERT_TRUE(eventually(30, [&] { return count("on_worker_start") == 4u && count("on_advancer_start") == 2u; }))
      << host.stdout_so_far() << log_text();
  EXPECT_EQ(count("on_worker_stop"), 2u) << log_text();
  EXPECT_EQ(count("on_advancer_stop"), 1u) << log_text();
  EXPECT_EQ(count("on_supervisor_start"), 1u) << log_text();
  EXPECT_EQ(count("on_supervisor_stop"), 0u) << log_text();
  // Each pipeline's old worker stopped before its new one started.
  std::map<std::string, std::vector<std::string>> by_pipeline;
  for (const auto& h : lines()) {
    if (h.plugin == "hooks" && (h.event == "on_worker_start" || h.event == "on_worker_stop")) {
      by_pipeline[h.fields.at("pipelines")].push_back(h.event + "@" + h.fields.at("self"));
    }
  }
  for (const auto& [pipeline, seq] : by_pipeline) {
    ASSERT_EQ(seq.size(), 3u) << pipeline << ": " << log_text();
    EXPECT_EQ(seq[0].substr(0, seq[0].find('@')), "on_worker_start");
    EXPECT_EQ(seq[1], "on_worker_stop" + seq[0].substr(seq[0].find('@'))) << "the same process stopped";
    EXPECT_EQ(seq[2].substr(0, seq[2].find('@')), "on_worker_start");
    EXPECT_NE(seq[2], seq[0]) << "in a new process";
  }
  // Work still runs, with the new worker's pool.
  const std::string id = ws_->trigger("Pool");
  ASSERT_TRUE(eventually(20, [&] { return ws_->status(id)["status"] == "completed"; })) << host.stdout_so_far();
  EXPECT_EQ(ws_->status(id)["runs"][0]["steps"][0]["output"]["pool"], "open");
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(30).exit_code, 0);
  EXPECT_EQ(count("on_supervisor_stop"), 1u) << log_text();
}

TEST_F(HooksTest, ThreadedReloadStopsEveryRoleThenStartsThemAgain) {
  make_workspace(/*forking=*/false);
  testsupport::Subprocess host(ws_->command({"start"}), options());
  ASSERT_TRUE(eventually(20, [&] { return count_of(log_text(), "second on_worker_start") == 1u; }))
      << host.stdout_so_far();
  host.signal(SIGHUP);
  ASSERT_TRUE(eventually(30, [&] { return count_of(log_text(), "second on_worker_start") == 2u; }))
      << host.stdout_so_far() << log_text();
  const std::vector<std::string> expected = {
      "hooks on_supervisor_start", "hooks on_advancer_start", "hooks on_worker_start", "second on_worker_start",
      "hooks on_worker_stop",      "second on_worker_stop",   "hooks on_advancer_stop", "hooks on_supervisor_stop",
      "hooks on_supervisor_start", "hooks on_advancer_start", "hooks on_worker_start", "second on_worker_start"};
  EXPECT_EQ(sequence(), expected);
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(30).exit_code, 0);
}

}  // namespace
}  // namespace ductwork::it

namespace ductwork::it {
namespace {

TEST_F(HooksTest, AStopHookThatCrashesItsWorkerIsLoggedAndShutdownGoesOn) {
  make_workspace(/*forking=*/true, "", 2, /*one_pipeline=*/true);
  ws_->trigger("Pool");  // the worker starts (and runs its start hooks) before the drain can end
  ProcessResult r = drain("on_worker_stop:crash");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("\"msg\":\"Child crashed in a hook\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hook on_worker_stop worker_stop (plugin hooks)"), std::string::npos) << r.out;
  EXPECT_EQ(count("on_supervisor_stop"), 1u) << "the supervisor's stop hooks still ran: " << log_text();
  EXPECT_EQ(process_rows(*ws_), 0);
}

TEST_F(HooksTest, ASupervisorStartHookThatCrashesMakesStartExit1NamingIt) {
  make_workspace(/*forking=*/true);
  ProcessResult r = drain("on_supervisor_start:crash", 0, 30);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("ductwork start: hook on_supervisor_start supervisor_start (plugin hooks) crashed (killed by "
                       "SIGSEGV"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("Child started"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ductwork::it
