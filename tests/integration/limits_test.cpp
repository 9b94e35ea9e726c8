// Limits at the door: nesting depth and size of JSON values, and numbers
// that would change silently. Each was found by an adversarial probe: a
// 50,000-deep argument crashed `trigger` (exit 139), 2k-40k gave an internal
// SQL error, 18446744073709551615 came back as 1.8446744073709552e+19, and a
// 10 MB output was stored (a 20 MB status document) while one too big for a
// row was recorded as a process crash and re-run forever.
#include "harness.h"

namespace ductwork::it {
namespace {

std::string nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inner + std::string(static_cast<size_t>(depth), ']');
}

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { ws_.define("echo.yml", chain_definition("EchoOne", {"Echo"})); }

  // trigger EchoOne ARG: exit 2, every needle on stderr, nothing written.
  void expect_refused(const std::string& arg, const std::vector<std::string>& needles) {
    SCOPED_TRACE(arg.size() > 60 ? arg.substr(0, 60) + "..." : arg);
    DbSnapshot before = ws_.snapshot();
    ProcessResult r = ws_.run({"trigger", "EchoOne", arg}, 30);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_EQ(r.out, "");
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "stderr lacks [" << n << "]: " << r.err;
    EXPECT_EQ(ws_.snapshot(), before) << "nothing may be written";
  }

  // The value Echo returned for ARG, read back through status --json.
  json echoed(const std::string& arg) {
    std::string id = ws_.trigger("EchoOne", {arg});
    if (id.empty()) return nullptr;
    ws_.drain();
    json doc = ws_.status(id);
    EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
    return doc["runs"][0]["steps"][0]["output"];
  }

  Workspace ws_;
};

TEST_F(LimitsTest, DeeplyNestedArgumentsAreRefusedAtTheDoor) {
  ASSERT_FALSE(ws_.trigger("EchoOne", {"0"}).empty());  // a database exists: it must stay as it is
  for (int depth : {511, 2000, 40000, 50000}) {
    expect_refused(nested(depth), {"argument 1 nests arrays/objects deeper than 510 levels"});
  }
  // Brackets inside strings are text, not nesting.
  EXPECT_EQ(echoed("\"" + std::string(5000, '[') + "\""), std::string(5000, '['));
}

// 510 levels: a step reads its input wrapped in its argument list (and, at a
// fan-in, in the siblings' list) with the SDK's 512-level parser.
TEST_F(LimitsTest, NestingUpToTheLimitRoundTripsThroughAStep) {
  json out = echoed(nested(510));
  int depth = 0;
  const json* at = &out;
  while (at->is_array()) {
    ++depth;
    ASSERT_EQ(at->size(), 1u);
    at = &(*at)[0];
  }
  EXPECT_EQ(depth, 510);
  EXPECT_EQ(*at, 1);
}

TEST_F(LimitsTest, SixtyFourBitIntegersRoundTripExactly) {
  EXPECT_EQ(echoed("9223372036854775807").dump(), "9223372036854775807");
  EXPECT_EQ(echoed("-9223372036854775808").dump(), "-9223372036854775808");
  EXPECT_EQ(echoed("[9007199254740993]").dump(), "[9007199254740993]") << "2^53 + 1 is not a double";
  EXPECT_EQ(echoed("0.1").dump(), "0.1");
  EXPECT_EQ(echoed("18446744073709551615").dump(), "18446744073709551615") << "UINT64_MAX";
  EXPECT_EQ(echoed("{\"a\": [9223372036854775808]}").dump(), "{\"a\":[9223372036854775808]}") << "2^63";
}

TEST_F(LimitsTest, SixtyFourBitIntegersRoundTripThroughTheRunContext) {
  ws_.define("ctx.yml", chain_definition("CtxRoundTrip", {"ContextSet", "ContextGet"}));
  const std::string value = R"({"max": 18446744073709551615, "min": -9223372036854775808, "two63": 9223372036854775808})";
  std::string id = ws_.trigger("CtxRoundTrip", {R"({"key": "numbers", "value": )" + value + "}"});
  ASSERT_FALSE(id.empty());
  ws_.drain();
  json doc = ws_.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"].dump(),
            R"({"max":18446744073709551615,"min":-9223372036854775808,"two63":9223372036854775808})");
}

TEST_F(LimitsTest, NumbersThatCannotBeKeptExactlyAreRefused) {
  expect_refused("18446744073709551616", {"argument 1", "the integer 18446744073709551616 does not fit in 64 bits",
                                          "pass it as a string"});
  expect_refused("-9223372036854775809", {"the integer -9223372036854775809 does not fit"});
  expect_refused("{\"a\": [99999999999999999999999]}", {"the integer 99999999999999999999999 does not fit"});
  expect_refused("1e309", {"argument 1", "is not valid JSON", "number overflow"});
}

TEST_F(LimitsTest, ArgumentsOverTheSizeLimitAreRefused) {
  ws_.write_config(ConfigOptions{DUCTWORK_PLUGIN_DIR, "max_output_bytes: 1024"});
  expect_refused("\"" + std::string(2000, 'x') + "\"",
                 {"argument 1 is 2002 bytes of JSON, more than the limit of 1024 (job_worker.max_output_bytes)"});
  std::string half = "\"" + std::string(600, 'x') + "\"";
  DbSnapshot before = ws_.snapshot();
  ProcessResult r = ws_.run({"trigger", "EchoOne", half, half});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("the arguments are 1204 bytes of JSON together"), std::string::npos) << r.err;
  EXPECT_EQ(ws_.snapshot(), before);
}

// An output over the limit fails the step (OutputTooLarge, a retry), never
// a crash: the step is not re-run on the crash budget.
TEST_F(LimitsTest, AnOutputOverTheLimitIsAFailureOfTheStep) {
  ws_.write_config(ConfigOptions{DUCTWORK_PLUGIN_DIR, "max_output_bytes: 1024, max_retry: 1"});
  ws_.define("big.yml", chain_definition("Big", {"Range", "Echo"}));
  std::string id = ws_.trigger("Big", {"1000"});  // [0, ..., 999]: about 3.9 KB
  ASSERT_FALSE(id.empty());
  ws_.drain();
  json doc = ws_.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_retries_exhausted");
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << executions.dump(2);
  for (const auto& e : executions) {
    EXPECT_EQ(e["result_type"], "failure");
    EXPECT_EQ(e["crash_count"], 0);
    EXPECT_EQ(e["error_klass"], "ductwork::OutputTooLarge");
    const std::string message = e["error_message"].get<std::string>();
    EXPECT_EQ(message.rfind("the output of step Range is ", 0), 0u) << message;
    EXPECT_NE(message.find("more than the limit of 1024"), std::string::npos) << message;
  }
}

TEST(LimitsConfigTest, MaxOutputBytesIsRangeChecked) {
  Workspace ws;
  ws.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  ws.write_config(ConfigOptions{DUCTWORK_PLUGIN_DIR, "max_output_bytes: 10"});
  ProcessResult r = ws.run({"validate"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("job_worker.max_output_bytes: expected an integer from 1024 to 536870912, got 10"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace ductwork::it
