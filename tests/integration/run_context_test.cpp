// Issue 41 item 7: a revive without --duplicate-context used to leave the
// original run context unreachable, since a later --duplicate-context
// copied the newest (empty) run's. Now --duplicate-context takes the newest
// run that has context, --context-from RUN names the run, and `ductwork
// context` / GET /api/v1/pipelines/{id}/context read any run's context.
// Through the real binary, on SQLite and PostgreSQL.
#include "http_client.h"

namespace ductwork::it {
namespace {

// A pipeline whose first step sets context and whose second always fails:
// every run halts, and only the first run ever sets a value (a revive
// copies the completed ContextSet step, it does not run it again).
const char* const kColour = R"({"key": "colour", "value": {"name": "teal", "n": 7}})";
const char* const kColourValue = R"({"n":7,"name":"teal"})";

ConfigOptions no_retry(ConfigOptions options = {}) {
  options.job_worker_extra = "max_retry: 0";
  return options;
}

void define_halting(Workspace& ws) { ws.define("ctx.yml", chain_definition("CtxThenFail", {"ContextSet", "Fail"})); }

// Revives `id` with `extra` options and runs the new run to its halt;
// returns the new run's id.
std::string revive_and_halt(const Workspace& ws, const std::string& id, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"revive", id};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult r = ws.run(args);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  ws.drain();
  EXPECT_EQ(ws.status(id)["status"], "halted");
  return r.out.substr(0, r.out.find('\n'));
}

std::string context_rows(const Workspace& ws, const std::string& run_id) {
  return ws.sql("SELECT key || '=' || serialized_value FROM tuples WHERE run_id = '" + run_id + "' ORDER BY key");
}

// What a refused revive must leave exactly as it was: every run, pipeline
// and context value, by content.
std::string revive_state(const Workspace& ws) {
  return ws.sql("SELECT id || ' ' || status FROM pipelines ORDER BY id") +
         ws.sql("SELECT id || ' ' || status FROM runs ORDER BY id") +
         ws.sql("SELECT run_id || ' ' || key || '=' || serialized_value FROM tuples ORDER BY run_id, key");
}

TEST(RunContextTest, DuplicateContextAfterAPlainReviveCopiesTheNewestRunThatHasContext) {
  Workspace ws(no_retry());
  define_halting(ws);
  std::string id = ws.trigger("CtxThenFail", {kColour});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "halted");
  const std::string first = ws.status(id)["runs"][0]["id"];
  ASSERT_EQ(context_rows(ws, first), std::string("colour=") + kColourValue + "\n");

  // A revive without the copy: run 2 halts again with an empty context.
  std::string second = revive_and_halt(ws, id);
  ASSERT_EQ(context_rows(ws, second), "");
  // Then the copy: run 3 gets run 1's values, not run 2's nothing.
  std::string third = revive_and_halt(ws, id, {"--duplicate-context"});
  EXPECT_EQ(context_rows(ws, third), std::string("colour=") + kColourValue + "\n");
  EXPECT_EQ(ws.status(id)["runs"].size(), 3u);
}

TEST(RunContextTest, ContextFromNamesTheRunToCopyAndABadRunIsRefusedWithNothingWritten) {
  Workspace ws(no_retry());
  define_halting(ws);
  std::string id = ws.trigger("CtxThenFail", {kColour});
  ws.drain();
  std::string second = revive_and_halt(ws, id);
  // Run 2 is named, though run 1 has the values: its empty context is copied.
  std::string third = revive_and_halt(ws, id, {"--context-from", "2"});
  EXPECT_EQ(context_rows(ws, third), "");
  std::string fourth = revive_and_halt(ws, id, {"--context-from=1"});
  EXPECT_EQ(context_rows(ws, fourth), std::string("colour=") + kColourValue + "\n");

  const DbSnapshot before = ws.snapshot();
  const std::string state = revive_state(ws);
  for (std::string bad : {"9", "5"}) {
    ProcessResult r = ws.run({"revive", id, "--context-from", bad});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find("cannot revive: --context-from: pipeline " + id + " has no run " + bad +
                         " (its runs are numbered 1 to 4"),
              std::string::npos)
        << r.err;
  }
  for (std::string bad : {"0", "-1", "x", "1.5", ""}) {
    ProcessResult r = ws.run({"revive", id, "--context-from=" + bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.describe();
    EXPECT_NE(r.err.find("--context-from '" + bad + "' is not a run number"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ws.snapshot(), before);
  EXPECT_EQ(revive_state(ws), state) << "a refused revive changed something";
  EXPECT_EQ(ws.status(id)["status"], "halted");
}

TEST(RunContextTest, TheContextCommandPrintsAnyRunsContextAndSaysWhichRun) {
  Workspace ws(no_retry());
  define_halting(ws);
  std::string id = ws.trigger("CtxThenFail", {kColour});
  ws.drain();
  std::string second = revive_and_halt(ws, id);
  const json runs = ws.status(id)["runs"];

  // Default: the newest run, which has nothing; the text says where the values are.
  ProcessResult newest = ws.run({"context", id});
  ASSERT_EQ(newest.exit_code, 0) << newest.describe();
  EXPECT_NE(newest.out.find("run 2 of 2  " + second + "  halted"), std::string::npos) << newest.out;
  EXPECT_NE(newest.out.find("(no context values)"), std::string::npos) << newest.out;
  EXPECT_NE(newest.out.find("run 1 has 1: ductwork context " + id + " --run 1"), std::string::npos) << newest.out;

  ProcessResult first = ws.run({"context", id, "--run", "1"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_NE(first.out.find("run 1 of 2  " + runs[0]["id"].get<std::string>()), std::string::npos) << first.out;
  EXPECT_NE(first.out.find(std::string("colour = ") + kColourValue + "\n"), std::string::npos) << first.out;

  ProcessResult as_json = ws.run({"context", id, "--run=1", "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.describe();
  json doc = parse_json(as_json.out, "context --json");
  EXPECT_EQ(doc["id"], id);
  EXPECT_EQ(doc["pipeline"], "CtxThenFail");
  EXPECT_EQ(doc["run"], 1);
  EXPECT_EQ(doc["run_id"], runs[0]["id"]);
  EXPECT_EQ(doc["run_status"], "halted");
  EXPECT_EQ(doc["context"], json::parse(std::string(R"({"colour":)") + kColourValue + "}"));
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0], (json{{"run", 1}, {"id", runs[0]["id"]}, {"status", "halted"}, {"values", 1}}));
  EXPECT_EQ(doc["runs"][1], (json{{"run", 2}, {"id", second}, {"status", "halted"}, {"values", 0}}));
  json newest_doc = parse_json(ws.run({"context", id, "--json"}).out, "context --json");
  EXPECT_EQ(newest_doc["run"], 2);
  EXPECT_EQ(newest_doc["context"], json::object());

  // Bad input: exit 2, naming what was wrong.
  ProcessResult r = ws.run({"context", id, "--run", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("pipeline " + id + " has no run 3 (its runs are numbered 1 to 2"), std::string::npos) << r.err;
  r = ws.run({"context", id, "--run", "first"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--run 'first' is neither a run number"), std::string::npos) << r.err;
  // A run by its id (as status and the summary print it): the same document.
  EXPECT_EQ(ws.run({"context", id, "--run", second, "--json"}).out, ws.run({"context", id, "--json"}).out);
  r = ws.run({"context", id, "--run", "01890000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has no run '01890000-0000-7000-8000-000000000000'"), std::string::npos) << r.err;
  r = ws.run({"context", "01890000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown pipeline id '01890000-0000-7000-8000-000000000000'"), std::string::npos) << r.err;
  r = ws.run({"context"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: ductwork context PIPELINE_ID"), std::string::npos) << r.err;
}

TEST(RunContextTest, AContextReadOnAWorkspaceWithoutADatabaseCreatesNone) {
  Workspace ws(empty_database());
  ProcessResult r = ws.run({"context", "01890000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("unknown pipeline id"), std::string::npos) << r.err;
  EXPECT_FALSE(ws.database_created());
}

TEST(RunContextTest, TheApiReadsARunsContextAndRevivesWithContextFrom) {
  Workspace ws(no_retry(http_options()));
  define_halting(ws);
  std::string id = ws.trigger("CtxThenFail", {kColour});
  ws.drain();
  std::string second = revive_and_halt(ws, id);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();

  // The document `context --json` prints, byte for byte.
  for (const auto& [query, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"", {"context", id, "--json"}}, {"?run=1", {"context", id, "--run", "1", "--json"}}}) {
    Reply reply = get(at, "/api/v1/pipelines/" + id + "/context" + query);
    ASSERT_EQ(reply.status, 200) << query << ": " << reply.body;
    EXPECT_EQ(reply.body, ws.run(args).out) << query;
  }
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id + "/context?run=1").doc()["context"]["colour"]["name"], "teal");
  // ?run= takes a run id too, as the summary's and the dashboard's do.
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id + "/context?run=" + second).body,
            get(at, "/api/v1/pipelines/" + id + "/context").body);

  Reply unknown = get(at, "/api/v1/pipelines/01890000-0000-7000-8000-000000000000/context");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.error_code(), "not_found");
  Reply no_run = get(at, "/api/v1/pipelines/" + id + "/context?run=3");
  EXPECT_EQ(no_run.status, 404) << no_run.body;
  EXPECT_EQ(no_run.error_code(), "not_found");
  EXPECT_NE(no_run.doc()["error"]["message"].get<std::string>().find("has no run 3"), std::string::npos)
      << no_run.body;
  Reply bad_run = get(at, "/api/v1/pipelines/" + id + "/context?run=zero");
  EXPECT_EQ(bad_run.status, 400) << bad_run.body;
  EXPECT_EQ(bad_run.error_code(), "bad_request");
  Reply bad_param = get(at, "/api/v1/pipelines/" + id + "/context?runs=1");
  EXPECT_EQ(bad_param.status, 400) << bad_param.body;
  Reply posted = post(at, "/api/v1/pipelines/" + id + "/context");
  EXPECT_EQ(posted.status, 405) << posted.body;

  // A revive naming a run the pipeline does not have: 422, nothing written.
  const std::string state = revive_state(ws);
  Reply refused = post(at, "/api/v1/pipelines/" + id + "/revive", R"({"context_from":7})");
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(refused.error_code(), "unprocessable");
  Reply not_a_number = post(at, "/api/v1/pipelines/" + id + "/revive", R"({"context_from":"1"})");
  EXPECT_EQ(not_a_number.status, 422) << not_a_number.body;
  EXPECT_EQ(revive_state(ws), state);

  Reply revived = post(at, "/api/v1/pipelines/" + id + "/revive", R"({"context_from":1})");
  ASSERT_EQ(revived.status, 201) << revived.body;
  const std::string third = revived.doc()["run_id"];
  EXPECT_EQ(context_rows(ws, third), std::string("colour=") + kColourValue + "\n");
  Reply newest = get(at, "/api/v1/pipelines/" + id + "/context");
  EXPECT_EQ(newest.doc()["run"], 3);
  EXPECT_EQ(newest.doc()["run_id"], third);
  EXPECT_EQ(newest.doc()["context"]["colour"]["n"], 7);
}

}  // namespace
}  // namespace ductwork::it
