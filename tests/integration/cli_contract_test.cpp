// Documented CLI behaviour that had no test (issue 9, item 24): --help,
// --config, negative-number arguments, ./ductwork.yml discovery, start
// with no pipelines, forking: true/false, JSON definition files.
#include <filesystem>

#include "harness.h"

namespace ductwork::it {
namespace {

TEST(CliContractTest, HelpListsEveryCommandAndExitsZero) {
  for (const char* flag : {"--help", "-h", "help"}) {
    SCOPED_TRACE(flag);
    Workspace ws(empty_database());
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
  Workspace ws(empty_database());
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

// Issue 14: a misspelt step class or pipeline name gets the near miss the
// author meant; a name nothing resembles gets none.
TEST(CliContractTest, ValidateSuggestsTheStepAMisspeltNameMeant) {
  Workspace ws(empty_database());
  std::string typo = ws.define("typo.yml", chain_definition("Typo", {"Inc", "Dubble"}));
  std::string qualified = ws.define("qualified.yml", chain_definition("Qualified", {"testkit:Ehco"}));
  std::string far = ws.define("far.yml", chain_definition("Far", {"ChargeCard"}));
  const std::vector<std::string> expected = {
      far + ": pipeline Far: step ChargeCard is not exported by any loaded plugin",
      qualified + ": pipeline Qualified: step testkit:Ehco is not exported by any loaded plugin, did you mean "
                  "'testkit:Echo'?",
      typo + ": pipeline Typo: step Dubble is not exported by any loaded plugin, did you mean 'Double'?"};

  ProcessResult text = ws.run({"validate"});
  EXPECT_EQ(text.exit_code, 2) << text.describe();
  EXPECT_EQ(text.out, "") << "a failed validation prints nothing on stdout";
  for (const auto& problem : expected) EXPECT_NE(text.err.find(problem + "\n"), std::string::npos) << text.err;

  ProcessResult r = ws.run({"validate", "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  json doc = parse_json(r.out, "validate --json");
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["ok"], false);
  EXPECT_EQ(doc["problems"], json(expected)) << doc.dump(2);
  EXPECT_FALSE(ws.database_created());
}

TEST(CliContractTest, AMisspeltPipelineNameGetsASuggestion) {
  Workspace ws(empty_database());
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  ws.define("double.yml", chain_definition("DoubleOne", {"Double"}));
  ProcessResult t = ws.run({"trigger", "incoen", "1"});
  EXPECT_EQ(t.exit_code, 2) << t.describe();
  EXPECT_NE(t.err.find("unknown pipeline 'incoen', did you mean 'IncOne'? (defined: DoubleOne, IncOne)"),
            std::string::npos)
      << t.err;
  ProcessResult far = ws.run({"trigger", "Checkout", "1"});
  EXPECT_EQ(far.exit_code, 2) << far.describe();
  EXPECT_NE(far.err.find("unknown pipeline 'Checkout' (defined: DoubleOne, IncOne)"), std::string::npos) << far.err;
  EXPECT_FALSE(ws.database_created()) << "nothing written";

  // The configuration's `pipelines` list, checked by validate.
  std::string config = testsupport::read_file(ws.config_path());
  const std::string all = "pipelines: \"*\"\n";
  ASSERT_NE(config.find(all), std::string::npos) << config;
  config.replace(config.find(all), all.size(), "pipelines: [DoubleOne, IncOen]\n");
  ws.write_config_text(config);
  ProcessResult v = ws.run({"validate"});
  EXPECT_EQ(v.exit_code, 2) << v.describe();
  EXPECT_NE(v.err.find("pipelines: 'IncOen' is not defined, did you mean 'IncOne'?"), std::string::npos) << v.err;
}

// Issue 14: validate names the pipelines each loaded plugin exports.
TEST(CliContractTest, ValidateListsThePipelinesEachPluginExports) {
  Workspace ws;
  const std::string dir = ws.file("plugins");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so",
                             dir + "/libductwork_testkit.so");
  std::filesystem::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libfixture_conformance.so",
                             dir + "/libfixture_conformance.so");
  ConfigOptions options;
  options.plugins_directory = dir;
  ws.write_config(options);
  ws.define("inc.yml", chain_definition("IncOne", {"Inc"}));
  const std::vector<std::string> exported = {"PluginExpandCollapse", "PluginDivideCombine",  "PluginDivertConverge",
                                             "PluginNestedExpand",   "PluginExpandDivide",   "PluginDivertInExpand",
                                             "PluginFailingBranch"};

  ProcessResult r = ws.run({"validate", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = parse_json(r.out, "validate --json");
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["ok"], true) << doc.dump(2);
  EXPECT_EQ(doc["problems"], json::array());
  EXPECT_EQ(doc["pipelines"].size(), exported.size() + 1) << "the file's and the plugin's, as before";
  json expected_plugins = json::array();  // in file name order, as loaded
  expected_plugins.push_back({{"name", "testkit"}, {"version", "1.0.0"},
                              {"path", dir + "/libductwork_testkit.so"}, {"pipelines", json::array()}});
  expected_plugins.push_back({{"name", "conformance"}, {"version", "1.0.0"},
                              {"path", dir + "/libfixture_conformance.so"}, {"pipelines", exported}});
  EXPECT_EQ(doc["plugins"], expected_plugins) << doc.dump(2);

  ProcessResult text = ws.run({"validate"});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  std::string names;
  for (const auto& n : exported) names += (names.empty() ? "" : ", ") + n;
  EXPECT_EQ(text.out, "plugin testkit 1.0.0 (" + dir + "/libductwork_testkit.so): no pipelines\n"
                      "plugin conformance 1.0.0 (" + dir + "/libfixture_conformance.so): pipelines " + names +
                      "\n8 pipeline(s) valid\n");
}

}  // namespace
}  // namespace ductwork::it
