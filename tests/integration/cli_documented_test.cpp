// What docs/cli.md and docs/configuration.md promise and nothing tested
// before (issue 41 item 17), through the real binary on both databases:
// `trigger --idempotency-key` (the same key again prints the first id and
// writes nothing), `cancel` of a halted pipeline (refused, nothing
// written), `on_halt` never called for a cancelled run, and
// DUCTWORK_DATABASE_URL taking every command to the database it names.
#include <signal.h>

#include "http_client.h"

namespace ductwork::it {
namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST(TriggerKeyTest, TheSameKeyAgainPrintsTheFirstIdAndTriggersNothing) {
  Workspace ws(http_options());
  define_echo(ws);
  ws.define("other.yml", chain_definition("Other", {"Echo"}));
  ProcessResult first = ws.run({"trigger", "EchoTwice", "1", "--idempotency-key", "order-17"});
  ASSERT_EQ(first.exit_code, 0) << first.describe() << first.err;
  ASSERT_TRUE(is_single_uuid_line(first.out)) << first.out;
  const std::string id = first_line(first.out);
  EXPECT_EQ(first.err, "") << "a first trigger says nothing";

  // Again, with other arguments: the first id, exit 0, nothing written.
  const DbSnapshot before = ws.snapshot();
  const json status_before = ws.status(id);
  ProcessResult again = ws.run({"trigger", "EchoTwice", "2", "--idempotency-key", "order-17"});
  EXPECT_EQ(again.exit_code, 0) << again.describe() << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_NE(again.err.find("idempotency key seen before: pipeline " + id + " was not triggered again"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(ws.snapshot(), before);
  EXPECT_EQ(ws.status(id), status_before);

  // Once it ran, the key still names it: no second run, no new steps.
  ws.drain();
  json done = ws.status(id);
  ASSERT_EQ(done["status"], "completed");
  ProcessResult after = ws.run({"trigger", "EchoTwice", "3", "--idempotency-key", "order-17"});
  EXPECT_EQ(after.exit_code, 0) << after.describe() << after.err;
  EXPECT_EQ(after.out, first.out);
  ws.drain();
  EXPECT_EQ(ws.status(id), done) << "the pipeline ran again";
  EXPECT_EQ(done["runs"].size(), 1u);
  EXPECT_EQ(done["runs"][0]["steps"].back()["output"], 1) << "the first trigger's arguments";
  EXPECT_EQ(ws.list().size(), 1u);

  // The key given for another pipeline: exit 2, nothing written.
  const DbSnapshot settled = ws.snapshot();
  ProcessResult other = ws.run({"trigger", "Other", "--idempotency-key", "order-17"});
  EXPECT_EQ(other.exit_code, 2) << other.describe();
  EXPECT_EQ(other.out, "");
  EXPECT_NE(other.err.find("was given before to trigger EchoTwice"), std::string::npos) << other.err;
  EXPECT_EQ(ws.snapshot(), settled);

  // A key the HTTP API was given is the same key.
  {
    Served serve(ws, {"serve"});
    ASSERT_FALSE(serve.address().empty());
    Reply made = post(serve.address(), "/api/v1/pipelines/Other/trigger", R"({"idempotency_key":"from-the-api"})");
    ASSERT_EQ(made.status, 201) << made.body;
    ProcessResult same = ws.run({"trigger", "Other", "--idempotency-key", "from-the-api"});
    EXPECT_EQ(same.exit_code, 0) << same.describe() << same.err;
    EXPECT_EQ(first_line(same.out), made.doc()["id"]) << same.out;
    EXPECT_NE(same.err.find("idempotency key seen before"), std::string::npos) << same.err;
    // And the other way round.
    Reply repeated = post(serve.address(), "/api/v1/pipelines/EchoTwice/trigger", R"({"idempotency_key":"order-17"})");
    EXPECT_EQ(repeated.status, 200) << repeated.body;
    EXPECT_EQ(repeated.doc()["id"], id);
  }
  EXPECT_EQ(ws.list().size(), 2u);

  // 1–255 bytes, no control characters; not with --from.
  const DbSnapshot now = ws.snapshot();
  for (const std::string& bad : {std::string(), std::string(256, 'k'), std::string("tab\there"), std::string("nl\n")}) {
    ProcessResult r = ws.run({"trigger", "EchoTwice", "--idempotency-key", bad});
    EXPECT_EQ(r.exit_code, 2) << "key of " << bad.size() << " bytes: " << r.describe();
    EXPECT_NE(r.err.find("--idempotency-key"), std::string::npos) << r.err;
  }
  ProcessResult from = ws.run({"trigger", "EchoTwice", "--from", ws.write("args.jsonl", "[1]\n"), "--idempotency-key",
                               "k"});
  EXPECT_EQ(from.exit_code, 2) << from.describe();
  EXPECT_NE(from.err.find("takes no key"), std::string::npos) << from.err;
  EXPECT_EQ(ws.snapshot(), now);
  const std::string longest(255, 'k');
  const std::string made = ws.trigger("EchoTwice", {"--idempotency-key", longest});
  EXPECT_EQ(ws.trigger("EchoTwice", {"--idempotency-key", longest}), made);
  EXPECT_EQ(ws.list().size(), 3u);
}

// Which runs' on_halt the host dispatched (runs.on_halt_dispatched_at).
std::string on_halt_dispatched(const Workspace& ws, const std::string& pipeline_id) {
  return ws.sql("SELECT COUNT(*) FROM runs WHERE pipeline_id = '" + pipeline_id +
                "' AND on_halt_dispatched_at IS NOT NULL");
}

TEST(CancelHaltedTest, CancellingAHaltedPipelineIsRefusedAndWritesNothing) {
  Workspace ws(http_options());
  ws.define("fails.yml", "pipeline: Fails\non_halt: Echo\nsteps:\n  - start: Echo\n  - chain: FailPermanently\n");
  const std::string id = ws.trigger("Fails", {R"("broken")"});
  ws.drain();
  const json halted = ws.status(id);
  ASSERT_EQ(halted["status"], "halted") << halted.dump(1);
  EXPECT_EQ(on_halt_dispatched(ws, id), "1\n");
  const DbSnapshot before = ws.snapshot();

  ProcessResult r = ws.run({"cancel", id});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("cannot cancel: pipeline " + id + " is halted: only a pipeline that has not finished can be "
                       "cancelled"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ws.snapshot(), before);
  EXPECT_EQ(ws.status(id), halted);

  // The API refuses it the same way.
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  Reply refused = post(serve.address(), "/api/v1/pipelines/" + id + "/cancel");
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.error_code(), "conflict");
  EXPECT_NE(refused.body.find("is halted"), std::string::npos) << refused.body;
  EXPECT_EQ(ws.snapshot(), before);
  EXPECT_EQ(ws.status(id), halted);
  // What it can be: revived.
  EXPECT_EQ(ws.run({"revive", id}).exit_code, 0);
  EXPECT_EQ(ws.status(id)["status"], "in_progress");
}

// docs/cli.md, cancel: "an error they raise is recorded and never retried
// ... and `on_halt` is not called."
TEST(CancelHaltedTest, OnHaltIsNotCalledForACancelledRunWhoseStepFails) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 3";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("guarded.yml",
            "pipeline: Guarded\non_halt: Echo\nsteps:\n  - start: Gate\n  - chain: FailPermanently\n");
  const std::string gate = ws.file("gate");
  const std::string id = ws.trigger("Guarded", {json{{"file", gate}, {"value", "stopped"}}.dump()});
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(30, [&] { return ws.status(id)["runs"][0]["steps"][0]["status"] == "in_progress"; }))
      << host.stdout_so_far();
  ProcessResult cancelled = ws.run({"cancel", id});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.describe() << cancelled.err;
  // Gate sees its flag and throws Cancelled: a failure, recorded.
  ASSERT_TRUE(eventually(10, [&] {
    return !ws.status(id)["runs"][0]["steps"][0]["executions"][0]["result_type"].is_null();
  })) << ws.status(id).dump(1);
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][0]["executions"][0]["result_type"], "failure");

  // Another run of the same pipeline halts, and its on_halt runs: the
  // advancers have dispatched the halts there were to dispatch.
  const std::string later = ws.trigger("Guarded", {json{{"file", ws.write("open", "")}, {"value", "x"}}.dump()});
  ASSERT_TRUE(eventually(30, [&] { return on_halt_dispatched(ws, later) == "1\n"; })) << host.stdout_so_far();
  const std::string later_run = ws.status(later)["runs"][0]["id"];
  ASSERT_TRUE(eventually(10, [&] {
    return host.stdout_so_far().find("\"run_id\":\"" + later_run + "\"") != std::string::npos &&
           count_of(host.stdout_so_far(), "on_halt step ran") >= 1;
  })) << host.stdout_so_far();

  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "cancelled") << doc.dump(1);
  EXPECT_EQ(on_halt_dispatched(ws, id), "0\n") << "on_halt was dispatched for the cancelled run";
  EXPECT_EQ(count_of(host.stdout_so_far(), "on_halt step ran"), 1u) << host.stdout_so_far();
  EXPECT_EQ(doc["runs"][0]["steps"].size(), 1u) << "the cancelled branch advanced";
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 1u) << "the cancelled step was retried";
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(60).exit_code, 0);
}

// docs/configuration.md: DUCTWORK_DATABASE_URL replaces the `database`
// section for every command: a PostgreSQL URL on the pg. run, a sqlite://
// one on the plain run. The file the configuration names is never made.
TEST(DatabaseUrlTest, TheVariableAloneTakesEveryCommandToItsDatabase) {
  Workspace ws(empty_database());
  const std::string configured = ws.file("configured.sqlite3");
  ws.write_config_text("database: {path: \"" + configured + "\"}\n" + "plugins: {directory: \"" +
                       DUCTWORK_PLUGIN_DIR + "\"}\ndefinitions: {directory: \"" + ws.definitions_dir() +
                       "\"}\npipelines: \"*\"\n"
                       "job_worker: {count: 2, polling_timeout: 0.05, retry_delay: 0.05}\n"
                       "pipeline_advancer: {count: 2, polling_timeout: 0.05}\nsupervisor: {polling_timeout: 0.1}\n");
  ws.define("double.yml", chain_definition("IncDouble", {"Inc", "Double"}));
  const std::string url = ws.pg() ? ws.pg()->url() : "sqlite://" + ws.db_path();
  ASSERT_EQ(url.rfind(ws.pg() ? "postgresql://" : "sqlite:///", 0), 0u) << url;
  const std::vector<std::pair<std::string, std::string>> env = {{"DUCTWORK_DATABASE_URL", url}};

  ProcessResult migrated = ws.run_with_env({"migrate"}, env);
  ASSERT_EQ(migrated.exit_code, 0) << migrated.describe() << migrated.err;
  EXPECT_TRUE(ws.database_created());
  ProcessResult triggered = ws.run_with_env({"trigger", "IncDouble", "20"}, env);
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe() << triggered.err;
  const std::string id = first_line(triggered.out);
  EXPECT_EQ(ws.sql("SELECT klass, status FROM pipelines WHERE id = '" + id + "'"), "IncDouble|in_progress\n");
  ProcessResult drained = ws.run_with_env({"start", "--drain"}, env, 60);
  ASSERT_EQ(drained.exit_code, 0) << drained.describe() << drained.err;
  ProcessResult status = ws.run_with_env({"status", id, "--json"}, env);
  ASSERT_EQ(status.exit_code, 0) << status.describe() << status.err;
  json doc = parse_json(status.out, "status --json");
  EXPECT_EQ(doc["status"], "completed") << status.out;
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], 42);
  ProcessResult listed = ws.run_with_env({"list", "--json"}, env);
  ASSERT_EQ(listed.exit_code, 0) << listed.describe() << listed.err;
  EXPECT_EQ(parse_json(listed.out, "list --json").size(), 1u);
  EXPECT_EQ(ws.sql("SELECT status FROM pipelines WHERE id = '" + id + "'"), "completed\n");
  if (ws.pg()) {
    // postgres:// is the same server.
    const std::string other = "postgres://" + url.substr(std::string("postgresql://").size());
    ProcessResult again = ws.run_with_env({"status", id, "--json"}, {{"DUCTWORK_DATABASE_URL", other}});
    EXPECT_EQ(again.exit_code, 0) << again.describe() << again.err;
    EXPECT_EQ(again.out, status.out);
  }
  EXPECT_FALSE(testsupport::file_exists(configured)) << "the configured database was touched";
}

}  // namespace
}  // namespace ductwork::it
