// Issue 41 item 10: a definition's on_halt step was given the halt reasons
// alone, and its call was nowhere to be seen but the log. Now it gets a
// second argument naming the failed steps with their error class and
// message (the first stays the halt reasons, so existing steps keep
// working), and `status --json`, `status` and the dashboard show the call:
// its status, when, and its error. Through the real binary, on SQLite and
// PostgreSQL.
#include <algorithm>
#include <map>

#include "http_client.h"

namespace ductwork::it {
namespace {

ConfigOptions no_retry(ConfigOptions options = {}) {
  options.job_worker_extra = "max_retry: 0";
  return options;
}

// Two branches of a divide fail (one out of retries, one permanently), one
// completes: the run halts with two reasons.
const char* const kTwoFailures =
    "pipeline: TwoFailures\non_halt: RecordHalt\nsteps:\n  - start: Echo\n"
    "  - divide: [Fail, FailPermanently, Echo]\n  - combine: Sum\n";

TEST(OnHaltTest, TheOnHaltStepIsToldTheFailedStepsAndTheirErrorsAndStatusShowsItsCall) {
  Workspace ws(no_retry());
  ws.define("two.yml", kTwoFailures);
  std::string id = ws.trigger("TwoFailures", {R"("the disk is full")"});
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);
  const json& run = doc["runs"][0];
  const std::string run_id = run["id"];

  // What the step received, as RecordHalt stored it in the run context.
  json context = parse_json(ws.run({"context", id, "--json"}).out, "context --json")["context"];
  ASSERT_TRUE(context.contains("halt_payload")) << "the on_halt step got one argument: " << context.dump(1);
  // The first argument is what it always was.
  EXPECT_EQ(context["halt_reasons"].size(), 2u) << context.dump(1);
  for (const char* reason : {"job_retries_exhausted", "job_error_not_retryable"}) {
    EXPECT_NE(std::find(context["halt_reasons"].begin(), context["halt_reasons"].end(), reason),
              context["halt_reasons"].end())
        << reason;
  }
  const json& payload = context["halt_payload"];
  EXPECT_EQ(payload["pipeline"], "TwoFailures");
  EXPECT_EQ(payload["pipeline_id"], id);
  EXPECT_EQ(payload["run_id"], run_id);
  EXPECT_EQ(payload["halt_reasons"], context["halt_reasons"]);
  EXPECT_EQ(payload["failures_total"], 2);
  ASSERT_EQ(payload["failures"].size(), 2u) << payload.dump(1);
  std::map<std::string, json> by_klass;
  for (const json& f : payload["failures"]) by_klass[f["klass"]] = f;
  // Each failure names the step as status does.
  std::map<std::string, json> steps;
  for (const json& s : run["steps"]) steps[s["klass"]] = s;
  const json& fail = by_klass["Fail"];
  EXPECT_EQ(fail["halt_reason"], "job_retries_exhausted");
  EXPECT_EQ(fail["error_klass"], "ductwork::testkit::IntentionalFailure");
  EXPECT_EQ(fail["error_message"], "Fail step always fails");
  EXPECT_EQ(fail["step_id"], steps["Fail"]["id"]);
  EXPECT_EQ(fail["node"], steps["Fail"]["node"]);
  EXPECT_EQ(fail["branch_id"], steps["Fail"]["branch_id"]);
  const json& permanent = by_klass["FailPermanently"];
  EXPECT_EQ(permanent["halt_reason"], "job_error_not_retryable");
  EXPECT_EQ(permanent["error_klass"], "ductwork::testkit::PermanentFailure");
  EXPECT_EQ(permanent["error_message"], "the disk is full");
  EXPECT_EQ(permanent["step_id"], steps["FailPermanently"]["id"]);

  // status --json: the call, with its end.
  ASSERT_TRUE(run["on_halt"].is_object()) << run.dump(1);
  const json& call = run["on_halt"];
  EXPECT_EQ(call["klass"], "RecordHalt");
  EXPECT_EQ(call["status"], "succeeded");
  EXPECT_TRUE(call["error_klass"].is_null());
  EXPECT_TRUE(call["error_message"].is_null());
  ASSERT_TRUE(call["started_at"].is_string());
  ASSERT_TRUE(call["completed_at"].is_string());
  EXPECT_GE(db_seconds(call["started_at"]), db_seconds(run["halted_at"]));
  EXPECT_GE(db_seconds(call["completed_at"]), db_seconds(call["started_at"]));
  ProcessResult text = ws.run({"status", id});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_NE(text.out.find("    on_halt RecordHalt succeeded  started " + call["started_at"].get<std::string>() +
                          "  finished " + call["completed_at"].get<std::string>() + "\n"),
            std::string::npos)
      << text.out;
}

TEST(OnHaltTest, AFailingOnHaltStepIsShownFailedWithItsErrorInStatusAndOnTheDashboard) {
  ConfigOptions options = no_retry(http_options());
  Workspace ws(options);
  ws.define("loud.yml", "pipeline: LoudHalt\non_halt: Fail\nsteps:\n  - start: Echo\n  - chain: Fail\n");
  ws.define("quiet.yml", chain_definition("QuietHalt", {"Echo", "Fail"}));
  std::string loud = ws.trigger("LoudHalt", {"1"});
  std::string quiet = ws.trigger("QuietHalt", {"1"});
  ws.drain();
  json doc = ws.status(loud);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);
  const json& call = doc["runs"][0]["on_halt"];
  ASSERT_TRUE(call.is_object()) << doc.dump(1);
  EXPECT_EQ(call["klass"], "Fail");
  EXPECT_EQ(call["status"], "failed");
  EXPECT_EQ(call["error_klass"], "ductwork::testkit::IntentionalFailure");
  EXPECT_EQ(call["error_message"], "Fail step always fails");
  EXPECT_TRUE(call["completed_at"].is_string());
  // A definition without on_halt: the key is there, null.
  json quiet_doc = ws.status(quiet);
  ASSERT_EQ(quiet_doc["status"], "halted");
  ASSERT_TRUE(quiet_doc["runs"][0].contains("on_halt"));
  EXPECT_TRUE(quiet_doc["runs"][0]["on_halt"].is_null());

  ProcessResult text = ws.run({"status", loud});
  EXPECT_NE(text.out.find("    on_halt Fail failed  started "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ductwork::testkit::IntentionalFailure: Fail step always fails"), std::string::npos)
      << text.out;

  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  Reply page = get(serve.address(), "/ui/pipelines/" + loud);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.body.find("<h2>on_halt</h2><p class=\"on-halt\"><code>Fail</code> <span class=\"badge failed\">"
                           "failed</span> started " +
                           call["started_at"].get<std::string>() + ", finished " +
                           call["completed_at"].get<std::string>() + "</p>"),
            std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("<p class=\"error\"><code>ductwork::testkit::IntentionalFailure</code>: Fail step always "
                           "fails</p>"),
            std::string::npos)
      << page.body;
  Reply quiet_page = get(serve.address(), "/ui/pipelines/" + quiet);
  ASSERT_EQ(quiet_page.status, 200);
  EXPECT_EQ(quiet_page.body.find("<h2>on_halt</h2>"), std::string::npos);
  // The API serves the same document.
  Reply api = get(serve.address(), "/api/v1/pipelines/" + loud);
  EXPECT_EQ(api.doc()["runs"][0]["on_halt"], call);
}

}  // namespace
}  // namespace ductwork::it
