// Issue 41 item 12: what the dashboard shows is true, and it stays out of
// a person's way, checked in a real headless Chromium driven over the
// DevTools protocol (headless_browser.h) as a person uses it over time: a
// revived run shows its own start times; a step shows when a worker took
// it, not when it was queued; the halt reason is on the page; a dampened branch is
// marked on the graph; the sign-in page has the pages' Content-Security-
// Policy; and a page that follows running work refreshes its figures in
// place, keeping what was typed into the trigger form and an opened
// backtrace. Screenshots go to <build>/test-artifacts/dashboard.
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "headless_browser.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

void screenshot(HeadlessBrowser& browser, const std::string& name) { keep_screenshot(browser, name); }

ConfigOptions open_http(const std::string& job_worker_extra = "") {
  ConfigOptions options;
  options.extra = "http: {listen: '127.0.0.1:0'}\n";  // loopback, no token: the browser needs no login
  options.job_worker_extra = job_worker_extra;
  return options;
}

// The rows of the table after the <h2> that starts with `heading`, each
// cell's text.
json table_after(HeadlessBrowser& browser, const std::string& heading) {
  return browser.evaluate(
      "(() => { const h = [...document.querySelectorAll('h2')].find(h => h.textContent.startsWith(" +
      json(heading).dump() +
      ")); if (!h) return null; return [...h.nextElementSibling.querySelectorAll('tr')].slice(1)"
      ".map(r => [...r.cells].map(c => c.textContent)); })()");
}

// Each step's first attempt (when a worker took it), from the database.
std::map<std::string, std::string> first_attempts(const Workspace& ws) {
  std::map<std::string, std::string> out;
  std::istringstream rows(ws.sql("SELECT s.id, MIN(a.started_at) FROM steps s JOIN jobs j ON j.step_id = s.id "
                                 "JOIN executions e ON e.job_id = j.id JOIN attempts a ON a.execution_id = e.id "
                                 "GROUP BY s.id"));
  std::string line;
  while (std::getline(rows, line)) {
    const size_t bar = line.find('|');
    if (bar != std::string::npos) out[line.substr(0, bar)] = line.substr(bar + 1);
  }
  return out;
}

TEST(DashboardTruthsTest, ARevivedRunShowsItsOwnStartTimesAndWhyItHalted) {
  Workspace ws(open_http("max_retry: 0"));
  ws.define("fails.yml", chain_definition("Fails", {"Echo", "FailPermanently"}));
  const std::string id = ws.trigger("Fails", {R"("the disk is full")"});
  ws.drain(60);
  ASSERT_EQ(ws.run({"revive", id}).exit_code, 0);
  ws.drain(60);
  const json doc = ws.status(id);
  ASSERT_EQ(doc["runs"].size(), 2u);
  ASSERT_EQ(doc["runs"][1]["status"], "halted");
  const std::string second_started = doc["runs"][1]["started_at"];
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + id));
  screenshot(browser, "revived-halted");

  // Why it halted, where.
  const json shown =
      browser.evaluate("document.querySelector('.halt') ? document.querySelector('.halt').textContent : ''");
  const std::string halt = shown.is_string() ? shown.get<std::string>() : "";
  EXPECT_TRUE(std::regex_search(halt, std::regex("^Halted: job_error_not_retryable at FailPermanently\\.\\w+ \\(1 branch\\)$")))
      << halt;

  // The revived run's nodes: Echo was copied from the first run, not run
  // again, so it shows no start; FailPermanently ran in this run.
  const json nodes = table_after(browser, "Nodes");
  ASSERT_TRUE(nodes.is_array() && nodes.size() == 2) << nodes.dump();
  for (const auto& row : nodes) {
    const std::string klass = row[1], first_started = row[4], last_completed = row[5];
    if (klass == "Echo") {
      EXPECT_EQ(first_started, "–") << row.dump();
      EXPECT_EQ(last_completed, "–") << row.dump();
    } else {
      EXPECT_EQ(klass, "FailPermanently");
      EXPECT_GE(first_started, second_started) << "a time of the shown run: " << row.dump();
    }
  }
  // The first run, asked for, shows its own times.
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + id +
                           "?run=" + doc["runs"][0]["id"].get<std::string>()));
  const json first_nodes = table_after(browser, "Nodes");
  ASSERT_TRUE(first_nodes.is_array() && first_nodes.size() == 2) << first_nodes.dump();
  for (const auto& row : first_nodes) {
    const std::string first_started = row[4];
    EXPECT_GE(first_started, doc["runs"][0]["started_at"].get<std::string>()) << row.dump();
    EXPECT_LT(first_started, second_started) << row.dump();
  }
}

TEST(DashboardTruthsTest, AStepShowsWhenAWorkerTookItNotWhenItWasQueued) {
  Workspace ws(open_http());
  ws.define("wide.yml", "pipeline: Wide\nsteps:\n  - start: Range\n  - expand: Inc\n  - collapse: Sum\n");
  define_echo(ws);
  const std::string wide = ws.trigger("Wide", {"300"});
  ws.drain(60);
  const std::string queued = ws.trigger("EchoTwice", {"1"});  // no host runs it
  const std::map<std::string, std::string> attempts = first_attempts(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");

  // The children were queued in one instant and taken one by one: each
  // row shows its own attempt's start.
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + wide));
  const json rows = browser.evaluate(
      "[...document.querySelectorAll('tr[data-step]')].map(r => [r.getAttribute('data-step'), r.cells[0].textContent, "
      "r.cells[2].textContent])");
  ASSERT_TRUE(rows.is_array() && rows.size() == 50) << rows.dump();
  int children = 0;
  for (const auto& row : rows) {
    auto it = attempts.find(row[0]);
    ASSERT_NE(it, attempts.end()) << row.dump();
    EXPECT_EQ(row[2], it->second) << row.dump();
    children += row[1] == "Inc";
  }
  EXPECT_EQ(children, 49);

  // A step no worker took yet shows no start.
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + queued));
  const json waiting =
      browser.evaluate("[...document.querySelectorAll('tr[data-step]')].map(r => r.cells[2].textContent)");
  EXPECT_EQ(waiting, json::array({"–"}));
  const json nodes = table_after(browser, "Nodes");
  ASSERT_EQ(nodes.size(), 1u) << nodes.dump();
  EXPECT_EQ(nodes[0][4], "–");
}

TEST(DashboardTruthsTest, ADampenedBranchIsMarkedOnTheGraph) {
  Workspace ws(open_http());
  ws.define("approval.yml", kApprovalDefinition);
  const std::string id = ws.trigger("Approval", {"1"});
  ws.drain(60);
  const json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "dampened");
  // The node the dampened branch stopped at: its last step's.
  std::string parked_branch, parked_node;
  for (const auto& b : doc["runs"][0]["branches"]) {
    if (b["status"] == "dampened") parked_branch = b["id"];
  }
  for (const auto& s : doc["runs"][0]["steps"]) {
    if (s["branch_id"] == parked_branch) parked_node = s["node"];
  }
  ASSERT_FALSE(parked_node.empty()) << doc.dump(2);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + id));
  screenshot(browser, "dampened");
  const std::string dom = browser.dom();
  EXPECT_NE(dom.find("<g class=\"node dampened parked\" data-node=\"" + parked_node + "\""), std::string::npos) << dom;
  EXPECT_EQ(count_of(dom, " parked\" data-node="), 1u) << "only where the branch waits";
  EXPECT_NE(dom.find("Dampened: parked at <code>" + parked_node + "</code> (1 branch) until a resume"),
            std::string::npos);
  EXPECT_NE(dom.find(">Resume</button>"), std::string::npos);
}

TEST(DashboardTruthsTest, TheSignInPageHasThePagesContentSecurityPolicy) {
  Workspace ws(http_options());
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  Reply page = get(serve.address(), "/ui");  // with the bearer token
  ASSERT_EQ(page.status, 200);
  const std::string policy = page.headers["Content-Security-Policy"];
  EXPECT_NE(policy.find("default-src 'self'"), std::string::npos) << policy;
  Reply login = get(serve.address(), "/ui/login", "");
  ASSERT_EQ(login.status, 200);
  EXPECT_NE(login.body.find("name=\"token\""), std::string::npos);
  EXPECT_EQ(login.headers["Content-Security-Policy"], policy);
  EXPECT_EQ(login.headers["X-Frame-Options"], "DENY");
  Reply missing = get(serve.address(), "/ui/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.headers["Content-Security-Policy"], policy) << "a refusal's page too";
}

TEST(DashboardTruthsTest, TheOverviewRefreshesInPlaceAndKeepsWhatWasTypedIntoTheTriggerForm) {
  Workspace ws(open_http());
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui"));
  EXPECT_EQ(browser.evaluate("document.body.getAttribute('data-refresh')"), "10");
  browser.evaluate("window.sameDocument = true");
  ASSERT_TRUE(browser.type("input[name=args]", "[42, \"half-typed"));
  ASSERT_EQ(browser.evaluate("document.querySelector('input[name=args]').value"), "[42, \"half-typed");

  // New figures arrive while the person types: the refresh shows them…
  ws.trigger("EchoTwice", {"1"});
  EXPECT_TRUE(browser.wait_for(
      "document.querySelector('[data-live=overview] a[href=\"/ui/pipelines?pipeline=EchoTwice&status=in_progress\"]')",
      30))
      << browser.dom();
  // …in the same document, the form as it was, the cursor still in it.
  EXPECT_EQ(browser.evaluate("window.sameDocument === true"), true);
  EXPECT_EQ(browser.evaluate("document.querySelector('input[name=args]').value"), "[42, \"half-typed");
  EXPECT_EQ(browser.evaluate("document.activeElement && document.activeElement.name"), "args");
  EXPECT_GE(std::stoi(browser.evaluate("document.body.getAttribute('data-refreshed')").get<std::string>()), 1);
  screenshot(browser, "overview-typed");
}

TEST(DashboardTruthsTest, ARunningPagesRefreshKeepsAnOpenedBacktraceOpen) {
  // The step fails once, then waits an hour for its retry: the pipeline
  // stays in progress, its page refreshing every 2 s.
  Workspace ws(open_http("max_retry: 3"));
  std::string config = testsupport::read_file(ws.config_path());
  const size_t delay = config.find("retry_delay: 0.05");
  ASSERT_NE(delay, std::string::npos) << config;
  ws.write_config_text(config.replace(delay, 17, "retry_delay: 3600"));
  ws.define("flaky.yml", chain_definition("Flaky", {"FailTimes"}));
  const std::string id = ws.trigger("Flaky", {R"({"times":3,"value":1})"});
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  ASSERT_TRUE(eventually(60, [&] {
    const json doc = ws.status(id);
    return !doc["runs"][0]["steps"][0]["executions"].empty() &&
           doc["runs"][0]["steps"][0]["executions"][0]["error_klass"].is_string();
  }));
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + host.address() + "/ui/pipelines/" + id));
  EXPECT_EQ(browser.evaluate("document.body.getAttribute('data-refresh')"), "2");
  const std::string backtrace = "document.querySelector('[data-live=run] details[data-key^=\"backtrace \"]')";
  ASSERT_EQ(browser.evaluate(backtrace + " !== null"), true) << browser.dom();
  browser.evaluate("window.sameDocument = true; " + backtrace + ".querySelector('summary').click()");
  ASSERT_EQ(browser.evaluate(backtrace + ".open"), true);

  // The pipeline changes (cancelled from the command line): the page shows
  // it — the badge, the withdrawn step — and stops refreshing…
  ProcessResult cancelled = ws.run({"cancel", id});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;
  EXPECT_TRUE(browser.wait_for("document.querySelector('[data-live=head] .badge').textContent === 'cancelled'", 30))
      << browser.dom();
  EXPECT_TRUE(browser.wait_for("document.querySelector('[data-live=run] tr[data-step] .badge').textContent === "
                               "'cancelled'",
                               30));
  EXPECT_EQ(browser.evaluate("document.body.getAttribute('data-refresh')"), "0");
  // …and the backtrace is still open, in the same document.
  EXPECT_EQ(browser.evaluate("window.sameDocument === true"), true);
  EXPECT_EQ(browser.evaluate(backtrace + ".open"), true);
  screenshot(browser, "running-backtrace-open");
}

}  // namespace
}  // namespace ductwork::it
