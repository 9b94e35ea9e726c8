// Deleting and pruning as operators see it (issue 37 items 3 and 5):
// `DELETE /api/v1/pipelines/{id}` (finished only, 409 otherwise, the
// bearer token), the Delete button of a finished pipeline's dashboard page
// clicked in headless Chromium, the metrics of what was pruned and of the
// database's size, and the space a prune gives back (SQLite in incremental
// auto-vacuum mode; `migrate --vacuum` for an older file). Both dialects.
#include <filesystem>

#include "headless_browser.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

TEST(DeletePipelineApiTest, OnlyAFinishedPipelineIsDeletedWholeWithTheToken) {
  ConfigOptions options = http_options();
  options.extra += "retention: {archive: kept}\n";
  Workspace ws(options);
  ws.define("done.yml", chain_definition("Done", {"Inc", "Inc"}));
  ws.define("approval.yml", kApprovalDefinition);
  const std::string done = ws.trigger("Done", {"1"});
  const std::string dampened = ws.trigger("Approval", {"1"});
  ws.drain();
  const std::string pending = ws.trigger("Done", {"2"});  // never drained
  const json document = ws.status(done);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();

  // No token, or only a read's: refused, nothing deleted.
  EXPECT_EQ(http(at, {.method = "DELETE", .path = "/api/v1/pipelines/" + done, .token = ""}).status, 401);
  EXPECT_EQ(ws.status(done)["status"], "completed");
  // Not finished: 409 naming the status; unknown: 404.
  for (const std::string& id : {dampened, pending}) {
    Reply r = http(at, {.method = "DELETE", .path = "/api/v1/pipelines/" + id});
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(r.error_code(), "conflict");
    EXPECT_NE(r.body.find("only a finished pipeline"), std::string::npos) << r.body;
  }
  EXPECT_EQ(ws.status(dampened)["status"], "dampened");
  Reply unknown = http(at, {.method = "DELETE", .path = "/api/v1/pipelines/no-such-id"});
  EXPECT_EQ(unknown.status, 404) << unknown.body;

  Reply deleted = http(at, {.method = "DELETE", .path = "/api/v1/pipelines/" + done});
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.doc()["id"], done);
  EXPECT_EQ(deleted.doc()["deleted"], true);
  EXPECT_GT(deleted.doc()["rows"].get<int>(), 5);
  EXPECT_EQ(deleted.doc()["archived"], ws.file("kept"));
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + done).status, 404);
  EXPECT_EQ(ws.every_row().find(done), std::string::npos) << "a row of it is left";
  // Archived first, as ductwork.yml says.
  ProcessResult archived = ws.run({"status", done, "--archive", ws.file("kept"), "--json"});
  ASSERT_EQ(archived.exit_code, 0) << archived.describe();
  EXPECT_EQ(json::parse(archived.out), document);
  EXPECT_EQ(http(at, {.method = "DELETE", .path = "/api/v1/pipelines/" + done}).status, 404) << "gone already";
  // The others still finish.
  ws.drain();
  EXPECT_EQ(ws.status(pending)["status"], "completed");
}

TEST(DeletePipelineApiTest, MetricsCountWhatWasPrunedAndTheDatabaseSize) {
  Workspace ws(http_options());
  ws.define("done.yml", chain_definition("Done", {"Inc"}));
  for (int i = 0; i < 3; ++i) ws.trigger("Done", {std::to_string(i)});
  ws.drain();
  ProcessResult pruned = ws.run({"prune", "--pipeline", "Done"});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.describe();
  ws.trigger("Done", {"9"});
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string text = get(serve.address(), "/metrics").body;
  EXPECT_EQ(metrics_sample(text, "ductwork_pruned_pipelines_total{pipeline=\"Done\"}"), 3) << text;
  // Pruned ones were triggered too: the total never goes back.
  EXPECT_EQ(metrics_sample(text, "ductwork_pipelines_triggered_total{pipeline=\"Done\"}"), 4) << text;
  const double bytes = metrics_sample(text, "ductwork_database_bytes");
  EXPECT_GT(bytes, 10000) << text;
  if (!ws.pg()) {
    // The file's pages, as SQLite counts them (what is still in the -wal included).
    EXPECT_EQ(std::to_string(static_cast<long long>(bytes)) + "\n",
              ws.sql("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"))
        << text;
  }
  EXPECT_NE(text.find("# TYPE ductwork_pruned_pipelines_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE ductwork_database_bytes gauge"), std::string::npos);
}

TEST(DeletePipelineDashboardTest, ClickingDeleteOnAFinishedPipelineRemovesIt) {
  ConfigOptions options;
  options.extra = "http: {listen: '127.0.0.1:0'}\n";
  Workspace ws(options);
  ws.define("done.yml", chain_definition("Done", {"Inc"}));
  ws.define("approval.yml", kApprovalDefinition);
  const std::string done = ws.trigger("Done", {"1"});
  const std::string dampened = ws.trigger("Approval", {"1"});
  ws.drain();
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();

  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + serve.address() + "/ui/pipelines/" + dampened));
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/delete\"]') === null"), true)
      << "a dampened pipeline offers no Delete";
  const std::string page = "http://" + serve.address() + "/ui/pipelines/" + done;
  ASSERT_TRUE(browser.open(page));
  // Without the box ticked the browser does not send the form: the form
  // is invalid as the browser judges it, and a click leaves the page as it is.
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/delete\"]').checkValidity()"), false);
  ASSERT_TRUE(browser.click("form[action$=\"/delete\"] button[type=submit]"));
  EXPECT_EQ(browser.url(), page);
  EXPECT_EQ(ws.status(done)["status"], "completed");
  ASSERT_TRUE(browser.click("form[action$=\"/delete\"] input[name=confirm]"));
  EXPECT_EQ(browser.evaluate("document.querySelector('form[action$=\"/delete\"]').checkValidity()"), true);
  keep_screenshot(browser, "delete-before");
  ASSERT_TRUE(browser.click("form[action$=\"/delete\"] button[type=submit]"));
  ASSERT_TRUE(browser.wait_for_load("notice="));
  EXPECT_EQ(browser.url().rfind("http://" + serve.address() + "/ui?notice=", 0), 0u) << browser.url();
  json shown = browser.evaluate("document.body.innerText");
  EXPECT_NE(shown.get<std::string>().find("deleted pipeline " + done), std::string::npos) << shown;
  keep_screenshot(browser, "delete-after");
  EXPECT_EQ(ws.run({"status", done}).exit_code, 2) << "deleted";
  EXPECT_EQ(ws.status(dampened)["status"], "dampened");
}

class PruneSpaceTest : public ::testing::Test {
 protected:
  void fill(Workspace& ws, int pipelines) {
    ws.define("done.yml", chain_definition("Done", {"Inc", "Inc", "Inc"}));
    std::string lines;
    for (int i = 0; i < pipelines; ++i) lines += "[" + std::to_string(i) + "]\n";
    ws.write("many.jsonl", lines);
    ProcessResult triggered = ws.run({"trigger", "Done", "--from", ws.file("many.jsonl")});
    ASSERT_EQ(triggered.exit_code, 0) << triggered.describe();
    ws.drain(120);
  }
};

TEST_F(PruneSpaceTest, APruneSaysHowBigTheDatabaseWasAndIsAndANewSqliteFileShrinks) {
  Workspace ws;
  fill(ws, 1500);
  ProcessResult r = ws.run({"prune"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const size_t line = r.out.find("database ");
  ASSERT_NE(line, std::string::npos) << r.out;
  long long before = 0, after = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + line, "database %lld bytes before, %lld after", &before, &after), 2) << r.out;
  if (ws.pg()) {
    EXPECT_NE(r.out.find("(autovacuum makes the deleted rows' space reusable)"), std::string::npos) << r.out;
    EXPECT_GT(before, 0);
    return;
  }
  EXPECT_EQ(ws.sql("PRAGMA auto_vacuum"), "2\n") << "a new file is in incremental mode";
  EXPECT_LT(after * 4, before) << r.out;
  EXPECT_EQ(static_cast<long long>(std::filesystem::file_size(ws.db_path())), after);
  EXPECT_EQ(ws.sql("PRAGMA freelist_count"), "0\n");
}

// A release hands the free pages back by switching the file to full
// auto-vacuum and back (Store::release_free_pages). A file a release left in
// full mode (its process died between the switches) goes back to
// incremental mode at the next release, and a prune then shrinks it as any.
TEST_F(PruneSpaceTest, AFileAReleaseLeftInFullModeGoesBackToIncremental) {
  Workspace ws;
  if (ws.pg()) GTEST_SKIP() << "SQLite's auto-vacuum modes";
  fill(ws, 600);
  ws.sql("PRAGMA auto_vacuum=FULL");
  ASSERT_EQ(ws.sql("PRAGMA auto_vacuum"), "1\n");
  ProcessResult first = ws.run({"prune", "--status", "halted"});  // finds nothing; releases
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_EQ(ws.sql("PRAGMA auto_vacuum"), "2\n");
  const auto full = std::filesystem::file_size(ws.db_path());
  ProcessResult r = ws.run({"prune"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(std::filesystem::file_size(ws.db_path()) * 4, full) << r.out;
  EXPECT_EQ(ws.sql("PRAGMA auto_vacuum"), "2\n") << "still incremental after handing pages back";
  EXPECT_EQ(ws.sql("PRAGMA freelist_count"), "0\n");
}

TEST_F(PruneSpaceTest, AnOlderSqliteFileIsToldHowToShrinkAndMigrateVacuumDoesIt) {
  Workspace ws;
  if (ws.pg()) {
    ProcessResult r = ws.run({"migrate", "--vacuum"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_NE(r.out.find("nothing to vacuum (PostgreSQL's autovacuum keeps the space reusable)"), std::string::npos)
        << r.out;
    return;
  }
  fill(ws, 800);
  // A file made before auto-vacuum (as every release before this one made them).
  ws.sql("PRAGMA auto_vacuum=NONE; VACUUM;");
  ASSERT_EQ(ws.sql("PRAGMA auto_vacuum"), "0\n");
  ProcessResult r = ws.run({"prune", "--older-than", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("bytes free inside the file for new rows; `ductwork migrate --vacuum`, with every host "
                       "stopped, lets the file shrink)"),
            std::string::npos)
      << r.out;
  const auto kept = std::filesystem::file_size(ws.db_path());
  ProcessResult vacuumed = ws.run({"migrate", "--vacuum"});
  ASSERT_EQ(vacuumed.exit_code, 0) << vacuumed.describe();
  EXPECT_NE(vacuumed.out.find("vacuumed: "), std::string::npos) << vacuumed.out;
  EXPECT_EQ(ws.sql("PRAGMA auto_vacuum"), "2\n");
  EXPECT_LT(std::filesystem::file_size(ws.db_path()) * 4, kept);
  // From now on a prune gives the space back by itself.
  fill(ws, 800);
  const auto full = std::filesystem::file_size(ws.db_path());
  ProcessResult again = ws.run({"prune"});
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_LT(std::filesystem::file_size(ws.db_path()) * 4, full) << again.out;
}

}  // namespace
}  // namespace ductwork::it
