// SPEC §12 through the real binary: `ductwork serve` and `ductwork start`
// serving JSON API v1 over real HTTP (Poco's client), with every security
// rule: the bearer token, /healthz open, same-origin JSON posts, 413 over
// http.max_body, JSON errors, nothing written on any error, the token never
// logged, idempotent triggers also under concurrent requests.
#include <signal.h>

#include <atomic>
#include <set>
#include <thread>

#include "http_client.h"

namespace ductwork::it {
namespace {

TEST(HttpApiTest, AnApplicationTriggersAndFollowsAPipelineOverHttpAlone) {
  Workspace ws(http_options());
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();

  Reply health = get(at, "/healthz", "");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.doc()["status"], "ok");
  Reply ready = get(at, "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;

  Reply made = post(at, "/api/v1/pipelines/EchoTwice/trigger", R"({"args":[{"a":[1,2]},"x"],"idempotency_key":"order-17"})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = made.doc()["id"];
  EXPECT_TRUE(is_single_uuid_line(id + "\n")) << made.body;
  // The same key again: the first pipeline, 200, and nothing new.
  Reply again = post(at, "/api/v1/pipelines/EchoTwice/trigger", R"({"args":[9],"idempotency_key":"order-17"})");
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.doc()["id"], id);
  EXPECT_EQ(again.doc()["created"], false);
  EXPECT_EQ(ws.list().size(), 1u);

  Reply pending = get(at, "/api/v1/pipelines/" + id);
  ASSERT_EQ(pending.status, 200);
  EXPECT_EQ(pending.doc()["status"], "in_progress");
  ws.drain();
  Reply done = get(at, "/api/v1/pipelines/" + id);
  ASSERT_EQ(done.status, 200);
  EXPECT_EQ(done.doc()["status"], "completed") << done.body;
  // Byte for byte the document `status --json` prints.
  ProcessResult status = ws.run({"status", id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(done.body, status.out);
  EXPECT_EQ(done.doc()["runs"][0]["steps"][0]["input"], json::parse(R"([{"a":[1,2]},"x"])")) << done.body;

  Reply defs = get(at, "/api/v1/definitions");
  ASSERT_EQ(defs.status, 200);
  ASSERT_EQ(defs.doc()["definitions"].size(), 1u);
  EXPECT_EQ(defs.doc()["definitions"][0]["pipeline"], "EchoTwice");
  EXPECT_EQ(defs.doc()["definitions"][0]["definition"]["nodes"].size(), 2u);
  Reply plugins = get(at, "/api/v1/plugins");
  ASSERT_EQ(plugins.status, 200);
  ProcessResult cli_plugins = ws.run({"plugins", "--json"});
  EXPECT_EQ(plugins.body, cli_plugins.out);

  ProcessResult stopped = serve.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  // The token is never written to the log.
  EXPECT_EQ(stopped.out.find(kToken), std::string::npos);
  EXPECT_EQ(stopped.err.find(kToken), std::string::npos);
  EXPECT_NE(stopped.out.find("\"HTTP server stopped\""), std::string::npos) << stopped.out;
}

TEST(HttpApiTest, TheListPagesWithACursorAndFilters) {
  Workspace ws(http_options());
  define_echo(ws);
  ws.define("other.yml", chain_definition("Other", {"Echo"}));
  std::set<std::string> echo_ids;
  std::string alpha_3;
  for (int i = 0; i < 5; ++i) {
    const std::string id = ws.trigger("EchoTwice", {"\"alpha-" + std::to_string(i) + "\""});
    echo_ids.insert(id);
    if (i == 3) alpha_3 = id;
  }
  std::string other = ws.trigger("Other");
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());

  std::vector<std::string> seen;
  std::string path = "/api/v1/pipelines?pipeline=EchoTwice&limit=2";
  for (int page = 0; page < 5; ++page) {
    Reply r = get(serve.address(), path);
    ASSERT_EQ(r.status, 200) << r.body;
    json doc = r.doc();
    EXPECT_LE(doc["pipelines"].size(), 2u);
    for (const auto& p : doc["pipelines"]) seen.push_back(p["id"]);
    if (doc["next_cursor"].is_null()) break;
    path = "/api/v1/pipelines?pipeline=EchoTwice&limit=2&cursor=" + doc["next_cursor"].get<std::string>();
  }
  // Every EchoTwice pipeline once, newest first, as `list` gives them.
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), echo_ids);
  json listed = ws.list({"--pipeline", "EchoTwice"});
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], listed[i]["id"]);

  Reply all = get(serve.address(), "/api/v1/pipelines");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.doc()["pipelines"].size(), 6u);
  EXPECT_EQ(all.doc()["pipelines"][0]["id"], other);
  EXPECT_TRUE(all.doc()["next_cursor"].is_null());
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?status=completed").doc()["pipelines"].size(), 0u);
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?since=2000-01-01T00:00:00Z").doc()["pipelines"].size(), 6u);
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?since=2999-01-01").doc()["pipelines"].size(), 0u);

  // Text in the arguments: found as typed; LIKE's wildcards are plain text.
  json found = get(serve.address(), "/api/v1/pipelines?q=alpha-3").doc();
  ASSERT_EQ(found["pipelines"].size(), 1u) << found.dump();
  EXPECT_EQ(found["pipelines"][0]["id"], alpha_3);
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?q=alpha").doc()["pipelines"].size(), 5u);
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?q=%25").doc()["pipelines"].size(), 0u);
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?q=alpha_3").doc()["pipelines"].size(), 0u);
  EXPECT_EQ(get(serve.address(), "/api/v1/pipelines?error_class=NoSuchError").doc()["pipelines"].size(), 0u);

  for (const char* bad : {"status=done", "limit=0", "limit=1001", "limit=3x", "since=yesterday", "cursor=zz",
                          "cursor=41", "colour=red"}) {
    Reply r = get(serve.address(), std::string("/api/v1/pipelines?") + bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_EQ(r.error_code(), "bad_request") << bad;
  }
}

TEST(HttpApiTest, EverySecurityRuleRefusesAndWritesNothing) {
  Workspace ws(http_options(", max_body: 1024"));
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string& at = serve.address();
  const DbSnapshot before = ws.snapshot();

  // No token, a wrong one, another scheme: 401 with a JSON error; /healthz needs none.
  for (const std::string& token : {std::string(), std::string("wrong-token-0123456789abcdef"), std::string(kToken) + "x"}) {
    Reply r = get(at, "/api/v1/pipelines", token);
    EXPECT_EQ(r.status, 401) << token;
    EXPECT_EQ(r.error_code(), "unauthorized");
    EXPECT_EQ(r.headers["WWW-Authenticate"], "Bearer realm=\"ductwork\"");
  }
  Call basic;
  basic.path = "/api/v1/pipelines";
  basic.token = "";
  basic.headers = {{"Authorization", std::string("Basic ") + kToken}};
  EXPECT_EQ(http(at, basic).status, 401);
  EXPECT_EQ(get(at, "/readyz", "").status, 401);
  EXPECT_EQ(get(at, "/healthz", "").status, 200);

  // Over http.max_body: 413, announced or not (not announced: the chunked
  // coding, the only way a request's body comes without a length; without
  // the limit it would trigger a run).
  const std::string too_big = R"({"args":[")" + std::string(2000, 'x') + R"("]})";
  Reply big = post(at, "/api/v1/pipelines/EchoTwice/trigger", too_big);
  EXPECT_EQ(big.status, 413) << big.body;
  EXPECT_EQ(big.error_code(), "payload_too_large");
  Call unannounced;
  unannounced.method = "POST";
  unannounced.path = "/api/v1/pipelines/EchoTwice/trigger";
  unannounced.chunked = true;
  unannounced.body = too_big;
  Reply big_chunked = http(at, unannounced);
  EXPECT_EQ(big_chunked.status, 413) << big_chunked.body;
  EXPECT_EQ(big_chunked.error_code(), "payload_too_large");

  // Not JSON, not an object, wrong members, unknown pipeline, a form post,
  // another origin.
  struct Bad {
    std::string path, body, content_type;
    int status;
    std::string code;
    std::vector<std::pair<std::string, std::string>> headers;
  };
  const std::vector<Bad> bad = {
      {"/api/v1/pipelines/EchoTwice/trigger", "{\"args\":[", "application/json", 400, "bad_request", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", "[1]", "application/json", 400, "bad_request", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", R"({"args":1})", "application/json", 422, "unprocessable", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", R"({"arguments":[]})", "application/json", 422, "unprocessable", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", R"({"idempotency_key":""})", "application/json", 422, "unprocessable", {}},
      // Not UTF-8 (issue 41 item 14): not JSON text at all.
      {"/api/v1/pipelines/EchoTwice/trigger", "{\"idempotency_key\":\"\xff\xfe\"}", "application/json", 400,
       "bad_request", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", R"({"idempotency_key":"\udc80"})", "application/json", 400,
       "bad_request", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", R"({"args":[18446744073709551616]})", "application/json", 422,
       "unprocessable", {}},
      {"/api/v1/pipelines/Nope/trigger", "{}", "application/json", 404, "not_found", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", "args=1", "application/x-www-form-urlencoded", 415,
       "unsupported_media_type", {}},
      {"/api/v1/pipelines/EchoTwice/trigger", "{}", "application/json", 403, "forbidden",
       {{"Origin", "http://evil.example"}}},
      {"/api/v1/pipelines/no-such-id/revive", "{}", "application/json", 404, "not_found", {}},
      {"/api/v1/pipelines/no-such-id/cancel", "{}", "application/json", 404, "not_found", {}},
      {"/api/v1/pipelines/no-such-id/resume", "{}", "application/json", 404, "not_found", {}},
      {"/api/v1/nothing", "{}", "application/json", 404, "not_found", {}},
  };
  for (const Bad& b : bad) {
    Call call;
    call.method = "POST";
    call.path = b.path;
    call.body = b.body;
    call.content_type = b.content_type;
    call.headers = b.headers;
    Reply r = http(at, call);
    EXPECT_EQ(r.status, b.status) << b.path << " " << b.body << ": " << r.body;
    EXPECT_EQ(r.error_code(), b.code) << b.path << " " << b.body << ": " << r.body;
    EXPECT_NE(r.doc()["error"].value("message", ""), "") << r.body;
  }
  EXPECT_EQ(get(at, "/api/v1/pipelines/no-such-id").status, 404);
  Reply wrong_method = get(at, "/api/v1/pipelines/EchoTwice/trigger");
  EXPECT_EQ(wrong_method.status, 405) << wrong_method.body;
  EXPECT_EQ(ws.snapshot(), before);

  ProcessResult stopped = serve.stop();
  EXPECT_EQ(stopped.out.find(kToken), std::string::npos);
  EXPECT_EQ(stopped.out.find("wrong-token"), std::string::npos);
}

TEST(HttpApiTest, ConcurrentTriggersWithOneKeyMakeOnePipeline) {
  Workspace ws(http_options());
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  constexpr int kClients = 8;
  std::vector<Reply> replies(kClients);
  std::vector<std::thread> clients;
  std::atomic<bool> go{false};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      while (!go) std::this_thread::yield();
      replies[i] = post(serve.address(), "/api/v1/pipelines/EchoTwice/trigger",
                        R"({"args":[)" + std::to_string(i) + R"(],"idempotency_key":"same-key"})");
    });
  }
  go = true;
  for (auto& c : clients) c.join();
  int created = 0;
  std::set<std::string> ids;
  for (const Reply& r : replies) {
    ASSERT_TRUE(r.status == 201 || r.status == 200) << r.status << " " << r.body;
    created += r.status == 201;
    ids.insert(r.doc()["id"].get<std::string>());
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(ws.list().size(), 1u);
  // A key given before for another pipeline is a conflict, and writes nothing.
  ws.define("other.yml", chain_definition("Other", {"Echo"}));
  serve.stop();
  Served again(ws, {"serve"});
  const DbSnapshot before = ws.snapshot();
  Reply other = post(again.address(), "/api/v1/pipelines/Other/trigger", R"({"idempotency_key":"same-key"})");
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_NE(other.body.find("was given before to trigger EchoTwice"), std::string::npos) << other.body;
  EXPECT_EQ(ws.snapshot(), before);
}

TEST(HttpApiTest, ReviveCancelAndResumeOverHttp) {
  Workspace ws(http_options());
  define_echo(ws);
  ws.define("fails.yml", chain_definition("Fails", {"Echo", "FailPermanently"}));
  ws.define("approval.yml",
            "pipeline: Approval\nsteps:\n  - start: Echo\n  - divide:\n    - [Inc, {dampen: Sum}]\n"
            "    - [Inc, Inc]\n  - combine: Sum\n");
  std::string failing = ws.trigger("Fails", {"1"});
  std::string parked = ws.trigger("Approval", {"1"});
  ws.drain(60);
  ASSERT_EQ(ws.status(failing)["status"], "halted");
  ASSERT_EQ(ws.status(parked)["status"], "dampened");
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string& at = serve.address();

  // The list filtered by the error class its step failed with.
  const std::string error_class = ws.status(failing)["runs"][0]["steps"][1]["executions"][0]["error_klass"];
  json by_class = get(at, "/api/v1/pipelines?error_class=" + error_class).doc();
  ASSERT_EQ(by_class["pipelines"].size(), 1u) << error_class << " " << by_class.dump();
  EXPECT_EQ(by_class["pipelines"][0]["id"], failing);

  Reply revived = post(at, "/api/v1/pipelines/" + failing + "/revive", R"({"duplicate_context":true})");
  ASSERT_EQ(revived.status, 201) << revived.body;
  EXPECT_EQ(ws.status(failing)["runs"].size(), 2u);
  EXPECT_EQ(revived.doc()["run_id"], ws.status(failing)["runs"][1]["id"]);
  Reply twice = post(at, "/api/v1/pipelines/" + failing + "/revive");
  EXPECT_EQ(twice.status, 409) << twice.body;
  EXPECT_EQ(twice.error_code(), "conflict");

  Reply resumed = post(at, "/api/v1/pipelines/" + parked + "/resume", R"({"value":5})");
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_EQ(resumed.doc()["branches_resumed"], 1);
  Reply cancelled = post(at, "/api/v1/pipelines/" + failing + "/cancel");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(ws.status(failing)["status"], "cancelled");
  EXPECT_EQ(post(at, "/api/v1/pipelines/" + failing + "/cancel").status, 409);
  ws.drain(60);
  EXPECT_EQ(ws.status(parked)["status"], "completed");
  EXPECT_EQ(ws.status(parked)["runs"][0]["steps"].back()["output"], 10);
}

TEST(HttpApiTest, StartServesFromTheSupervisorAndLetsThePortGo) {
  Workspace ws(http_options());
  define_echo(ws);
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  Reply made = post(host.address(), "/api/v1/pipelines/EchoTwice/trigger", R"({"args":[3]})");
  ASSERT_EQ(made.status, 201);
  const std::string id = made.doc()["id"];
  ASSERT_TRUE(eventually(30, [&] { return get(host.address(), "/api/v1/pipelines/" + id).doc()["status"] == "completed"; }));
  // The supervisor and its children, as `health` sees them (a child that
  // had nothing to do may register after the run finished).
  Reply processes;
  std::multiset<std::string> roles;
  eventually(10, [&] {
    processes = get(host.address(), "/api/v1/processes");
    roles.clear();
    const json listed = processes.doc();
    if (!listed.is_object() || !listed.contains("processes")) return false;
    for (const auto& p : listed["processes"]) roles.insert(p["role"].get<std::string>());
    return roles.size() >= 3;
  });
  ASSERT_EQ(processes.status, 200);
  EXPECT_EQ(roles.count("supervisor"), 1u) << processes.body;
  EXPECT_GE(roles.size(), 3u) << processes.body;
  // Work in flight, by process: a worker running a 2 s step.
  ws.define("slow.yml", chain_definition("Slow", {"Sleep"}));
  host.stop();
  Served again_host(ws, {"start"});
  ws.trigger("Slow", {"2000"});
  EXPECT_TRUE(eventually(20, [&] {
    const json listed = get(again_host.address(), "/api/v1/processes").doc();
    for (const auto& p : listed["processes"]) {
      if (p["role"] == "worker" && p["jobs_running"] == 1) return true;
    }
    return false;
  })) << get(again_host.address(), "/api/v1/processes").body;
  const std::string address = again_host.address();
  ProcessResult stopped = again_host.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  // No child kept the socket: the port can be bound again at once.
  Served again(ws, {"serve"}, {{"DUCTWORK_HTTP_LISTEN", address}});
  EXPECT_EQ(again.address(), address) << again.process().stdout_so_far() << again.process().stderr_so_far();
}

TEST(HttpApiTest, AThreadedHostServesFromAProcessOfItsOwn) {
  Workspace ws(http_options());
  define_echo(ws);
  Served host(ws, {"start"}, {{"DUCTWORK_FORKING", "none"}});
  ASSERT_FALSE(host.address().empty());
  // Where the plugins run (this pid) is not where HTTP is served.
  std::string out = host.process().stdout_so_far();
  EXPECT_NE(out.find("\"HTTP server process started\""), std::string::npos) << out;
  EXPECT_EQ(get(host.address(), "/healthz").status, 200);
  ProcessResult stopped = host.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  EXPECT_NE(stopped.out.find("\"HTTP server stopped\""), std::string::npos) << stopped.out;
}

TEST(HttpApiTest, ATakenPortFailsTheStartNamingHttpListen) {
  Workspace ws(http_options());
  define_echo(ws);
  Served first(ws, {"serve"});
  ASSERT_FALSE(first.address().empty());
  ProcessResult second = ws.run_with_env({"serve"}, {{"DUCTWORK_HTTP_LISTEN", first.address()}});
  EXPECT_EQ(second.exit_code, 1) << second.describe();
  EXPECT_NE(second.err.find("http.listen: cannot listen on " + first.address()), std::string::npos) << second.err;
}

}  // namespace
}  // namespace ductwork::it
