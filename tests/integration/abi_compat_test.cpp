// The ABI's promise (docs/abi.md, SPEC §15): libabi_v1.so, built from the
// frozen copy of the first ABI-1 SDK headers (tests/fixtures/abi/v1), loads
// in this host and runs through the real binary — a chain of its exported
// pipeline, the run context, logging through the host, an ordinary error
// that is retried and a permanent one that is not. This test never skips:
// a missing fixture fails it.
#include <filesystem>

#include "harness.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

class AbiCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string fixture = std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libabi_v1.so";
    ASSERT_TRUE(fs::exists(fixture)) << fixture << " must be built with the tests (tests/fixtures/plugins)";
    ConfigOptions options;
    options.job_worker_extra = "max_retry: 1";
    with_fixture_plugin(ws_, "libabi_v1.so", options);
    ws_.define("fail.yml", chain_definition("V1Failing", {"V1Fail"}));
    ws_.define("permanent.yml", chain_definition("V1Halting", {"V1Permanent"}));
  }
  Workspace ws_;
};

TEST_F(AbiCompatTest, ThePluginIsListedAsAbi1WithItsStepsAndPipeline) {
  ProcessResult r = ws_.run({"plugins", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = parse_json(r.out, "plugins --json");
  json found;
  for (const auto& p : doc["plugins"]) {
    if (p["name"] == "abi_v1") found = p;
  }
  ASSERT_TRUE(found.is_object()) << doc.dump(2);
  EXPECT_EQ(found["abi_version"], 1);
  EXPECT_EQ(found["steps"], json::array({"V1Double", "V1Context", "V1Log", "V1Fail", "V1Permanent"}));
  EXPECT_EQ(found["pipelines"], 1);
  EXPECT_EQ(found["hooks"], json::array());
  EXPECT_TRUE(doc["refused"].empty()) << doc.dump(2);
}

TEST_F(AbiCompatTest, ItsExportedChainRunsWithContextAndLogging) {
  const std::string id = ws_.trigger("AbiV1Chain", {"5"});
  ASSERT_FALSE(id.empty());
  ProcessResult r = ws_.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = ws_.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 4u) << doc.dump(2);
  EXPECT_EQ(steps[0]["output"], 10);
  EXPECT_EQ(steps[1]["output"], 20);
  EXPECT_EQ(steps[2]["output"]["read_back"], 20) << steps[2].dump(2);
  EXPECT_EQ(steps[2]["output"]["idempotency_key"], steps[2]["idempotency_key"]) << steps[2].dump(2);
  EXPECT_EQ(steps[3]["output"], steps[2]["output"]);
  ProcessResult context = ws_.run({"context", id, "--json"});
  EXPECT_EQ(context.exit_code, 0) << context.describe();
  EXPECT_NE(context.out.find("\"v1_seen\":20"), std::string::npos) << context.describe();
  EXPECT_NE(r.out.find("abi v1 plugin logs through the host"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"step\":\"V1Log\""), std::string::npos) << "attributed to its step: " << r.out;
}

TEST_F(AbiCompatTest, AnOrdinaryErrorIsRetriedAndAPermanentOneIsNot) {
  const std::string failing = ws_.trigger("V1Failing");
  const std::string halting = ws_.trigger("V1Halting");
  ProcessResult r = ws_.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  json doc = ws_.status(failing);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  const json& retried = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(retried.size(), 2u) << "max_retry 1: the error was retried once: " << retried.dump(2);
  EXPECT_EQ(retried[0]["error_klass"], "std::out_of_range");
  EXPECT_EQ(retried[0]["error_message"], "abi v1 failure on attempt 0");
  EXPECT_EQ(retried[1]["error_message"], "abi v1 failure on attempt 1");

  doc = ws_.status(halting);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  const json& once = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(once.size(), 1u) << "a permanent error spends no retry: " << once.dump(2);
  EXPECT_EQ(once[0]["error_klass"], "AbiV1::Permanent");
  EXPECT_EQ(once[0]["error_message"], "abi v1 permanent failure");
  EXPECT_FALSE(once[0]["error_backtrace"].get<std::string>().empty());
}

}  // namespace
}  // namespace ductwork::it
