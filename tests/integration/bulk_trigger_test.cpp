// `ductwork trigger PIPELINE --from FILE`: one JSON array of arguments per
// line, every line checked before the first write, 1,000 pipelines per
// transaction, the ids printed in input order.
#include <map>
#include <set>
#include <sstream>

#include "harness.h"

namespace ductwork::it {
namespace {

// The lines of `text` ("a\nb\n" -> {a, b}).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The argument array of line `i` of the generated files: a number, a
// string and an object, so every kind of value makes the round trip.
json line_args(size_t i) {
  return json::array({static_cast<int64_t>(i), "item-" + std::to_string(i), {{"n", static_cast<int64_t>(i) * 3}}});
}

std::string numbered_lines(size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) text += line_args(i).dump() + "\n";
  return text;
}

class BulkTriggerTest : public ::testing::Test {
 protected:
  void SetUp() override { ws_.define("echo.yml", chain_definition("EchoOne", {"Echo"})); }

  // Every pipeline in the database: id -> the start step's arguments.
  std::map<std::string, json> stored_arguments() {
    std::map<std::string, json> out;
    std::string rows = ws_.sql(
        "SELECT p.id, j.input_args FROM pipelines p JOIN runs r ON r.pipeline_id = p.id "
        "JOIN steps s ON s.run_id = r.id JOIN jobs j ON j.step_id = s.id");
    for (const std::string& row : lines_of(rows)) {
      auto bar = row.find('|');
      if (bar == std::string::npos) {
        ADD_FAILURE() << "unexpected row [" << row << "]";
        continue;
      }
      out[row.substr(0, bar)] = parse_json(row.substr(bar + 1), "jobs.input_args")["args"];
    }
    return out;
  }

  int64_t pipeline_rows() {
    std::string n = ws_.sql("SELECT count(*) FROM pipelines");
    return n.empty() ? -1 : std::stoll(n);
  }

  // trigger EchoOne --from FILE holding `text`, expected to be refused:
  // exit 2, every needle on stderr, nothing on stdout, database unchanged.
  void expect_refused(const std::string& text, const std::vector<std::string>& needles) {
    std::string file = ws_.write("bad.jsonl", text);
    DbSnapshot before = ws_.snapshot();
    ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", file});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_EQ(r.out, "") << "no id may be printed";
    for (const auto& n : needles) {
      EXPECT_NE(r.err.find(n), std::string::npos) << "stderr lacks [" << n << "]: " << r.err;
    }
    EXPECT_EQ(ws_.snapshot(), before) << "nothing may be written";
  }

  Workspace ws_{empty_database()};
};

TEST_F(BulkTriggerTest, FileOf2500LinesBecomes2500PipelinesInThreeTransactionsIdsInInputOrder) {
  const size_t kLines = 2500;
  std::string file = ws_.write("args.jsonl", numbered_lines(kLines));
  ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", file}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.err, "");
  std::vector<std::string> ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), kLines);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), kLines) << "ids must be distinct";
  for (const std::string& id : ids) ASSERT_TRUE(is_single_uuid_line(id + "\n")) << "[" << id << "]";

  // Printed id i is the pipeline of line i, for every line.
  std::map<std::string, json> stored = stored_arguments();
  ASSERT_EQ(stored.size(), kLines);
  for (size_t i = 0; i < kLines; ++i) {
    auto found = stored.find(ids[i]);
    ASSERT_NE(found, stored.end()) << "printed id " << ids[i] << " (line " << i + 1 << ") is not in the database";
    ASSERT_EQ(found->second, line_args(i)) << "line " << i + 1;
  }
  // One transaction stamps all its rows with one instant: 1,000 + 1,000 + 500.
  EXPECT_EQ(ws_.sql("SELECT count(*) FROM pipelines GROUP BY triggered_at ORDER BY triggered_at"),
            "1000\n1000\n500\n");
  EXPECT_EQ(ws_.sql("SELECT count(*) FROM availabilities"), "2500\n");
  EXPECT_EQ(ws_.sql("SELECT count(DISTINCT definition_sha1) FROM runs"), "1\n");

  // status --json shows the arguments, at each batch's edges.
  for (size_t i : {size_t{0}, size_t{999}, size_t{1000}, size_t{1999}, size_t{2000}, kLines - 1}) {
    json doc = ws_.status(ids[i]);
    EXPECT_EQ(doc["pipeline"], "EchoOne");
    EXPECT_EQ(doc["status"], "in_progress");
    EXPECT_EQ(doc["runs"][0]["steps"][0]["input"], line_args(i)) << "line " << i + 1;
    EXPECT_EQ(doc["runs"][0]["steps"][0]["status"], "pending");
  }

  // They all run: Echo returns each pipeline's first argument.
  ws_.drain(100);
  EXPECT_EQ(ws_.sql("SELECT status, count(*) FROM pipelines GROUP BY status"), "completed|2500\n");
  json first = ws_.status(ids.front());
  EXPECT_EQ(first["runs"][0]["steps"][0]["output"], 0);
  json last = ws_.status(ids.back());
  EXPECT_EQ(last["status"], "completed");
  EXPECT_EQ(last["runs"][0]["steps"][0]["output"], static_cast<int64_t>(kLines - 1));
}

TEST_F(BulkTriggerTest, DashReadsStandardInput) {
  std::string file = ws_.write("args.jsonl", "[1, \"x\"]\n[]\n[[2, 3], null]\n");
  std::string command;
  for (const std::string& a : ws_.command({"trigger", "EchoOne", "--from", "-"})) command += "'" + a + "' ";
  testsupport::ProcessOptions options = ws_.process_options(30);
  // Through a pipe, not a file: standard input cannot be read twice.
  ProcessResult r = testsupport::run_process({"/bin/sh", "-c", "cat '" + file + "' | " + command}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::vector<std::string> ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), 3u) << r.out;
  EXPECT_EQ(ws_.status(ids[0])["runs"][0]["steps"][0]["input"], json::parse(R"([1, "x"])"));
  EXPECT_EQ(ws_.status(ids[1])["runs"][0]["steps"][0]["input"], json::array());
  EXPECT_EQ(ws_.status(ids[2])["runs"][0]["steps"][0]["input"], json::parse("[[2, 3], null]"));
}

// Line `[1, "x"]` is the same pipeline as `trigger EchoOne 1 '"x"'`.
TEST_F(BulkTriggerTest, ALineIsTheArgumentListOfOneSingleTrigger) {
  std::string single = ws_.trigger("EchoOne", {"1", "\"x\""});
  ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", ws_.write("one.jsonl", "[1, \"x\"]\n")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(is_single_uuid_line(r.out)) << r.out;
  std::string bulk = r.out.substr(0, r.out.size() - 1);
  json a = ws_.status(single), b = ws_.status(bulk);
  EXPECT_EQ(a["runs"][0]["steps"][0]["input"], b["runs"][0]["steps"][0]["input"]);
  EXPECT_EQ(a["runs"][0]["steps"][0]["node"], b["runs"][0]["steps"][0]["node"]);
  EXPECT_EQ(ws_.sql("SELECT count(DISTINCT definition_sha1) FROM runs"), "1\n") << "the same definition snapshot";
}

TEST_F(BulkTriggerTest, BlankLinesAreSkippedButCountedInLineNumbers) {
  std::string file = ws_.write("args.jsonl", "[1]\n\n   \n[2]\r\n\t\n[3]");  // no newline at the end
  ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", file});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::vector<std::string> ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), 3u) << r.out;
  EXPECT_EQ(ws_.status(ids[2])["runs"][0]["steps"][0]["input"], json::array({3}));
  expect_refused("[1]\n\n   \n[2]\r\n{bad\n[3]\n", {"line 5 of " + ws_.file("bad.jsonl"), "is not valid JSON"});
}

TEST_F(BulkTriggerTest, ABadLineInTheMiddleIsNamedAndNothingIsWritten) {
  const std::string good = "[1]\n[2]\n";
  const std::string tail = "[4]\n[5]\n";
  const std::string where = "line 3 of " + ws_.file("bad.jsonl");
  // No database yet: it is not even created.
  expect_refused(good + "{bad\n" + tail, {where + " ('{bad') is not valid JSON: unexpected byte 'b' in value"});
  EXPECT_FALSE(ws_.database_created());
  ASSERT_FALSE(ws_.trigger("EchoOne", {"0"}).empty());  // from here on a database exists and must stay as it is
  expect_refused(good + "{\"a\": 1}\n" + tail,
                 {where + " ('{\"a\": 1}') is a JSON object, not an array of arguments", "[1, \"x\"]"});
  expect_refused(good + "\"x\"\n" + tail, {where + " ('\"x\"') is a JSON string, not an array of arguments"});
  expect_refused(good + "[18446744073709551616]\n" + tail,
                 {where + ": the integer 18446744073709551616 does not fit in 64 bits"});
  expect_refused(good + "[1] [2]\n" + tail, {where, "is not valid JSON"});
  expect_refused(good + std::string(600, '[') + std::string(600, ']') + "\n" + tail,
                 {where + " nests arrays/objects deeper than 510 levels inside its argument array"});
  EXPECT_EQ(pipeline_rows(), 1);
}

// The bad line comes after two full batches' worth of good ones: still
// nothing is written, because every line is checked before the first batch.
TEST_F(BulkTriggerTest, ABadLineAfterTwoThousandGoodOnesWritesNothing) {
  ASSERT_FALSE(ws_.trigger("EchoOne", {"0"}).empty());
  expect_refused(numbered_lines(2400) + "[1,]\n" + numbered_lines(50),
                 {"line 2401 of " + ws_.file("bad.jsonl") + " ('[1,]') is not valid JSON"});
  EXPECT_EQ(pipeline_rows(), 1);
}

TEST_F(BulkTriggerTest, ALineOverTheArgumentSizeLimitIsRefused) {
  ws_.write_config(ConfigOptions{DUCTWORK_PLUGIN_DIR, "max_output_bytes: 1024"});
  // ["xxx..."]: 1,024 bytes is the limit itself and is accepted.
  std::string at_limit = "[\"" + std::string(1020, 'x') + "\"]";
  ASSERT_EQ(at_limit.size(), 1024u);
  ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", ws_.write("ok.jsonl", at_limit + "\n")});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(is_single_uuid_line(r.out)) << r.out;
  expect_refused("[1]\n" + at_limit.substr(0, 2) + "x" + at_limit.substr(2) + "\n",
                 {"line 2 of " + ws_.file("bad.jsonl") +
                  " is 1025 bytes of JSON, more than the limit of 1024 for one pipeline's arguments "
                  "(job_worker.max_output_bytes)"});
  EXPECT_EQ(pipeline_rows(), 1);
}

TEST_F(BulkTriggerTest, UnknownPipelineIsRefusedWithASuggestion) {
  std::string file = ws_.write("args.jsonl", "[1]\n");
  ProcessResult r = ws_.run({"trigger", "EchoOen", "--from", file});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("unknown pipeline 'EchoOen', did you mean 'EchoOne'? (defined: EchoOne)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(ws_.database_created());
}

TEST_F(BulkTriggerTest, FromTogetherWithArgumentsIsRefused) {
  std::string file = ws_.write("args.jsonl", "[1]\n");
  for (const auto& args : std::vector<std::vector<std::string>>{{"trigger", "EchoOne", "--from", file, "1"},
                                                                {"trigger", "EchoOne", "1", "--from=" + file}}) {
    ProcessResult r = ws_.run(args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("give no ARG_JSON with it (got '1')"), std::string::npos) << r.err;
  }
  ProcessResult twice = ws_.run({"trigger", "EchoOne", "--from", file, "--from", file});
  EXPECT_EQ(twice.exit_code, 2) << twice.describe();
  EXPECT_NE(twice.err.find("--from is given 2 times"), std::string::npos) << twice.err;
  ProcessResult no_value = ws_.run({"trigger", "EchoOne", "--from="});
  EXPECT_EQ(no_value.exit_code, 2) << no_value.describe();
  EXPECT_NE(no_value.err.find("--from needs a file path, or - for standard input"), std::string::npos)
      << no_value.err;
  EXPECT_FALSE(ws_.database_created());
}

TEST_F(BulkTriggerTest, MissingOrUnreadableFileIsNamed) {
  const std::string missing = ws_.file("no-such.jsonl");
  ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", missing});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("cannot read --from file " + missing + ": No such file or directory"), std::string::npos)
      << r.err;
  ProcessResult dir = ws_.run({"trigger", "EchoOne", "--from", ws_.definitions_dir()});
  EXPECT_EQ(dir.exit_code, 2) << dir.describe();
  EXPECT_NE(dir.err.find("cannot read --from file " + ws_.definitions_dir() + ": Is a directory"), std::string::npos)
      << dir.err;
  EXPECT_FALSE(ws_.database_created());
}

TEST_F(BulkTriggerTest, EmptyInputTriggersNothingAndOpensNoDatabase) {
  for (const std::string& text : {std::string(""), std::string("\n  \n\n")}) {
    ProcessResult r = ws_.run({"trigger", "EchoOne", "--from", ws_.write("empty.jsonl", text)});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
  }
  EXPECT_FALSE(ws_.database_created());
}

// A database failure in the third transaction: the first two batches stay,
// their 2,000 ids are printed, the third batch rolls back whole, exit 1 says
// how many were created.
TEST_F(BulkTriggerTest, ADatabaseFailureMidwayKeepsTheCommittedBatchesAndSaysHowMany) {
  std::string file = ws_.write("args.jsonl", numbered_lines(2500));
  ProcessResult r = ws_.run_with_env({"trigger", "EchoOne", "--from", file},
                                     {{"DUCTWORK_FAULT", "before_trigger_many_commit:raise:3"}}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("created 2000 of 2500 pipelines (their ids are printed above, in input order); the other 500 "
                       "were not written: fault injected at before_trigger_many_commit"),
            std::string::npos)
      << r.err;
  std::vector<std::string> ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), 2000u);
  std::map<std::string, json> stored = stored_arguments();
  ASSERT_EQ(stored.size(), 2000u);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto found = stored.find(ids[i]);
    ASSERT_NE(found, stored.end()) << ids[i];
    ASSERT_EQ(found->second, line_args(i)) << "line " << i + 1;
  }
  // Nothing of the failed batch: every table holds exactly the 2,000.
  for (const char* table : {"runs", "branches", "steps", "jobs", "executions", "availabilities"}) {
    EXPECT_EQ(ws_.sql(std::string("SELECT count(*) FROM ") + table), "2000\n") << table;
  }
}

}  // namespace
}  // namespace ductwork::it
