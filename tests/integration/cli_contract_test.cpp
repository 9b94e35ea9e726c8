// Documented CLI behaviour that had no test (issue 9, item 24): --help,
// --config, negative-number arguments, ./ductwork.yml discovery, start
// with no pipelines, forking: true/false, JSON definition files.
#include "harness.h"

namespace ductwork::it {
namespace {

TEST(CliContractTest, HelpListsEveryCommandAndExitsZero) {
  for (const char* flag : {"--help", "-h", "help"}) {
    SCOPED_TRACE(flag);
    Workspace ws;
    ProcessResult r = ws.run_raw({flag});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    for (const char* command : {"migrate", "start [--drain]", "trigger PIPELINE", "status PIPELINE_ID", "list",
                                "plugins", "validate", "revive PIPELINE_ID", "health"}) {
      EXPECT_NE(r.out.find(std::string("  ") + command), std::string::npos) << command << " missing:\n" << r.out;
    }
    EXPECT_NE(r.out.find("exit codes: 0 ok, 1 runtime failure, 2 bad input"), std::string::npos) << r.out;
    EXPECT_FALSE(ws.database_created());
  }
}

TEST(CliContractTest, LongConfigOptionAndNegativeNumberArguments) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  // --config is -c; "-5" is an argument (JSON), not an option.
  ProcessResult t = ws.run_raw({"trigger", "IncOne", "-5", "--config", ws.config_path()});
  ASSERT_EQ(t.exit_code, 0) << t.describe();
  std::string id = t.out.substr(0, t.out.find('\n'));
  ws.drain();
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][0]["output"], -4);
}

TEST(CliContractTest, DuctworkYmlInTheCurrentFolderIsFoundWithoutDashC) {
  Workspace ws;
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  ProcessResult t = ws.run_raw({"trigger", "IncOne", "1"});  // cwd is the workspace
  ASSERT_EQ(t.exit_code, 0) << t.describe();
  EXPECT_TRUE(ws.database_created()) << "the workspace's ductwork.yml chose the database";
}

TEST(CliContractTest, StartWithNoPipelineDefinedIsBadInput) {
  Workspace ws;
  ProcessResult r = ws.run({"start", "--drain"}, 20);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("no pipelines to run"), std::string::npos) << r.err;
}

TEST(CliContractTest, ForkingTrueAndFalseMeanForkAndNone) {
  for (const char* value : {"true", "false"}) {
    SCOPED_TRACE(value);
    ConfigOptions options;
    options.extra = std::string("forking: ") + value + "\nsupervisor: {polling_timeout: 0.1}\n";
    Workspace ws(options);
    ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
    std::string id = ws.trigger("IncOne", {"1"});
    ProcessResult r = ws.run({"start", "--drain"}, 30);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    bool forked = r.out.find("\"Supervisor started\"") != std::string::npos;
    EXPECT_EQ(forked, std::string(value) == "true") << r.out;
    EXPECT_EQ(ws.status(id)["status"], "completed");
  }
}

TEST(CliContractTest, AJsonDefinitionFileRunsLikeYaml) {
  Workspace ws;
  ws.define("twice.json", R"({"pipeline": "IncTwice", "steps": [{"start": "Inc"}, {"chain": "Double"}]})");
  std::string id = ws.trigger("IncTwice", {"20"});
  ASSERT_FALSE(id.empty());
  ws.drain();
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][1]["output"], 42);
}

}  // namespace
}  // namespace ductwork::it
