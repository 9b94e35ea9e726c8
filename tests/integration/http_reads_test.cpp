// Issue 41 item 13: following a wide pipeline over HTTP without reading it
// whole. The summary (GET /api/v1/pipelines/{id}/summary, `status ID
// --summary`) is a few KB whatever the width and agrees with the full
// document; the steps page (GET …/steps?after=&limit=) gives every step of
// a run exactly once, in the full document's order, however many share a
// start time (a fan-out's children are queued in one instant).
#include <map>
#include <set>
#include <tuple>

#include "http_client.h"

namespace ductwork::it {
namespace {

using Counts = std::map<std::vector<std::string>, int64_t>;

// What the summary counts, counted from a run of the full document.
struct Expected {
  Counts nodes;          // (node, klass, status) -> steps
  Counts steps;          // (status) -> steps
  Counts branches;       // (status) -> branches
  Counts halt_reasons;   // (reason, node of the branch's last step) -> branches
  Counts dampened;       // (node of the branch's last step) -> branches
};

Expected count_run(const json& run) {
  Expected out;
  std::map<std::string, std::string> last_node;  // branch -> node of its last step (document order)
  for (const auto& s : run["steps"]) {
    ++out.nodes[{s["node"], s["klass"], s["status"]}];
    ++out.steps[{s["status"]}];
    last_node[s["branch_id"]] = s["node"];
  }
  for (const auto& b : run["branches"]) {
    ++out.branches[{b["status"]}];
    if (b["status"] == "halted") ++out.halt_reasons[{b["halt_reason"], last_node[b["id"]]}];
    if (b["status"] == "dampened") ++out.dampened[{last_node[b["id"]]}];
  }
  return out;
}

Expected read_summary(const json& run) {
  Expected out;
  for (const auto& n : run["nodes"]) out.nodes[{n["node"], n["klass"], n["status"]}] += n["count"].get<int64_t>();
  for (const auto& [status, n] : run["steps"]["by_status"].items()) out.steps[{status}] = n;
  for (const auto& [status, n] : run["branches"]["by_status"].items()) out.branches[{status}] = n;
  for (const auto& h : run["halt_reasons"]) out.halt_reasons[{h["reason"], h["node"]}] = h["count"];
  for (const auto& d : run["dampened"]) out.dampened[{d["node"]}] = d["count"];
  return out;
}

void expect_agrees(const json& summary_run, const json& full_run) {
  const Expected want = count_run(full_run), got = read_summary(summary_run);
  EXPECT_EQ(got.nodes, want.nodes);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(got.branches, want.branches);
  EXPECT_EQ(got.halt_reasons, want.halt_reasons);
  EXPECT_EQ(got.dampened, want.dampened);
  EXPECT_EQ(summary_run["steps"]["total"], full_run["steps"].size());
  EXPECT_EQ(summary_run["branches"]["total"], full_run["branches"].size());
  for (const char* field : {"id", "status", "started_at", "completed_at", "halted_at", "cancelled_at"}) {
    EXPECT_EQ(summary_run[field], full_run[field]) << field;
  }
}

// Every step of the run through the steps page, `limit` at a time.
std::vector<json> page_through(const std::string& at, const std::string& id, int limit, const std::string& run = "",
                               int* pages = nullptr) {
  std::vector<json> steps;
  std::string path = "/api/v1/pipelines/" + id + "/steps?limit=" + std::to_string(limit) +
                     (run.empty() ? "" : "&run=" + run);
  for (int page = 0; page < 100000; ++page) {
    Reply r = get(at, path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    if (r.status != 200) break;
    json doc = r.doc();
    EXPECT_LE(doc["steps"].size(), static_cast<size_t>(limit));
    for (auto& s : doc["steps"]) steps.push_back(s);
    if (pages) *pages = page + 1;
    if (doc["next_cursor"].is_null()) break;
    path = "/api/v1/pipelines/" + id + "/steps?limit=" + std::to_string(limit) +
           "&after=" + doc["next_cursor"].get<std::string>() + (run.empty() ? "" : "&run=" + run);
  }
  return steps;
}

TEST(HttpReadsTest, AWideRunsSummaryIsSmallAndItsStepsComeAPageAtATimeEachOnce) {
  Workspace ws(http_options());
  ws.define("wide.yml", "pipeline: Wide\nsteps:\n  - start: Range\n  - expand: Inc\n  - collapse: Sum\n");
  const std::string wide = ws.trigger("Wide", {"5000"});
  ws.drain(180);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();
  Reply full = get(at, "/api/v1/pipelines/" + wide);
  ASSERT_EQ(full.status, 200);
  const json doc = full.doc();
  ASSERT_EQ(doc["runs"][0]["steps"].size(), 5002u);

  // Its size, not its time, shows the summary is built from aggregates (a
  // time bound is a benchmark's, not a test's on two shared cores).
  Reply summary = get(at, "/api/v1/pipelines/" + wide + "/summary");
  ASSERT_EQ(summary.status, 200) << summary.body;
  // A few KB for 5,002 steps, where the full document is megabytes.
  EXPECT_LT(summary.body.size(), 4096u) << summary.body;
  EXPECT_GT(full.body.size(), 1000000u);
  const json s = summary.doc();
  EXPECT_EQ(s["id"], wide);
  EXPECT_EQ(s["pipeline"], "Wide");
  EXPECT_EQ(s["status"], "completed");
  for (const char* field : {"triggered_at", "completed_at", "halted_at", "cancelled_at"}) {
    EXPECT_EQ(s[field], doc[field]) << field;
  }
  ASSERT_EQ(s["runs"].size(), 1u);
  EXPECT_EQ(s["runs"][0]["id"], doc["runs"][0]["id"]);
  expect_agrees(s["run"], doc["runs"][0]);
  EXPECT_EQ(s["run"]["steps"]["by_status"]["completed"], 5002);
  ASSERT_EQ(s["run"]["nodes"].size(), 3u);
  const json inc = {{"node", doc["runs"][0]["steps"][1]["node"]}, {"klass", "Inc"}, {"status", "completed"}, {"count", 5000}};
  EXPECT_EQ(s["run"]["nodes"][1], inc);

  // The steps, 1,000 at a time (5,000 children share one start time): the
  // full document's steps, in its order, each once.
  int pages = 0;
  std::vector<json> paged = page_through(at, wide, 1000, "", &pages);
  EXPECT_EQ(pages, 6);
  ASSERT_EQ(paged.size(), 5002u);
  std::set<std::string> ids;
  for (size_t i = 0; i < paged.size(); ++i) {
    EXPECT_EQ(paged[i], doc["runs"][0]["steps"][i]) << "step " << i;
    ids.insert(paged[i]["id"]);
  }
  EXPECT_EQ(ids.size(), 5002u);
  // A page costs what it holds: the last page answers as fast as the first.
  Reply first_page = get(at, "/api/v1/pipelines/" + wide + "/steps");
  ASSERT_EQ(first_page.status, 200);
  EXPECT_EQ(first_page.doc()["steps"].size(), 100u) << "the default page";
  EXPECT_EQ(first_page.doc()["run_id"], doc["runs"][0]["id"]);
  EXPECT_TRUE(first_page.doc()["next_cursor"].is_string());

  // Bad input: 400 naming it, 404 for what does not exist, 405 for a post.
  for (const char* bad : {"limit=0", "limit=1001", "limit=2x", "after=zz", "after=41", "page=2"}) {
    Reply r = get(at, "/api/v1/pipelines/" + wide + "/steps?" + bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_EQ(r.error_code(), "bad_request") << bad;
  }
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + wide + "/summary?colour=red").status, 400);
  for (const std::string& path : {std::string("/api/v1/pipelines/no-such-id/summary"),
                                  std::string("/api/v1/pipelines/no-such-id/steps"),
                                  "/api/v1/pipelines/" + wide + "/summary?run=no-such-run",
                                  "/api/v1/pipelines/" + wide + "/steps?run=no-such-run"}) {
    Reply r = get(at, path);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
    EXPECT_EQ(r.error_code(), "not_found") << path;
  }
  EXPECT_EQ(post(at, "/api/v1/pipelines/" + wide + "/summary").status, 405);
}

TEST(HttpReadsTest, TheSummaryNamesHaltsAndDampenedBranchesAndEachRunOfARevivedPipeline) {
  ConfigOptions options = http_options();
  options.job_worker_extra = "max_retry: 0";
  Workspace ws(options);
  // Every child of the expand fails for good: three branches halted at
  // one node.
  ws.define("halts.yml", "pipeline: Halts\nsteps:\n  - start: Range\n  - expand: Fail\n  - collapse: Sum\n");
  ws.define("approval.yml",
            "pipeline: Approval\nsteps:\n  - start: Echo\n  - divide:\n    - [Inc, {dampen: Sum}]\n"
            "    - [Inc, Inc]\n  - combine: Sum\n");
  const std::string halted = ws.trigger("Halts", {"3"});
  const std::string parked = ws.trigger("Approval", {"1"});
  ws.drain(60);
  ASSERT_EQ(ws.status(halted)["status"], "halted");
  ASSERT_EQ(ws.status(parked)["status"], "dampened");
  ASSERT_EQ(ws.run({"revive", halted}).exit_code, 0);
  ws.drain(60);
  const json doc = ws.status(halted);
  ASSERT_EQ(doc["runs"].size(), 2u);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string& at = serve.address();

  // The latest run by default, any run by ?run=.
  json latest = get(at, "/api/v1/pipelines/" + halted + "/summary").doc();
  EXPECT_EQ(latest["run"]["id"], doc["runs"][1]["id"]);
  ASSERT_EQ(latest["runs"].size(), 2u);
  expect_agrees(latest["run"], doc["runs"][1]);
  const std::string first_run = doc["runs"][0]["id"];
  json first = get(at, "/api/v1/pipelines/" + halted + "/summary?run=" + first_run).doc();
  expect_agrees(first["run"], doc["runs"][0]);
  ASSERT_EQ(first["run"]["halt_reasons"].size(), 1u) << first.dump();
  EXPECT_EQ(first["run"]["halt_reasons"][0]["reason"], "job_retries_exhausted") << first.dump();
  EXPECT_EQ(first["run"]["halt_reasons"][0]["count"], 3);
  EXPECT_EQ(first["run"]["halt_reasons"][0]["node"].get<std::string>().rfind("Fail.", 0), 0u) << first.dump();

  json damp = get(at, "/api/v1/pipelines/" + parked + "/summary").doc();
  expect_agrees(damp["run"], ws.status(parked)["runs"][0]);
  ASSERT_EQ(damp["run"]["dampened"].size(), 1u) << damp.dump();
  EXPECT_EQ(damp["run"]["dampened"][0]["count"], 1);
  EXPECT_EQ(damp["run"]["dampened"][0]["node"].get<std::string>().rfind("Inc.", 0), 0u) << damp.dump();

  // Paging a few at a time, of either run: each step once, in order.
  for (int r = 0; r < 2; ++r) {
    const json& run = doc["runs"][r];
    std::vector<json> paged = page_through(at, halted, 3, run["id"]);
    ASSERT_EQ(paged.size(), run["steps"].size()) << "run " << r;
    for (size_t i = 0; i < paged.size(); ++i) EXPECT_EQ(paged[i], run["steps"][i]) << "run " << r << " step " << i;
  }

  // `status --summary --json` prints the same document; the text names
  // what halted where.
  ProcessResult cli = ws.run({"status", halted, "--summary", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out), latest);
  ProcessResult text = ws.run({"status", parked, "--summary"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("dampened at Inc."), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("latest run " + damp["run"]["id"].get<std::string>()), std::string::npos) << text.out;
  ProcessResult halted_text = ws.run({"status", halted, "--summary"});
  EXPECT_NE(halted_text.out.find("run " + first_run + "  halted"), std::string::npos) << halted_text.out;
  ProcessResult unknown = ws.run({"status", "no-such-id", "--summary"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown pipeline id 'no-such-id'"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace ductwork::it
