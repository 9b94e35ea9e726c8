// Pausing a pipeline (issue 38 item 4) through the real binary: `ductwork
// pause NAME` stops new attempts of its jobs on every host while running
// ones finish, triggers are still accepted, `start --drain` ends with the
// paused pipeline's runs parked and says so, `status --json` and `list` show
// it, and `unpause` lets everything run. The same through the HTTP API and
// the dashboard's buttons (headless Chromium). Both dialects.
#include "headless_browser.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

// Statuses of the run's steps, counted.
std::map<std::string, int> step_statuses(const json& run) {
  std::map<std::string, int> out;
  for (const auto& s : run["steps"]) ++out[s["status"].get<std::string>()];
  return out;
}

// The last line of a process's stdout.
std::string last_line(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

TEST(PauseTest, ARunningStepFinishesNoNewAttemptStartsAndUnpauseRunsTheRest) {
  Workspace ws;
  with_fixture_plugin(ws, "libstubborn.so", ConfigOptions{});
  ws.define("slow.yml", chain_definition("Slow", {"StubbornSleep", "Inc"}));
  ws.define("other.yml", chain_definition("Other", {"Inc"}));
  // Long enough that the pause and the two triggers below land while it
  // runs, even on a loaded machine (3.5 s was not under ASan: the drain
  // ended before `other` was triggered).
  const std::string first = ws.trigger("Slow", {"8000"});
  testsupport::Subprocess host(ws.command({"start", "--drain"}), ws.process_options(90));
  ASSERT_TRUE(eventually(30, [&] { return step_statuses(ws.status(first)["runs"][0])["in_progress"] == 1; }))
      << host.stdout_so_far();
  ProcessResult paused = ws.run({"pause", "Slow"});
  ASSERT_EQ(paused.exit_code, 0) << paused.describe();
  EXPECT_EQ(paused.out, "paused Slow: no new attempt of its jobs starts until `ductwork unpause Slow`\n");
  // Triggers are still accepted, of the paused pipeline and of others.
  const std::string second = ws.trigger("Slow", {"0"});
  const std::string other = ws.trigger("Other", {"1"});
  // The drain ends once the running step finished and nothing of Slow
  // moves any more: its own end is the event this test waits for.
  ProcessResult drained = host.wait(90);
  ASSERT_EQ(drained.exit_code, 0) << drained.describe();
  EXPECT_NE(last_line(drained.out).find("Drained: no run in progress; 2 pipeline(s) of a paused name parked until "
                                        "`ductwork unpause`"),
            std::string::npos)
      << drained.out;

  json doc = ws.status(first);
  EXPECT_EQ(doc["paused"], true);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 2u) << doc.dump(2);
  EXPECT_EQ(steps[0]["status"], "completed") << "the running step finished";
  EXPECT_EQ(steps[0]["executions"][0]["result_type"], "success");
  // The next step was made (the advance ran) but never attempted: no
  // worker took it, not even the one whose step came before it. It says why.
  EXPECT_EQ(steps[1]["executions"][0]["result_type"], nullptr) << doc.dump(2);
  EXPECT_EQ(steps[1]["waits_for"], "paused");
  EXPECT_EQ(steps[0]["waits_for"], nullptr);
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM attempts a JOIN executions e ON e.id = a.execution_id JOIN jobs j ON "
                   "j.id = e.job_id WHERE j.klass = 'Inc' AND j.step_id = '" +
                   steps[1]["id"].get<std::string>() + "'"),
            "0\n");
  EXPECT_EQ(ws.status(second)["runs"][0]["steps"][0]["executions"][0]["result_type"], nullptr);
  EXPECT_EQ(ws.status(other)["status"], "completed") << "another pipeline runs on";
  EXPECT_EQ(ws.status(other)["paused"], false);

  // `list` shows it: JSON and text.
  json listed = ws.list({"--pipeline", "Slow"});
  ASSERT_EQ(listed.size(), 2u) << listed.dump();
  for (const json& row : listed) EXPECT_EQ(row["paused"], true) << row.dump();
  EXPECT_EQ(ws.list({"--pipeline", "Other"})[0]["paused"], false);
  ProcessResult text = ws.run({"list", "--pipeline", "Slow"});
  EXPECT_EQ(count_of(text.out, "  (paused)\n"), 2u) << text.out;
  ProcessResult shown = ws.run({"status", first});
  EXPECT_NE(shown.out.find("(paused)"), std::string::npos) << shown.out;

  // Pausing again changes nothing and says so.
  ProcessResult again = ws.run({"pause", "Slow"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, "Slow was already paused (`ductwork unpause Slow` restarts it)\n");

  ProcessResult unpaused = ws.run({"unpause", "Slow"});
  ASSERT_EQ(unpaused.exit_code, 0) << unpaused.describe();
  EXPECT_EQ(unpaused.out, "unpaused Slow\n");
  EXPECT_EQ(ws.run({"unpause", "Slow"}).out, "Slow was not paused\n");
  ws.drain(60);
  doc = ws.status(first);
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["paused"], false);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], 8001);
  EXPECT_EQ(ws.status(second)["status"], "completed");
}

// `waits_for` on a queued step (issue 38 item 5): `delay` while its job is
// not due, `paused` while its pipeline is paused, null once it only waits
// for a worker, and for a step that is not queued.
TEST(PauseTest, AQueuedStepSaysWhyItWaits) {
  Workspace ws;
  ws.define("later.yml", "pipeline: Later\nsteps:\n  - start: Inc\n    delay: 3600\n");
  ws.define("now.yml", chain_definition("Now", {"Inc"}));
  const std::string later = ws.trigger("Later", {"1"});
  const std::string now = ws.trigger("Now", {"1"});
  EXPECT_EQ(ws.status(later)["runs"][0]["steps"][0]["waits_for"], "delay");
  EXPECT_EQ(ws.status(now)["runs"][0]["steps"][0]["waits_for"], nullptr) << "due: it waits for a worker only";
  ASSERT_EQ(ws.run({"pause", "Later"}).exit_code, 0);
  EXPECT_EQ(ws.status(later)["runs"][0]["steps"][0]["waits_for"], "paused");
  ASSERT_EQ(ws.run({"unpause", "Later"}).exit_code, 0);
  EXPECT_EQ(ws.status(later)["runs"][0]["steps"][0]["waits_for"], "delay");
  // Withdrawn: nothing of it is queued any more.
  ASSERT_EQ(ws.run({"cancel", later}).exit_code, 0);
  EXPECT_EQ(ws.status(later)["runs"][0]["steps"][0]["waits_for"], nullptr);
  ws.drain();
  json done = ws.status(now);
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["runs"][0]["steps"][0]["waits_for"], nullptr);
}

TEST(PauseTest, APausedPipelineWaitsInAThreadedHostToo) {
  ConfigOptions options;
  options.extra = "forking: none\n";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("Chain", {"Inc", "Inc"}));
  ASSERT_EQ(ws.run({"pause", "Chain"}).exit_code, 0);
  const std::string id = ws.trigger("Chain", {"1"});
  ProcessResult drained = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(drained.exit_code, 0) << drained.describe();
  EXPECT_NE(last_line(drained.out).find("1 pipeline(s) of a paused name parked"), std::string::npos) << drained.out;
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][0]["executions"][0]["result_type"], nullptr);
  ASSERT_EQ(ws.run({"unpause", "Chain"}).exit_code, 0);
  ws.drain(60);
  EXPECT_EQ(ws.status(id)["status"], "completed");
}

TEST(PauseTest, AnUnknownNameOrAMissingOneIsRefusedAndNothingIsWritten) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain", {"Inc"}));
  ws.trigger("Chain", {"1"});
  const DbSnapshot before = ws.snapshot();
  for (const std::string verb : {"pause", "unpause"}) {
    ProcessResult unknown = ws.run({verb, "Nope"});
    EXPECT_EQ(unknown.exit_code, 2) << unknown.describe();
    EXPECT_EQ(unknown.err, "ductwork " + verb + ": cannot " + verb + ": no pipeline named 'Nope' is defined\n");
    ProcessResult usage = ws.run({verb});
    EXPECT_EQ(usage.exit_code, 2) << usage.describe();
    EXPECT_NE(usage.err.find("usage: ductwork " + verb + " PIPELINE"), std::string::npos) << usage.err;
    EXPECT_EQ(ws.run({verb, "Chain", "Extra"}).exit_code, 2);
  }
  EXPECT_EQ(ws.snapshot(), before);
}

TEST(PauseApiTest, PauseAndUnpauseByNameWithTheToken) {
  Workspace ws(http_options());
  ws.define("chain.yml", chain_definition("Chain", {"Inc"}));
  const std::string id = ws.trigger("Chain", {"1"});
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();
  EXPECT_EQ(http(at, {.method = "POST", .path = "/api/v1/pipelines/Chain/pause", .body = "{}", .token = ""}).status,
            401);
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id).doc()["paused"], false);

  Reply paused = http(at, {.method = "POST", .path = "/api/v1/pipelines/Chain/pause", .body = "{}"});
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(paused.doc(), json::parse(R"({"pipeline":"Chain","paused":true,"changed":true})"));
  EXPECT_EQ(http(at, {.method = "POST", .path = "/api/v1/pipelines/Chain/pause"}).doc()["changed"], false);
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id).doc()["paused"], true);
  EXPECT_EQ(get(at, "/api/v1/pipelines?pipeline=Chain").doc()["pipelines"][0]["paused"], true);
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id + "/summary").doc()["paused"], true);

  Reply unknown = http(at, {.method = "POST", .path = "/api/v1/pipelines/Nope/pause", .body = "{}"});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.error_code(), "not_found");
  Reply extra = http(at, {.method = "POST", .path = "/api/v1/pipelines/Chain/unpause", .body = R"({"now":true})"});
  EXPECT_EQ(extra.status, 422) << extra.body;
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id).doc()["paused"], true) << "a refused request changed nothing";
  EXPECT_EQ(http(at, {.method = "GET", .path = "/api/v1/pipelines/Chain/pause"}).status, 405);

  Reply unpaused = http(at, {.method = "POST", .path = "/api/v1/pipelines/Chain/unpause", .body = "{}"});
  ASSERT_EQ(unpaused.status, 200) << unpaused.body;
  EXPECT_EQ(unpaused.doc(), json::parse(R"({"pipeline":"Chain","paused":false,"changed":true})"));
  ws.drain();
  EXPECT_EQ(ws.status(id)["status"], "completed");
}

TEST(PauseDashboardTest, TheOverviewsButtonsPauseAndUnpauseAPipeline) {
  ConfigOptions options;
  options.extra = "http: {listen: '127.0.0.1:0'}\n";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("Chain", {"Inc"}));
  ws.define("other.yml", chain_definition("Other", {"Inc"}));
  const std::string id = ws.trigger("Chain", {"1"});
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();

  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui"));
  const std::string pause_chain = "form[action=\"/ui/pause\"]:has(input[value=\"Chain\"]) button";
  ASSERT_TRUE(browser.click(pause_chain));
  ASSERT_TRUE(browser.wait_for_load("notice="));
  json shown = browser.evaluate("document.body.innerText");
  EXPECT_NE(shown.get<std::string>().find("paused Chain"), std::string::npos) << shown;
  EXPECT_EQ(browser.evaluate("document.querySelectorAll('form[action=\"/ui/unpause\"]').length"), 1)
      << "only Chain is paused";
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action=\"/ui/unpause\"] input[name=pipeline]').value"),
            "Chain");
  keep_screenshot(browser, "pause-overview");
  EXPECT_EQ(ws.status(id)["paused"], true);
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + id));
  EXPECT_EQ(browser.evaluate("document.querySelector('h1 .badge.paused') !== null"), true);

  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui"));
  ASSERT_TRUE(browser.click("form[action=\"/ui/unpause\"] button"));
  ASSERT_TRUE(browser.wait_for_load("notice="));
  shown = browser.evaluate("document.body.innerText");
  EXPECT_NE(shown.get<std::string>().find("unpaused Chain"), std::string::npos) << shown;
  EXPECT_EQ(browser.evaluate("document.querySelectorAll('form[action=\"/ui/unpause\"]').length"), 0);
  EXPECT_EQ(ws.status(id)["paused"], false);
}

}  // namespace
}  // namespace ductwork::it
