// What status --json tells about each execution: the plugin (and version)
// that ran it, and the backtrace of a failure with the plugin's own frames
// named from its symbol table. Before: neither was shown, and frames read
// "/tmp/ductwork-plugin-XXXX/lib.so(+0x119af)" (a deleted private copy).
#include "harness.h"

namespace ductwork::it {
namespace {

const json& first_execution(const json& doc, size_t step = 0) { return doc["runs"][0]["steps"][step]["executions"][0]; }

TEST(ExecutionRecordTest, EachExecutionNamesThePluginAndVersionThatRanIt) {
  Workspace ws;
  ws.define("echo.yml", chain_definition("EchoTwo", {"Echo", "Echo"}));
  std::string id = ws.trigger("EchoTwo", {"1"});
  ws.drain();
  json doc = ws.status(id);
  for (size_t step = 0; step < 2; ++step) {
    const json& e = first_execution(doc, step);
    EXPECT_EQ(e["plugin"], "testkit") << e.dump();
    EXPECT_EQ(e["plugin_version"], "1.0.0") << e.dump();
    EXPECT_TRUE(e["error_backtrace"].is_null()) << e.dump();
  }
}

TEST(ExecutionRecordTest, AFailureShowsItsBacktraceWithThePluginsFramesNamed) {
  Workspace ws(ConfigOptions{DUCTWORK_PLUGIN_DIR, "max_retry: 0"});
  ws.define("fail.yml", chain_definition("Failing", {"Fail"}));
  std::string id = ws.trigger("Failing");
  ws.drain();
  const json e = first_execution(ws.status(id));
  EXPECT_EQ(e["result_type"], "failure") << e.dump();
  EXPECT_EQ(e["plugin"], "testkit") << e.dump();
  ASSERT_TRUE(e["error_backtrace"].is_string()) << e.dump();
  std::string trace = e["error_backtrace"].get<std::string>();
  std::string installed = std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so(";
  EXPECT_NE(trace.find(installed + "ductwork::testkit::Fail::execute(ductwork::StepContext&)+0x"), std::string::npos)
      << "the step's frame, named from the plugin's symbols, against the installed file:\n" << trace;
  EXPECT_EQ(trace.find("ductwork-plugin-"), std::string::npos) << "no private-copy path:\n" << trace;
}

// A database from before migration 004: status still reads it (the plugin
// fields are null), `migrate` brings it up to date, and new executions
// record their plugin.
TEST(ExecutionRecordTest, AnOlderDatabaseIsReadAndMigrated) {
  Workspace ws;
  ws.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  std::string old_id = ws.trigger("EchoOne", {"1"});
  ws.drain();
  ws.sql("ALTER TABLE executions DROP COLUMN plugin_name; ALTER TABLE executions DROP COLUMN plugin_version; "
         "DELETE FROM schema_migrations WHERE version = '004_execution_plugin';");
  ASSERT_EQ(ws.sql("SELECT count(*) FROM schema_migrations WHERE version = '004_execution_plugin'"), "0\n");

  json before = ws.status(old_id);
  EXPECT_TRUE(first_execution(before)["plugin"].is_null()) << before.dump();
  EXPECT_EQ(first_execution(before)["result_type"], "success");

  ProcessResult migrated = ws.run({"migrate"});
  EXPECT_EQ(migrated.exit_code, 0) << migrated.describe();
  EXPECT_NE(migrated.out.find("004_execution_plugin"), std::string::npos) << migrated.describe();
  std::string new_id = ws.trigger("EchoOne", {"2"});
  ws.drain();
  EXPECT_TRUE(first_execution(ws.status(old_id))["plugin"].is_null()) << "history is not rewritten";
  EXPECT_EQ(first_execution(ws.status(new_id))["plugin"], "testkit");
  EXPECT_EQ(ws.status(new_id)["runs"][0]["steps"][0]["output"], 2);
}

// A step that crashes its worker child: the execution names the signal and
// the step, and carries the crashing thread's backtrace with the plugin's
// frames named (the child's crash handler wrote it; the supervisor read
// it). Only the execution that crashed gets it.
TEST(ExecutionRecordTest, ACrashShowsTheSignalTheStepAndTheCrashingFrames) {
  ConfigOptions options;
  options.job_worker_extra = "max_crash: 3";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("crash.yml", chain_definition("Crashing", {"Segfault", "Echo"}));
  std::string id = ws.trigger("Crashing", {R"({"times": 1, "value": "survived"})"});
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << executions.dump(2);
  const json& crash = executions[0];
  EXPECT_EQ(crash["result_type"], "process_crashed");
  std::string message = crash["error_message"].get<std::string>();
#if defined(__SANITIZE_ADDRESS__)
  // ASan keeps SIGSEGV for itself: it reports the fault and exits 1, and the
  // crash handler never runs.
  EXPECT_NE(message.find(" exited with status "), std::string::npos) << message;
  GTEST_SKIP() << "under ASan its SEGV report replaces the crash handler's backtrace";
#endif
  EXPECT_NE(message.find("killed by SIGSEGV while running step Segfault"), std::string::npos) << message;
  ASSERT_TRUE(crash["error_backtrace"].is_string()) << crash.dump(2);
  std::string trace = crash["error_backtrace"].get<std::string>();
  EXPECT_NE(trace.find(std::string(DUCTWORK_PLUGIN_DIR) +
                       "/libductwork_testkit.so(ductwork::testkit::Segfault::execute(ductwork::StepContext&)+0x"),
            std::string::npos)
      << trace;
  EXPECT_TRUE(executions[1]["error_backtrace"].is_null()) << "the re-run succeeded: " << executions[1].dump();
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], "survived");
}

}  // namespace
}  // namespace ductwork::it
