// Process steps (issue 40, SPEC §19) through the real binary: Python steps
// served by tests/fixtures/process_steps/py_steps.py through sdk/python,
// mixed with the testkit's `.so` steps; what the protocol carries, errors,
// context, logs, cancellation, timeouts, a step process killed mid-step, and
// the refusals of a command that does not speak the protocol. Both dialects.
#include <signal.h>

#include <filesystem>


#include "harness.h"

namespace ductwork::it {
namespace {

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

class ProcessStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (find_on_path("python3").empty()) GTEST_SKIP() << "python3 is not installed";
  }
};

// A Python chain, fan-out and fan-in mixed with `.so` steps: PyRange ->
// expand PyDouble -> collapse Sum (.so) -> PyInc -> Inc (.so).
TEST_F(ProcessStepTest, PythonAndSoStepsChainFanOutAndFanInTogether) {
  Workspace ws;
  with_python_steps(ws, {});
  ws.define("mixed.yml",
            "pipeline: Mixed\nsteps:\n  - start: PyRange\n  - expand: PyDouble\n  - collapse: Sum\n"
            "  - chain: PyInc\n  - chain: Inc\n");
  ws.define("chain.yml", chain_definition("PyChain", {"PyInc", "Inc", "PyInc", "PyDouble"}));
  const std::string mixed = ws.trigger("Mixed", {"5"});
  const std::string chain = ws.trigger("PyChain", {"1"});
  ws.drain(60);
  json doc = ws.status(mixed);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 9u) << doc.dump(1);  // PyRange, 5 x PyDouble, Sum, PyInc, Inc
  EXPECT_EQ(steps[6]["klass"], "Sum");
  EXPECT_EQ(steps[6]["input"], json::array({json::array({0, 2, 4, 6, 8})}));
  EXPECT_EQ(steps[8]["output"], 22);  // 20 + 1 + 1
  json chain_doc = ws.status(chain);
  ASSERT_EQ(chain_doc["status"], "completed") << chain_doc.dump(2);
  EXPECT_EQ(chain_doc["runs"][0]["steps"][3]["output"], 8);  // ((1 + 1 + 1) + 1) * 2
  EXPECT_EQ(chain_doc["runs"][0]["steps"][0]["executions"][0]["plugin"], "py") << chain_doc.dump(1);
  EXPECT_EQ(step_processes_of(ws), 0) << "a step process outlived its host";
}

// What the C ABI carries reaches the step: arguments (an integer past 2^53
// exactly), run id, idempotency key, pipeline, step, retry and crash counts.
TEST_F(ProcessStepTest, AnExecutionCarriesWhatTheAbiCarries) {
  Workspace ws;
  with_python_steps(ws, {});
  ws.define("echo.yml", chain_definition("PyEchoes", {"PyEcho"}));
  const std::string id = ws.trigger("PyEchoes", {"9007199254740993", "\"two\"", "{\"a\": [null, 1.5]}"});
  ws.drain(60);
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& step = doc["runs"][0]["steps"][0];
  const json out = step["output"];
  EXPECT_EQ(out["args"], json::parse("[9007199254740993, \"two\", {\"a\": [null, 1.5]}]")) << out.dump();
  EXPECT_EQ(out["run_id"], doc["runs"][0]["id"]);
  EXPECT_EQ(out["pipeline"], "PyEchoes");
  EXPECT_EQ(out["step"], "PyEcho");
  EXPECT_EQ(out["retry_count"], 0);
  EXPECT_EQ(out["crash_count"], 0);
  EXPECT_TRUE(out["idempotency_key"].is_string() && !out["idempotency_key"].get<std::string>().empty()) << out;
}

// An exception is the execution's error (class, message, backtrace from
// the Python frames), retried as the budget allows; NotRetryable fails the
// step at once; an error on the first attempt then success is one retry.
TEST_F(ProcessStepTest, ErrorsAreRetriedAndNotRetryableFailsAtOnce) {
  Workspace ws;
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  with_python_steps(ws, options);
  ws.define("fail.yml", chain_definition("PyFails", {"PyFail"}));
  ws.define("fatal.yml", chain_definition("PyFatals", {"PyFatal"}));
  ws.define("once.yml", chain_definition("PyOnce", {"PyFailOnce", "PyInc"}));
  const std::string fail = ws.trigger("PyFails", {"\"bad input\""});
  const std::string fatal = ws.trigger("PyFatals", {"\"never\""});
  const std::string once = ws.trigger("PyOnce", {"41"});
  ws.drain(60);
  json doc = ws.status(fail);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_retries_exhausted") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << doc.dump(2);
  EXPECT_EQ(executions[0]["error_klass"], "ValueError");
  EXPECT_EQ(executions[0]["error_message"], "bad input");
  EXPECT_NE(executions[0]["error_backtrace"].get<std::string>().find("py_steps.py"), std::string::npos)
      << executions[0].dump(2);
  EXPECT_EQ(executions[0]["crash_count"], 0);
  doc = ws.status(fatal);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_error_not_retryable") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"][0]["error_klass"], "ductwork_steps.NotRetryable");
  doc = ws.status(once);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], 42);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 2u);
}

// Context set and read back through the host, a log line and a print
// attributed to the step in the host's log (the print never reaches the
// protocol).
TEST_F(ProcessStepTest, ContextAndLogLinesGoThroughTheHost) {
  Workspace ws;
  with_python_steps(ws, {});
  ws.define("ctx.yml", chain_definition("PyCtx", {"PyContext"}));
  const std::string id = ws.trigger("PyCtx", {"\"colour\"", "{\"shade\": \"teal\"}"});
  ProcessResult r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_LOG_FORMAT", "json"}}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["output"], json::parse("{\"shade\": \"teal\"}"));
  json context = parse_json(ws.run({"context", id, "--json"}).out, "context --json")["context"];
  EXPECT_EQ(context["colour"], json::parse("{\"shade\": \"teal\"}")) << context;
  const std::string logs = r.out + r.err;
  bool logged = false, printed = false;
  std::istringstream lines(logs);
  for (std::string line; std::getline(lines, line);) {
    json entry = json::parse(line, nullptr, false);
    if (!entry.is_object()) continue;
    if (entry.value("msg", "") == "set colour") {
      logged = entry.value("level", "") == "warn" && entry.value("step", "") == "PyContext" &&
               entry.value("run_id", "") == doc["runs"][0]["id"];
    }
    if (entry.value("msg", "") == "Step process stderr" &&
        entry.value("line", "") == "a print goes to stderr, not into the protocol") {
      printed = entry.value("step", "") == "PyContext" && entry.value("plugin", "") == "py";
    }
  }
  EXPECT_TRUE(logged) << logs;
  EXPECT_TRUE(printed) << logs;
}

// A cancelled run's step sees ctx.cancelled() and stops: the pipeline is
// cancelled within seconds of a step that would run 60.
TEST_F(ProcessStepTest, ACancelledRunsStepSeesItAndStops) {
  Workspace ws;
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  with_python_steps(ws, options);
  ws.define("wait.yml", chain_definition("PyWaits", {"PyWaitForCancel", "Inc"}));
  const std::string id = ws.trigger("PyWaits", {"60"});
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(90));
  ASSERT_TRUE(eventually(30, [&] {
    return ws.sql("SELECT COUNT(*) FROM attempts").rfind("1", 0) == 0;
  })) << host.stderr_so_far();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(ws.run({"cancel", id}).exit_code, 0);
  const auto cancelled_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually(20, [&] {
    return ws.sql("SELECT COUNT(*) FROM executions WHERE completed_at IS NULL").rfind("0", 0) == 0;
  })) << "the step never stopped\n" << host.stderr_so_far();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelled_at).count(), 15);
  host.signal(SIGTERM);
  ProcessResult r = host.wait(60);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "cancelled");
  // The step stopped because it asked (its own error), not because it was killed.
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 1u) << doc.dump(2);
  EXPECT_EQ(executions[0]["error_klass"], "RuntimeError") << doc.dump(2);
  EXPECT_EQ(executions[0]["error_message"], "cancelled") << doc.dump(2);
  EXPECT_EQ(step_processes_of(ws), 0) << "a step process outlived its host";
}

// The step process killed with SIGKILL mid-step: one crash of that
// execution (the crash budget, not the retry budget), then a fresh
// process runs the next execution to success; the host never restarts.
TEST_F(ProcessStepTest, AStepProcessKilledMidStepIsOneCrashThenSuccess) {
  Workspace ws;
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  with_python_steps(ws, options);
  ws.define("pid.yml", chain_definition("PyPid", {"PySleepPid", "PyEcho"}));
  const std::string pid_file = ws.file("step.pid");
  const std::string id = ws.trigger("PyPid", {"\"" + pid_file + "\"", "60"});
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(90));
  ASSERT_TRUE(eventually(30, [&] { return testsupport::file_exists(pid_file) && !testsupport::read_file(pid_file).empty(); }))
      << host.stderr_so_far();
  const pid_t step_pid = std::atoi(testsupport::read_file(pid_file).c_str());
  ASSERT_GT(step_pid, 0);
  ASSERT_EQ(::kill(step_pid, SIGKILL), 0);
  ASSERT_TRUE(eventually(30, [&] { return ws.status(id)["status"] == "completed"; })) << host.stderr_so_far();
  EXPECT_TRUE(host.running()) << "the host went down with its step process";
  // The fresh step process stays, for the worker's next execution.
  EXPECT_EQ(step_processes_of(ws), 1);
  host.signal(SIGTERM);
  ProcessResult r = host.wait(60);
  json doc = ws.status(id);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << doc.dump(2);
  EXPECT_EQ(executions[0]["result_type"], "process_crashed") << executions.dump(2);
  EXPECT_EQ(executions[0]["error_klass"], "ductwork::StepProcessDied") << executions.dump(2);
  EXPECT_NE(executions[0]["error_message"].get<std::string>().find("SIGKILL"), std::string::npos) << executions.dump(2);
  EXPECT_EQ(executions[1]["crash_count"], 1);
  EXPECT_EQ(executions[1]["retry_count"], 0) << "a crash spends no retry";
  EXPECT_EQ(doc["runs"][0]["steps"][0]["output"], "after 1 crash");
  EXPECT_EQ(occurrences(r.out + r.err, "Step process started"), 2u) << r.out + r.err;
  EXPECT_EQ(step_processes_of(ws), 0) << "shutdown closed the step process's stdin and it exited";
}

// A step that ignores its timeout: its step process is killed at the end
// of the grace (not the worker: no "Killing this worker process"), the
// execution fails StepTimeout, and the next one runs in a fresh process.
TEST_F(ProcessStepTest, AStepPastItsTimeoutHasItsProcessKilledNotItsWorker) {
  Workspace ws;
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1, timeout_grace: 1";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  with_python_steps(ws, options);
  ws.define("late.yml", "pipeline: PyLate\nsteps:\n  - start: PyIgnoreTimeout\n    timeout: 1\n  - chain: Inc\n");
  const std::string id = ws.trigger("PyLate", {"600"});
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_LT(r.seconds, 20) << "the step was not ended by its timeout";
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << doc.dump(2);
  for (const auto& e : executions) EXPECT_EQ(e["error_klass"], "StepTimeout") << e.dump(2);
  const std::string logs = r.out + r.err;
  EXPECT_EQ(occurrences(logs, "Killing a step process to end a step that ignored its timeout"), 2u) << logs;
  EXPECT_EQ(occurrences(logs, "Killing this worker process"), 0u) << logs;
  EXPECT_EQ(step_processes_of(ws), 0) << "a step process outlived its host";
}

// Commands that do not speak the protocol are refused by name with the
// reason, the `.so` plugins beside them still load, and nothing hangs.
TEST_F(ProcessStepTest, ACommandThatDoesNotSpeakTheProtocolIsRefusedClearly) {
  struct Case {
    std::string manifest;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"command: [sh, -c, \"sleep 30\"]\nsteps: [Silent]\n", "did not answer the handshake within 3 s"},
      {"command: [sh, -c, \"echo hello world; sleep 30\"]\nsteps: [Garbage]\n",
       "answered the handshake with \"hello world\""},
      {"command: [sh, -c, \"echo oops >&2; exit 3\"]\nsteps: [Quits]\n",
       "exited before its handshake (exited with status 3); its stderr: oops"},
      {"command: [./no-such-program]\nsteps: [Missing]\n", "command: ./no-such-program is not an executable file"},
      {"command: [sh, -c, \"echo '{\\\"ductwork\\\": \\\"steps\\\", \\\"protocol\\\": 1, \\\"steps\\\": []}'; cat\"]\n"
       "steps: [Unserved]\n",
       "does not serve Unserved"},
      {"command: [sh, -c, \"echo '{\\\"ductwork\\\": \\\"steps\\\", \\\"protocol\\\": 9, \\\"steps\\\": [\\\"Future\\\"]}'; cat\"]\n"
       "steps: [Future]\n",
       "speaks protocol 9; this host speaks protocol 1"},
      {"command: [sh]\nsteps: [X]\nthreads: 2\n", "unknown key 'threads'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.manifest);
    Workspace ws;
    with_python_steps(ws, {});
    ws.write("plugins/bad.steps.yml", c.manifest);
    std::string config = testsupport::read_file(ws.config_path());
    const std::string section = "plugins:\n";
    ASSERT_NE(config.find(section), std::string::npos) << config;
    // Long enough for the good manifest's python3 to start on a loaded
    // machine (through a version manager's shim it took 0.9 s), short
    // enough that the silent case's wait stays well inside the bound below.
    config.replace(config.find(section), section.size(), "plugins:\n  handshake_timeout: 3\n");
    ws.write_config_text(config);
    ProcessResult r = ws.run({"plugins"}, 30);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(ws.file("plugins/bad.steps.yml")), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("steps: PyInc"), std::string::npos) << "the good manifest still loads\n" << r.out;
    EXPECT_NE(r.out.find("testkit"), std::string::npos) << r.out;
    EXPECT_LT(r.seconds, 10);
  }
}

// A step name served by a manifest and by a `.so` plugin is ambiguous, as
// between two `.so` plugins: a definition naming it bare is refused naming
// both, and `plugin:Step` picks one.
TEST_F(ProcessStepTest, AStepNameOfBothKindsIsAmbiguousUntilQualified) {
  Workspace ws;
  with_python_steps(ws, {});
  ws.write("plugins/twin.steps.yml", "command: [python3, -u, \"" + python_steps_script() +
                                         "\"]\nenvironment: {PYTHONPATH: \"" + python_sdk_dir() +
                                         "\"}\nsteps: [PyInc]\n");
  ws.define("amb.yml", chain_definition("Amb", {"PyInc"}));
  ProcessResult r = ws.run({"validate"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("py"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("twin"), std::string::npos) << r.err;
  ws.define("amb.yml", chain_definition("Amb", {"twin:PyInc"}));
  r = ws.run({"validate"});
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  const std::string id = ws.trigger("Amb", {"1"});
  ws.drain(60);
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][0]["output"], 2);
}

// `plugins --json` lists a manifest as a process plugin with its command.
TEST_F(ProcessStepTest, PluginsListsAManifestWithItsCommand) {
  Workspace ws;
  with_python_steps(ws, {});
  ProcessResult r = ws.run({"plugins", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  json doc = parse_json(r.out, "plugins --json");
  bool found = false;
  for (const auto& p : doc["plugins"]) {
    if (p["name"] != "py") continue;
    found = true;
    EXPECT_EQ(p["kind"], "process");
    EXPECT_EQ(p["command"], json::array({"python3", "-u", python_steps_script()}));
    EXPECT_EQ(p["steps"][0], "PyInc");
  }
  EXPECT_TRUE(found) << r.out;
}

}  // namespace
}  // namespace ductwork::it

namespace ductwork::it {
namespace {

// Writes plugins/NAME.steps.yml: the shell fixture `script` of
// tests/fixtures/process_steps serving `steps` ("A, B"), marked as the
// workspace's (step_processes_of finds it).
void write_fixture_manifest(const Workspace& ws, const std::string& name, const std::string& script,
                            const std::string& steps) {
  ws.write("plugins/" + name + ".steps.yml",
           "command: [\"" + std::string(DUCTWORK_SOURCE_DIR) + "/tests/fixtures/process_steps/" + script + "\"]\n" +
               "environment: {DWTEST_WORKSPACE: \"" + ws.dir() + "\"}\nsteps: [" + steps + "]\n");
}

// A step process that breaks the protocol (tests/fixtures/process_steps/
// misbehaving.sh, a POSIX shell script) is contained: garbage or an
// unknown message on stdout and an exit mid-step are crashes of that
// execution (the process is ended, a fresh one runs the next), an output
// past job_worker.max_output_bytes is the step's error (OutputTooLarge) as
// for a `.so` step; the host runs on and each step then succeeds.
TEST(ProcessStepFailureTest, EveryWayAStepProcessBreaksIsContainedCountedAndExplained) {
  Workspace ws;
  ConfigOptions options;
  options.job_worker_extra = "max_output_bytes: 1024";
  with_python_steps(ws, options);
  write_fixture_manifest(ws, "bad", "misbehaving.sh", "Garbage, Exits, HugeLine, BigOutput, UnknownType");
  struct Case {
    std::string step, klass, message, result;
  };
  const std::vector<Case> cases = {
      {"Garbage", "ductwork::ProtocolError", "wrote \"this is not JSON\" on stdout", "process_crashed"},
      {"Exits", "ductwork::StepProcessDied", "exited with status 7", "process_crashed"},
      {"HugeLine", "ductwork::OutputTooLarge", "longer than job_worker.max_output_bytes (1024)", "failure"},
      {"BigOutput", "ductwork::OutputTooLarge", "the output of step BigOutput", "failure"},
      {"UnknownType", "ductwork::ProtocolError", "unknown type \"telemetry\"", "process_crashed"},
  };
  std::vector<std::string> ids;
  for (const Case& c : cases) {
    ws.define(c.step + ".yml", chain_definition("Bad" + c.step, {c.step}));
    ids.push_back(ws.trigger("Bad" + c.step, {"1"}));
  }
  ProcessResult r = ws.run({"start", "--drain"}, 90);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].step);
    json doc = ws.status(ids[i]);
    ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
    const json& executions = doc["runs"][0]["steps"][0]["executions"];
    ASSERT_EQ(executions.size(), 2u) << doc.dump(2);
    EXPECT_EQ(executions[0]["result_type"], cases[i].result) << executions.dump(2);
    EXPECT_EQ(executions[0]["error_klass"], cases[i].klass) << executions.dump(2);
    EXPECT_NE(executions[0]["error_message"].get<std::string>().find(cases[i].message), std::string::npos)
        << executions.dump(2);
    EXPECT_EQ(doc["runs"][0]["steps"][0]["output"], "ok");
  }
  const std::string logs = r.out + r.err;
  EXPECT_NE(logs.find("leaving now"), std::string::npos) << "the dying process's stderr reached the log\n" << logs;
}

// The shell example (examples/process-steps/shell): the protocol needs no
// SDK and no Python.
TEST(ProcessStepFailureTest, TheShellExampleServesItsStep) {
  Workspace ws;
  with_python_steps(ws, {});
  namespace fs = std::filesystem;
  const std::string example = std::string(DUCTWORK_SOURCE_DIR) + "/examples/process-steps/shell";
  fs::copy_file(example + "/shout.sh", ws.file("plugins/shout.sh"));
  fs::copy_file(example + "/shout.steps.yml", ws.file("plugins/shout.steps.yml"));
  ws.define("shout.yml", chain_definition("Loud", {"Shout", "Shout"}));
  const std::string id = ws.trigger("Loud", {"\"quiet please\""});
  const std::string bad = ws.trigger("Loud", {"{\"not\": \"a string\"}"});
  ws.drain(60);
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], "QUIET PLEASE");
  doc = ws.status(bad);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_error_not_retryable") << doc.dump(2);
}

// In threaded mode (forking: none) each worker thread keeps its own step
// process, and the chain runs as in forking mode.
TEST(ProcessStepFailureTest, ThreadedModeRunsProcessSteps) {
  if (find_on_path("python3").empty()) GTEST_SKIP() << "python3 is not installed";
  Workspace ws;
  ConfigOptions options;
  options.extra = "forking: none\n";
  with_python_steps(ws, options);
  ws.define("chain.yml", chain_definition("PyThreaded", {"PyInc", "Inc", "PyDouble"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(ws.trigger("PyThreaded", {std::to_string(i)}));
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ws.status(ids[i])["runs"][0]["steps"][2]["output"], (i + 2) * 2);
  EXPECT_LE(occurrences(r.out + r.err, "Step process started"), 2u) << "one per worker thread, kept between steps";
  EXPECT_EQ(step_processes_of(ws), 0);
}

// Shutdown closes a step process's stdin and waits for it; one that stays
// (tests/fixtures/process_steps/lingering.sh sleeps on) is killed with its
// process group once supervisor.shutdown_timeout has passed.
TEST(ProcessStepFailureTest, AStepProcessThatOutstaysShutdownIsKilledAfterTheTimeout) {
  Workspace ws;
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1, shutdown_timeout: 1}\n";
  with_python_steps(ws, options);
  write_fixture_manifest(ws, "linger", "lingering.sh", "Lingers");
  ws.define("linger.yml", chain_definition("Linger", {"Lingers"}));
  const std::string id = ws.trigger("Linger", {"1"});
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_EQ(ws.status(id)["status"], "completed");
  EXPECT_LT(r.seconds, 15) << "shutdown waited for the lingering process instead of killing it";
  EXPECT_TRUE(eventually(2, [&] { return step_processes_of(ws) == 0; }))
      << "the lingering process (or its sleep) was left running";
}

}  // namespace
}  // namespace ductwork::it
