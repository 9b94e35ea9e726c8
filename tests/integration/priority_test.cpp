// Priorities (issue 38 item 3) through the real binary: a backlog is
// claimed best priority first and oldest first within one (a trigger's
// --priority, the API's "priority", else the definition's `priority:`,
// else 0), job_worker.priority_aging ends the starvation of a job of a
// worse priority under a steady stream of better ones, and a bad priority
// is refused with nothing written. Both dialects.
#include "http_client.h"

namespace ductwork::it {
namespace {

// The first argument of every attempted job of `klass`, in the order the
// attempts started (ties by attempt id, which is time-ordered).
std::vector<int> attempt_order(const Workspace& ws, const std::string& klass) {
  const std::string rows = ws.sql(
      "SELECT j.input_args FROM attempts a JOIN executions e ON e.id = a.execution_id JOIN jobs j ON j.id = e.job_id "
      "WHERE j.klass = '" + klass + "' ORDER BY a.started_at, a.id");
  std::vector<int> out;
  std::istringstream lines(rows);
  for (std::string line; std::getline(lines, line);) {
    json args = json::parse(line, nullptr, false);
    if (args.is_object()) args = args["args"];
    if (!args.is_array() || args.empty()) {
      ADD_FAILURE() << "not an argument document: " << line;
      continue;
    }
    out.push_back(args[0].get<int>());
  }
  return out;
}

// Triggers `pipeline` once per number, in order, in one `trigger --from`;
// with `priority` given as --priority.
void trigger_each(const Workspace& ws, const std::string& pipeline, int from, int to,
                  const std::string& priority = "") {
  std::string lines;
  for (int i = from; i <= to; ++i) lines += "[" + std::to_string(i) + "]\n";
  const std::string file = ws.write("lines-" + std::to_string(from) + ".jsonl", lines);
  std::vector<std::string> args = {"trigger", pipeline, "--from", file};
  if (!priority.empty()) args.insert(args.end(), {"--priority", priority});
  ProcessResult r = ws.run(args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
}

TEST(PriorityTest, ABacklogIsClaimedBestPriorityFirstAndOldestFirstWithinOne) {
  ConfigOptions options;
  options.job_workers = 1;
  options.job_worker_extra = "batch: 1";
  Workspace ws(options);
  ws.define("one.yml", "pipeline: One\npriority: 5\nsteps:\n  - start: Inc\n");
  trigger_each(ws, "One", 1, 4);            // the definition's 5
  trigger_each(ws, "One", 11, 14, "9");     // last
  trigger_each(ws, "One", 21, 24, "0");     // first
  const std::string two = ws.trigger("One", {"31"});
  ProcessResult r = ws.run({"trigger", "One", "32", "--priority", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(ws.status(id)["runs"][0]["priority"], 2);
  EXPECT_EQ(ws.status(two)["runs"][0]["priority"], 5);
  ws.drain(60);
  EXPECT_EQ(attempt_order(ws, "Inc"),
            (std::vector<int>{21, 22, 23, 24, 32, 1, 2, 3, 4, 31, 11, 12, 13, 14}));
}

// One job of priority 9 waits behind a stream of priority-0 jobs that keeps
// the only worker busy for about four seconds. With aging at one second it
// runs within about two; with aging off it runs last, which is what aging
// is there to prevent.
TEST(PriorityTest, AgingEndsTheStarvationOfAWorsePriority) {
  for (const char* aging : {"1", "0"}) {
    SCOPED_TRACE(std::string("priority_aging: ") + aging);
    ConfigOptions options;
    options.job_workers = 1;
    options.job_worker_extra = std::string("batch: 1, priority_aging: ") + aging;
    Workspace ws;
    with_fixture_plugin(ws, "libstubborn.so", options);
    ws.define("sleepy.yml", chain_definition("Sleepy", {"StubbornSleep"}));
    // The starved job sleeps 1 ms, the stream's 20 ms each: the argument
    // tells them apart in the attempt order.
    ProcessResult late = ws.run({"trigger", "Sleepy", "1", "--priority", "9"});
    ASSERT_EQ(late.exit_code, 0) << late.describe();
    std::string lines;
    for (int i = 0; i < 200; ++i) lines += "[20]\n";
    ProcessResult stream = ws.run({"trigger", "Sleepy", "--from", ws.write("stream.jsonl", lines)});
    ASSERT_EQ(stream.exit_code, 0) << stream.describe();
    ws.drain(120);
    const std::vector<int> order = attempt_order(ws, "StubbornSleep");
    ASSERT_EQ(order.size(), 201u);
    const size_t position = std::find(order.begin(), order.end(), 1) - order.begin();
    if (std::string(aging) == "1") {
      // Long before the end. (Where it lands depends on how long the host
      // took to start: one that starts after the second has passed finds
      // it aged already and runs it first, so the position has no lower
      // bound; that it waited its second is checked below.)
      EXPECT_LT(position, 150u);
      const std::string waited = ws.sql(
          "SELECT a.started_at, e.started_at FROM attempts a JOIN executions e ON e.id = a.execution_id "
          "JOIN jobs j ON j.id = e.job_id "
          "WHERE CAST(j.input_args AS TEXT) LIKE '%[1]%'");
      const size_t bar = waited.find('|');
      ASSERT_NE(bar, std::string::npos) << waited;
      const double seconds = db_seconds(waited.substr(0, bar)) - db_seconds(waited.substr(bar + 1, waited.size() - bar - 2));
      EXPECT_GE(seconds, 0.9) << waited;
    } else {
      EXPECT_EQ(position, 200u) << "without aging the worse priority waits for the whole stream";
    }
  }
}

// A run's priority is on every job it queues: its chain's next steps, a
// fan-out's children and the fan-in, a retry; a revive keeps it.
TEST(PriorityTest, EveryJobOfARunCarriesItsPriorityAndAReviveKeepsIt) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  Workspace ws(options);
  ws.define("fan.yml",
            "pipeline: Fan\nsteps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n  - chain: Inc\n");
  ws.define("flaky.yml", chain_definition("Flaky", {"FailTimes", "Echo"}));
  log_queue_rows(ws);
  ProcessResult fan = ws.run({"trigger", "Fan", "5", "--priority", "4"});
  ASSERT_EQ(fan.exit_code, 0) << fan.describe();
  const std::string fan_id = fan.out.substr(0, fan.out.find('\n'));
  ProcessResult flaky = ws.run({"trigger", "Flaky", R"({"times": 1, "value": 7})", "--priority", "6"});
  ASSERT_EQ(flaky.exit_code, 0) << flaky.describe();
  const std::string flaky_id = flaky.out.substr(0, flaky.out.find('\n'));
  // Halts: FailTimes fails more often than max_retry allows.
  ProcessResult halting = ws.run({"trigger", "Flaky", R"({"times": 5, "value": 7})", "--priority", "8"});
  ASSERT_EQ(halting.exit_code, 0) << halting.describe();
  const std::string halted_id = halting.out.substr(0, halting.out.find('\n'));
  ws.drain(60);
  EXPECT_EQ(ws.status(fan_id)["status"], "completed");
  EXPECT_EQ(ws.status(flaky_id)["status"], "completed");
  ASSERT_EQ(ws.status(halted_id)["status"], "halted");
  // The priorities of the pipeline's queue rows as they were written, and
  // how many executions it had: a step a worker took as its advance
  // created it was never queued (its claim carried the priority).
  auto priorities_of = [&](const std::string& pipeline_id) {
    const std::string of_pipeline = " JOIN jobs j ON j.id = e.job_id JOIN steps s ON s.id = j.step_id JOIN runs r ON "
                                    "r.id = s.run_id WHERE r.pipeline_id = '" + pipeline_id + "'";
    return ws.sql("SELECT DISTINCT a.priority FROM queued_log a JOIN executions e ON e.id = a.execution_id" +
                  of_pipeline) +
           ws.sql("SELECT COUNT(*) FROM executions e" + of_pipeline);
  };
  // Range, five Doubles, Sum and Inc.
  EXPECT_EQ(priorities_of(fan_id), "4\n8\n");
  // FailTimes twice (a retry), then Echo.
  EXPECT_EQ(priorities_of(flaky_id), "6\n3\n");
  ProcessResult revived = ws.run({"revive", halted_id});
  ASSERT_EQ(revived.exit_code, 0) << revived.describe();
  json doc = ws.status(halted_id);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][1]["priority"], 8);
  EXPECT_EQ(priorities_of(halted_id), "8\n3\n") << "two attempts of the first run and the revived one";
}

TEST(PriorityTest, ABadPriorityIsRefusedAndNothingIsWritten) {
  Workspace ws;
  ws.define("one.yml", chain_definition("One", {"Inc"}));
  ws.trigger("One", {"1"});
  const DbSnapshot before = ws.snapshot();
  for (const char* bad : {"10", "-1", "x", "1.5", ""}) {
    SCOPED_TRACE(bad);
    ProcessResult r = ws.run({"trigger", "One", "2", "--priority", bad});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_EQ(r.err, std::string("ductwork trigger: --priority '") + bad +
                         "' is not a whole number from 0 (claimed first) to 9\n");
    ProcessResult from = ws.run({"trigger", "One", "--from", ws.write("l.jsonl", "[3]\n"), "--priority", bad});
    EXPECT_EQ(from.exit_code, 2) << from.describe();
  }
  EXPECT_EQ(ws.snapshot(), before);
}

TEST(PriorityApiTest, ATriggerBodyMayGiveThePriority) {
  Workspace ws(http_options());
  ws.define("one.yml", chain_definition("One", {"Inc"}));
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  Reply made = post(serve.address(), "/api/v1/pipelines/One/trigger", R"({"args":[1],"priority":7})");
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines/" + made.doc()["id"].get<std::string>()).doc()["runs"][0]["priority"],
            7);
  for (const char* bad : {"10", "-1", "\"1\"", "1.5", "null"}) {
    SCOPED_TRACE(bad);
    Reply r = post(serve.address(), "/api/v1/pipelines/One/trigger", std::string(R"({"args":[1],"priority":)") + bad + "}");
    EXPECT_EQ(r.status, 422) << r.body;
    EXPECT_NE(r.body.find("priority must be a whole number from 0 (claimed first) to 9"), std::string::npos) << r.body;
  }
  EXPECT_EQ(ws.list().size(), 1u) << "a refused trigger wrote nothing";
}

}  // namespace
}  // namespace ductwork::it
