// SPEC §18 through the real binary: `- await: STEP` parks a branch until an
// event whose key equals the value its match finds (JSON equality), `ductwork
// signal` and POST /api/v1/events deliver it, an event nobody waits for is
// kept for the first later await, a repeated idempotency key delivers
// nothing, a timeout halts (await_timeout, on_halt runs) or goes on with
// null, a cancel ends the wait and a revive waits again; bad input is
// refused with nothing written; a signal killed before its commit leaves
// nothing behind.
#include <chrono>
#include <set>
#include <thread>

#include "flow_support.h"
#include "harness.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

// Echo's output is its argument; the branch then waits for `paid` with the
// order's number, and Echo gets [order, payment].
const char* kOrder =
    "pipeline: Order\nsteps:\n  - start: Echo\n  - await: Echo\n    event: paid\n    match: /order\n";

// The last step of the pipeline's latest run.
json last_step(const Workspace& ws, const std::string& id) { return ws.status(id)["runs"].back()["steps"].back(); }

// The branches of the latest run that wait for an event.
std::vector<json> awaiting(const json& doc) {
  std::vector<json> out;
  for (const auto& b : doc["runs"].back()["branches"]) {
    if (b.contains("awaiting")) out.push_back(b["awaiting"]);
  }
  return out;
}

TEST(AwaitTest, ASignalReachesTheBranchesWhoseMatchEqualsItsKeyAndTheStepGetsTheValue) {
  Workspace ws;
  ws.define("order.yml", kOrder);
  const std::string a = ws.trigger("Order", {R"({"order": 42})"});
  const std::string b = ws.trigger("Order", {R"({"order": 7})"});
  const std::string c = ws.trigger("Order", {R"({"order": "42"})"});
  ws.drain();
  for (const std::string& id : {a, b, c}) {
    const json doc = ws.status(id);
    ASSERT_EQ(doc["status"], "dampened") << doc.dump(1);
    ASSERT_EQ(awaiting(doc).size(), 1u) << doc.dump(1);
    EXPECT_EQ(awaiting(doc)[0]["event"], "paid");
    EXPECT_EQ(awaiting(doc)[0]["any_key"], false);
    EXPECT_TRUE(awaiting(doc)[0]["deadline"].is_null());
  }
  EXPECT_EQ(awaiting(ws.status(a))[0]["key"], 42);
  EXPECT_EQ(awaiting(ws.status(c))[0]["key"], "42");
  const ProcessResult text = ws.run({"status", a});
  EXPECT_NE(text.out.find("awaits event paid with key 42"), std::string::npos) << text.out;

  // The number 42 reaches a (not c, whose key is the string "42").
  ProcessResult r = ws.run({"signal", "paid", "--key", "42", R"({"amount": 10})"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("delivered event paid to 1 branch of 1 pipeline"), std::string::npos) << r.out;
  // 7.0 equals 7 as JSON numbers; the string "42" reaches c.
  r = ws.run({"signal", "paid", "--key", "7.0", "--json", "[1, 2]"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json seven = json::parse(r.out);
  EXPECT_EQ(seven["delivered"], 1);
  EXPECT_EQ(seven["kept"], false);
  EXPECT_EQ(seven["pipeline_ids"], json::array({b}));
  ASSERT_EQ(ws.run({"signal", "paid", "--key", "\"42\""}).exit_code, 0);
  ws.drain();
  for (const std::string& id : {a, b, c}) EXPECT_EQ(ws.status(id)["status"], "completed") << ws.status(id).dump(1);
  EXPECT_EQ(last_step(ws, a)["input"], json::parse(R"([{"order": 42}, {"amount": 10}])"));
  EXPECT_EQ(last_step(ws, a)["to_transition"], "await");
  EXPECT_EQ(last_step(ws, b)["input"], json::parse(R"([{"order": 7}, [1, 2]])"));
  EXPECT_EQ(last_step(ws, c)["input"], json::parse(R"([{"order": "42"}, null])"));
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM event_waits"), 0);
}

TEST(AwaitTest, AnEventNobodyWaitsForIsKeptForTheFirstLaterAwaitOnly) {
  Workspace ws;
  ws.define("order.yml", kOrder);
  ProcessResult r = ws.run({"signal", "paid", "--key", "5", "--json", R"("early")"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(json::parse(r.out)["kept"], true);
  EXPECT_EQ(json::parse(r.out)["delivered"], 0);
  const std::string first = ws.trigger("Order", {R"({"order": 5})"});
  ws.drain();
  const std::string second = ws.trigger("Order", {R"({"order": 5})"});
  ws.drain();
  EXPECT_EQ(ws.status(first)["status"], "completed") << ws.status(first).dump(1);
  EXPECT_EQ(last_step(ws, first)["input"], json::parse(R"([{"order": 5}, "early"])"));
  // Taken once: the second order waits for an event of its own.
  EXPECT_EQ(ws.status(second)["status"], "dampened") << ws.status(second).dump(1);
  ASSERT_EQ(ws.run({"signal", "paid", "--key", "5", R"("late")"}).exit_code, 0);
  ws.drain();
  EXPECT_EQ(last_step(ws, second)["input"], json::parse(R"([{"order": 5}, "late"])"));
}

TEST(AwaitTest, ARepeatedIdempotencyKeyDeliversNothingAgain) {
  Workspace ws;
  ws.define("order.yml", kOrder);
  const std::string one = ws.trigger("Order", {R"({"order": 1})"});
  const std::string two = ws.trigger("Order", {R"({"order": 1})"});
  ws.drain();
  const std::vector<std::string> signal = {"signal", "paid", "--key", "1", "--idempotency-key", "pay-1", "--json",
                                           "9"};
  ProcessResult r = ws.run(signal);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json first = json::parse(r.out);
  EXPECT_EQ(first["delivered"], 2);  // every branch that waits for it
  EXPECT_EQ(first["repeated"], false);
  ws.drain();
  const std::string three = ws.trigger("Order", {R"({"order": 1})"});
  ws.drain();
  r = ws.run(signal);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json again = json::parse(r.out);
  EXPECT_EQ(again["repeated"], true);
  EXPECT_EQ(again["event_id"], first["event_id"]);
  EXPECT_EQ(again["delivered"], 2);
  ws.drain();
  EXPECT_EQ(ws.status(one)["status"], "completed");
  EXPECT_EQ(ws.status(two)["status"], "completed");
  EXPECT_EQ(ws.status(three)["status"], "dampened") << "a repeated signal reached a new waiter";
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM events"), 1);
}

TEST(AwaitTest, ATimeoutHaltsWithAwaitTimeoutOrGoesOnWithNull) {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.2}\n";
  Workspace ws(options);
  ws.define("halts.yml",
            "pipeline: Halts\non_halt: RecordHalt\nsteps:\n  - start: Echo\n  - await: Echo\n    event: never\n"
            "    timeout: 1\n");
  ws.define("goes_on.yml",
            "pipeline: GoesOn\nsteps:\n  - start: Inc\n  - await: Echo\n    event: never\n    timeout: 1.5\n"
            "    on_timeout: continue\n");
  const std::string halts = ws.trigger("Halts", {"1"});
  const std::string goes_on = ws.trigger("GoesOn", {"1"});
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(30, [&] {
    return ws.status(halts)["status"] == "halted" && ws.status(goes_on)["status"] == "completed";
  })) << ws.status(halts).dump(1) << ws.status(goes_on).dump(1) << host.stdout_so_far();
  const json halted = ws.status(halts);
  EXPECT_EQ(halted["runs"][0]["branches"][0]["halt_reason"], "await_timeout") << halted.dump(1);
  ASSERT_TRUE(eventually(10, [&] { return ws.status(halts)["runs"][0]["on_halt"].is_object(); }));
  EXPECT_EQ(ws.status(halts)["runs"][0]["on_halt"]["klass"], "RecordHalt");
  EXPECT_EQ(last_step(ws, goes_on)["input"], json::parse("[2, null]"));
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM event_waits"), 0);
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(60).exit_code, 0);
}

TEST(AwaitTest, ACancelEndsTheWaitAndAReviveWaitsAgain) {
  Workspace ws;
  ws.define("order.yml", kOrder);
  const std::string id = ws.trigger("Order", {R"({"order": 3})"});
  ws.drain();
  ASSERT_EQ(ws.run({"cancel", id}).exit_code, 0);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM event_waits"), 0);
  ProcessResult r = ws.run({"signal", "paid", "--key", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(json::parse(r.out)["delivered"], 0) << "a cancelled branch got the event";
  // The event was kept; the revived branch waits again and takes it.
  ASSERT_EQ(ws.run({"revive", id}).exit_code, 0);
  ws.drain();
  const json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(last_step(ws, id)["input"], json::parse(R"([{"order": 3}, null])"));
}

TEST(AwaitTest, PostApiV1EventsDeliversAndRefusesBadBodies) {
  Workspace ws(http_options());
  ws.define("order.yml", kOrder);
  const std::string id = ws.trigger("Order", {R"({"order": 8})"});
  ws.drain();
  Served served(ws, {"serve"});
  ASSERT_FALSE(served.address().empty());
  Reply reply = post(served.address(), "/api/v1/events",
                     R"({"name": "paid", "key": 8, "value": {"ok": true}, "idempotency_key": "k8"})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.doc()["delivered"], 1) << reply.body;
  EXPECT_EQ(reply.doc()["pipeline_ids"], json::array({id}));
  reply = post(served.address(), "/api/v1/events", R"({"name": "paid", "key": 8, "idempotency_key": "k8"})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.doc()["repeated"], true);
  EXPECT_EQ(post(served.address(), "/api/v1/events", R"({"name": "no spaces"})").status, 422);
  EXPECT_EQ(post(served.address(), "/api/v1/events", R"({"key": 1})").status, 422);
  EXPECT_EQ(post(served.address(), "/api/v1/events", R"({"name": "paid", "extra": 1})").status, 422);
  EXPECT_EQ(http(served.address(), Call{"POST", "/api/v1/events", R"({"name": "paid"})", "application/json", ""}).status,
            401);
  served.stop();
  ws.drain();
  EXPECT_EQ(last_step(ws, id)["input"], json::parse(R"([{"order": 8}, {"ok": true}])"));
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM events"), 1);
}

TEST(AwaitTest, BadSignalsAndBadAwaitsAreRefusedWithNothingWritten) {
  Workspace ws;
  ws.define("order.yml", kOrder);
  ASSERT_EQ(ws.run({"migrate"}).exit_code, 0);
  const DbSnapshot before = ws.snapshot();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"signal"}, "usage: ductwork signal NAME"},
      {{"signal", "has space"}, "an event name may only contain"},
      {{"signal", "paid", "{not json"}, "VALUE_JSON"},
      {{"signal", "paid", "--key", "[1,"}, "--key"},
      {{"signal", "paid", "--idempotency-key", ""}, "--idempotency-key needs a value"},
      {{"signal", "paid", "1", "2"}, "usage:"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = ws.run(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_EQ(ws.snapshot(), before);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"  - await: Echo\n", "order2.yml:4: pipeline Order2: 'await' needs 'event: NAME'"},
      {"  - await: Echo\n    event: paid\n    match: order\n", "the match of 'await' must be a JSON Pointer"},
      {"  - await: Echo\n    event: paid\n    on_timeout: continue\n", "'on_timeout: continue' but no 'timeout'"},
      {"  - await: Echo\n    event: paid\n    on_timeout: later\n    timeout: 5\n", "not 'later'"},
      {"  - chain: Echo\n    event: paid\n", "'event' goes with 'await: StepName' only"},
  };
  for (const auto& [steps, says] : bad) {
    Workspace w;
    w.define("order2.yml", "pipeline: Order2\nsteps:\n  - start: Echo\n" + steps);
    const ProcessResult r = w.run({"validate"});
    EXPECT_NE(r.exit_code, 0) << steps;
    EXPECT_NE(r.err.find(says), std::string::npos) << steps << "\n" << r.err;
  }
}

// A signal that dies just before its commit delivers nothing and records
// nothing; sent again, it delivers once.
TEST(AwaitDurabilityTest, ASignalDiesBeforeItsCommit) {
  for (const char* action : {"kill", "raise", "exit"}) {
    SCOPED_TRACE(action);
    Workspace ws;
    ws.define("order.yml", kOrder);
    const std::string id = ws.trigger("Order", {R"({"order": 4})"});
    ws.drain();
    const json before = ws.status(id);
    const DbSnapshot unchanged = ws.snapshot();
    const std::vector<std::string> signal = {"signal", "paid", "--key", "4", "--idempotency-key", "once", "44"};
    const ProcessResult r = ws.run_with_env(signal, {{"DUCTWORK_FAULT", std::string("before_event_commit:") + action}});
    EXPECT_NE(r.exit_code, 0) << r.describe();
    EXPECT_EQ(ws.status(id), before);
    EXPECT_EQ(ws.snapshot(), unchanged);
    ASSERT_EQ(ws.run(signal).exit_code, 0);
    ASSERT_EQ(ws.run(signal).exit_code, 0);
    ws.drain();
    EXPECT_EQ(ws.status(id)["status"], "completed");
    EXPECT_EQ(last_step(ws, id)["input"], json::parse(R"([{"order": 4}, 44])"));
    EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.pipeline_id = '" +
                                 id + "'"),
              2);
  }
}

// A host that dies ending a timed-out wait leaves the branch waiting, its
// wait row in place; the next host halts it once and calls on_halt once.
TEST(AwaitDurabilityTest, AHostDyingWhileItEndsATimeoutLeavesTheWaitWhole) {
  ConfigOptions options;
  options.extra = "forking: none\nsupervisor: {polling_timeout: 0.2}\n";
  Workspace ws(options);
  ws.define("halts.yml",
            "pipeline: Halts\non_halt: RecordHalt\nsteps:\n  - start: Echo\n  - await: Echo\n    event: never\n"
            "    timeout: 0.5\n");
  const std::string id = ws.trigger("Halts", {"1"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "dampened");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const json before = ws.status(id);
  {
    testsupport::ProcessOptions dying_options = ws.process_options(60);
    dying_options.env = {{"DUCTWORK_FAULT", "before_await_timeout_commit:kill"}};
    testsupport::Subprocess dying(ws.command({"start"}), dying_options);
    const ProcessResult died = dying.wait(60);
    EXPECT_NE(died.exit_code, 0) << died.describe();
  }
  EXPECT_EQ(ws.status(id), before) << "half-written by a host killed at before_await_timeout_commit";
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM event_waits"), 1);
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(30, [&] { return ws.status(id)["runs"][0]["on_halt"].is_object(); }))
      << ws.status(id).dump(1) << host.stdout_so_far();
  const json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "halted");
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "await_timeout");
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM on_halt_calls"), 1);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM event_waits"), 0);
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(60).exit_code, 0);
}

}  // namespace
}  // namespace ductwork::it
