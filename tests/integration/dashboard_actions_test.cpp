// The dashboard's buttons pressed as a person presses them (issue 41 item
// 17): a pipeline's page loaded in headless Chromium, the Cancel and
// Resume buttons clicked with the mouse (a value typed into the Resume
// form's field first), and what the click did read back from the database;
// and the security headers of docs/dashboard.md ("X-Frame-Options: DENY",
// a Content-Security-Policy that allows nothing but this server) as the
// browser enforces them: no page can frame a dashboard page, and a script
// or a request to anywhere else is refused in it.
#include "headless_browser.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

// A loopback server without a token: the browser needs no login (the CSRF
// and origin checks still hold).
ConfigOptions browser_options() {
  ConfigOptions options;
  options.extra = "http: {listen: '127.0.0.1:0'}\nsupervisor: {polling_timeout: 0.1}\n";
  return options;
}

TEST(DashboardActionsTest, ClickingCancelStopsARunningPipeline) {
  Workspace ws(browser_options());
  ws.define("gated.yml", chain_definition("Gated", {"Gate", "Inc"}));
  const std::string gate = ws.file("gate-open");
  const std::string id = ws.trigger("Gated", {json{{"file", gate}, {"value", 1}}.dump()});
  // A host runs it, so the click also has to stop a step in flight.
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  ASSERT_TRUE(eventually(30, [&] { return ws.status(id)["runs"][0]["steps"][0]["status"] == "in_progress"; }))
      << host.process().stdout_so_far();

  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  const std::string page = "http://" + host.address() + "/ui/pipelines/" + id;
  ASSERT_TRUE(browser.open(page));
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/revive\"]') === null"), true)
      << "a running pipeline offers no Revive";
  ASSERT_TRUE(browser.click("form[action$=\"/cancel\"] button[type=submit]"));
  ASSERT_TRUE(browser.wait_for_load("notice="));
  EXPECT_EQ(browser.url().rfind(page + "?notice=", 0), 0u) << browser.url();
  EXPECT_EQ(browser.document().value("status", 0), 200);

  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "cancelled") << doc.dump(1);
  EXPECT_FALSE(doc["cancelled_at"].is_null());
  // The page the browser landed on says so, and offers Revive instead.
  json shown = browser.evaluate("document.body.innerText");
  EXPECT_NE(shown.get<std::string>().find("cancelled"), std::string::npos) << shown;
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/cancel\"]') === null"), true);
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/revive\"] button') !== null"), true);
  // The Gate step saw its cancellation flag and ended; nothing ran after it.
  ASSERT_TRUE(eventually(10, [&] {
    return !ws.status(id)["runs"][0]["steps"][0]["executions"][0]["result_type"].is_null();
  })) << ws.status(id).dump(1);
  ASSERT_TRUE(a_later_run_completes(ws, "Gated", {json{{"file", ws.write("open", "")}, {"value", 1}}.dump()}));
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"].size(), 1u) << "the cancelled branch advanced";
  EXPECT_EQ(host.stop().exit_code, 0);
}

TEST(DashboardActionsTest, TypingAValueAndClickingResumeResumesADampenedPipeline) {
  Workspace ws(browser_options());
  ws.define("approval.yml", kApprovalDefinition);
  const std::string id = ws.trigger("Approval", {"1"});
  ws.drain(60);
  ASSERT_EQ(ws.status(id)["status"], "dampened");
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();

  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  const std::string page = "http://" + serve.address() + "/ui/pipelines/" + id;
  ASSERT_TRUE(browser.open(page));
  ASSERT_TRUE(browser.type("form[action$=\"/resume\"] input[name=value]", "5"));
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/resume\"] input[name=value]').value"), "5");
  ASSERT_TRUE(browser.click("form[action$=\"/resume\"] button[type=submit]"));
  ASSERT_TRUE(browser.wait_for_load("notice="));
  EXPECT_EQ(browser.url().rfind(page + "?notice=", 0), 0u) << browser.url();

  // The parked branch got its step back with [previous output, 5]: Sum(2, 5)
  // = 7, and the combine 7 + 3.
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "in_progress") << doc.dump(1);
  ws.drain(60);
  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(doc["runs"][0]["steps"].back()["output"], 10) << doc.dump(1);
  serve.stop();
}

TEST(DashboardActionsTest, TheBrowserEnforcesTheSecurityHeaders) {
  Workspace ws(browser_options());
  define_echo(ws);
  const std::string id = ws.trigger("EchoTwice", {"1"});
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string base = "http://" + serve.address();

  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  for (const std::string& path : std::vector<std::string>{"/ui", "/ui/pipelines", "/ui/pipelines/" + id, "/ui/errors",
                                                               "/ui/processes"}) {
    SCOPED_TRACE(path);
    ASSERT_TRUE(browser.open(base + path));
    const json& headers = browser.document()["headers"];
    EXPECT_EQ(browser.document().value("status", 0), 200);
    EXPECT_EQ(headers.value("X-Frame-Options", ""), "DENY") << headers.dump();
    EXPECT_EQ(headers.value("X-Content-Type-Options", ""), "nosniff") << headers.dump();
    EXPECT_NE(headers.value("Content-Security-Policy", "").find("default-src 'self'"), std::string::npos)
        << headers.dump();
  }

  // A script put into the page does not run: the policy names the
  // directive that refused it (the violation event is what is waited for).
  const json inline_script = browser.evaluate(
      "new Promise(done => {"
      "  document.addEventListener('securitypolicyviolation', e => done(e.effectiveDirective), {once: true});"
      "  const s = document.createElement('script'); s.textContent = 'window.injected = true';"
      "  document.body.appendChild(s);"
      "  setTimeout(() => done(window.injected ? 'the script ran' : 'no violation reported'), 10000);"
      "})");
  EXPECT_EQ(inline_script, "script-src-elem");
  EXPECT_EQ(browser.evaluate("window.injected === undefined"), true);
  // Nor does the page reach another origin (here the same server under
  // another name, so only the policy can refuse it).
  const std::string elsewhere = "http://localhost:" + serve.address().substr(serve.address().rfind(':') + 1);
  const json fetched = browser.evaluate(
      "new Promise(done => {"
      "  document.addEventListener('securitypolicyviolation', e => done(e.effectiveDirective), {once: true});"
      "  fetch(" + json(elsewhere + "/healthz").dump() + ").then(() => done('fetched'), () => {});"
      "  setTimeout(() => done('no violation reported'), 10000);"
      "})");
  EXPECT_EQ(fetched, "connect-src");

  // No page can frame the dashboard, not even one of its own (so neither
  // can another site's, to have it clicked through): the frame holds the
  // browser's error page, whose document the page cannot reach. /healthz,
  // sent without the header, shows that a frame that loads is readable.
  auto framed = [&](const std::string& path) {
    return browser.evaluate(
        "new Promise(done => {"
        "  const f = document.createElement('iframe'); f.src = " + json(path).dump() + ";"
        "  f.onload = () => { let d = null; try { d = f.contentDocument; } catch (e) {}"
        "    done(d && d.body ? 'shown: ' + d.body.innerText.slice(0, 200) : 'blocked'); };"
        "  document.body.appendChild(f);"
        "  setTimeout(() => done('the frame never loaded'), 20000);"
        "})");
  };
  ASSERT_TRUE(browser.open(base + "/ui"));
  const json health = framed("/healthz");
  EXPECT_TRUE(health.is_string() && health.get<std::string>().find("shown: {\"status\":\"ok\"}") == 0) << health;
  for (const std::string& path : std::vector<std::string>{"/ui", "/ui/pipelines/" + id, "/ui/processes"}) {
    EXPECT_EQ(framed(path), "blocked") << path;
  }
  serve.stop();
}

}  // namespace
}  // namespace ductwork::it
