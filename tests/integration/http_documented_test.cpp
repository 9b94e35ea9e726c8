// What docs/http-api.md promises and nothing tested before (issue 41 item
// 17), through the real binary on both databases: /readyz's 503 while
// migrations are pending and while the database cannot be reached (and the
// API's 503 `unavailable` then), an `https://HOST` origin accepted as a TLS
// proxy sends it, the request log's fields, and `serve` going on through a
// SIGHUP (a terminal's hang-up).
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "http_client.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

// The migrations this build applies: the schema files' names, in order.
std::vector<std::string> migrations_of(const Workspace& ws) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(ws.schema_dir())) {
    if (entry.path().extension() == ".sql") out.push_back(entry.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Empties the workspace's database in place (every table dropped): what a
// server meets when its database is recreated under it, e.g. restored from
// an empty dump. The file (its inode) stays the same.
void empty_database(const Workspace& ws) {
  if (ws.pg()) {
    ASSERT_EQ(ws.sql("SELECT current_schema()"), "public\n");
    ws.sql("DROP SCHEMA public CASCADE");
    ws.sql("CREATE SCHEMA public");
    return;
  }
  // Tables and views (`attempts` is one since migration 033), each as
  // `table "name"` or `view "name"`.
  std::istringstream objects(
      ws.sql("SELECT type || ' \"' || name || '\"' FROM sqlite_master WHERE type IN ('table', 'view') AND "
             "name NOT LIKE 'sqlite_%'"));
  std::string script = "PRAGMA foreign_keys = OFF;";
  for (std::string object; std::getline(objects, object);) script += " DROP " + object + ";";
  ws.sql(script);
  ASSERT_EQ(ws.sql("SELECT COUNT(*) FROM sqlite_master"), "0\n");
}

// The JSON log lines of `text` whose msg is one of `messages`.
std::vector<json> log_lines(const std::string& text, const std::set<std::string>& messages) {
  std::vector<json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    json doc = json::parse(line, nullptr, false);
    if (doc.is_object() && messages.count(doc.value("msg", ""))) out.push_back(doc);
  }
  return out;
}

TEST(ReadinessTest, PendingMigrationsAre503UntilMigrateAppliesThem) {
  Workspace ws(http_options());
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();
  Reply ready = get(at, "/readyz");
  ASSERT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.doc(), json({{"status", "ready"}}));

  empty_database(ws);
  const std::vector<std::string> pending = migrations_of(ws);
  ASSERT_GE(pending.size(), 12u);
  Reply behind = get(at, "/readyz");
  EXPECT_EQ(behind.status, 503) << behind.body;
  json doc = behind.doc();
  EXPECT_EQ(doc["status"], "unavailable") << behind.body;
  EXPECT_EQ(doc["reason"], "migrations not applied: " + std::to_string(pending.size())) << behind.body;
  EXPECT_EQ(doc["pending_migrations"], json(pending)) << behind.body;
  EXPECT_EQ(get(at, "/healthz", "").status, 200) << "the server itself is up";

  ProcessResult migrated = ws.run({"migrate"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.describe() << migrated.err;
  ready = get(at, "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.doc(), json({{"status", "ready"}}));
}

// Where the database is out of reach, and how it comes back: a SQLite file
// moved away and something that is no database in its place, a PostgreSQL
// database that refuses connections. In both the server held a connection
// from before.
class Outage {
 public:
  explicit Outage(const Workspace& ws) : ws_(ws) {}
  void begin() {
    if (ws_.pg()) {
      admin_(std::string("ALTER DATABASE \"") + name() + "\" ALLOW_CONNECTIONS false");
      admin_("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name() +
             "' AND pid <> pg_backend_pid()");
      return;
    }
    // The file moved away with its -wal and -shm (else a new connection
    // would read the old pages from the -wal), and one that is no
    // database in its place.
    for (const char* suffix : {"", "-wal", "-shm"}) {
      if (fs::exists(ws_.db_path() + suffix)) fs::rename(ws_.db_path() + suffix, ws_.file("saved") + suffix);
    }
    std::ofstream(ws_.db_path()) << std::string(8192, 'x');
  }
  void end() {
    if (ws_.pg()) {
      admin_(std::string("ALTER DATABASE \"") + name() + "\" ALLOW_CONNECTIONS true");
      return;
    }
    fs::remove(ws_.db_path());
    for (const char* suffix : {"", "-wal", "-shm"}) {
      if (fs::exists(ws_.file("saved") + suffix)) fs::rename(ws_.file("saved") + suffix, ws_.db_path() + suffix);
    }
  }

 private:
  std::string name() const { return ws_.pg()->url().substr(ws_.pg()->url().rfind('/') + 1); }
  // A statement on the cluster's maintenance database.
  void admin_(const std::string& sql) const {
    const std::string& url = ws_.pg()->url();
    testsupport::pg_query(url.substr(0, url.rfind('/') + 1) + "postgres", sql);
  }
  const Workspace& ws_;
};

TEST(ReadinessTest, ADatabaseOutOfReachIs503UnavailableAndLoggedAsAnError) {
  Workspace ws(http_options());
  define_echo(ws);
  const std::string id = ws.trigger("EchoTwice", {"1"});
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string& at = serve.address();
  Outage outage(ws);
  ASSERT_EQ(get(at, "/api/v1/pipelines/" + id).status, 200);
  outage.begin();

  Reply ready = get(at, "/readyz");
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_EQ(ready.doc()["status"], "unavailable") << ready.body;
  EXPECT_EQ(ready.doc()["reason"].get<std::string>().rfind("database: ", 0), 0u) << ready.body;
  EXPECT_FALSE(ready.doc().contains("pending_migrations")) << ready.body;
  for (const std::string& path : {"/api/v1/pipelines/" + id, std::string("/api/v1/pipelines")}) {
    Reply read = get(at, path);
    EXPECT_EQ(read.status, 503) << path << ": " << read.body;
    EXPECT_EQ(read.error_code(), "unavailable") << path << ": " << read.body;
    EXPECT_EQ(read.doc()["error"]["message"].get<std::string>().rfind("database: ", 0), 0u) << read.body;
  }
  Reply trigger = post(at, "/api/v1/pipelines/EchoTwice/trigger", R"({"args":[2]})");
  EXPECT_EQ(trigger.status, 503) << trigger.body;
  EXPECT_EQ(trigger.error_code(), "unavailable") << trigger.body;
  EXPECT_EQ(get(at, "/healthz", "").status, 200) << "the server itself is up";

  // Back: the next requests open a fresh connection.
  outage.end();
  EXPECT_EQ(get(at, "/readyz").status, 200);
  EXPECT_EQ(get(at, "/api/v1/pipelines/" + id).status, 200);
  EXPECT_EQ(ws.list().size(), 1u) << "the refused trigger wrote nothing";

  ProcessResult stopped = serve.stop();
  std::vector<json> failed = log_lines(stopped.out, {"HTTP request failed"});
  ASSERT_EQ(failed.size(), 4u) << stopped.out;
  for (const json& line : failed) {
    EXPECT_EQ(line["level"], "error") << line.dump();
    EXPECT_EQ(line["status"], 503) << line.dump();
  }
  EXPECT_EQ(failed[0]["path"], "/readyz");
  EXPECT_EQ(failed[3]["method"], "POST");
  EXPECT_EQ(failed[3]["path"], "/api/v1/pipelines/EchoTwice/trigger");
}

// docs/http-api.md, Security: an Origin that is the request's own host, by
// http or (behind a TLS-terminating proxy that passes Host on) https, is
// accepted; any other scheme, host or port is refused.
TEST(OriginTest, TheOwnHostByHttpsIsAcceptedAndEveryOtherOriginRefused) {
  Workspace ws(http_options());
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string& at = serve.address();
  const std::string port = at.substr(at.rfind(':') + 1);
  auto trigger_with = [&](const std::string& host, const std::string& origin) {
    Call call;
    call.method = "POST";
    call.path = "/api/v1/pipelines/EchoTwice/trigger";
    call.body = "{}";
    call.headers = {{"Host", host}, {"Origin", origin}};
    return http(at, call);
  };
  // The proxy's name, as the browser and the proxy send it.
  const std::string proxy = "ductwork.example.org";
  for (const auto& [host, origin] : std::vector<std::pair<std::string, std::string>>{
           {at, "https://" + at}, {at, "http://" + at}, {proxy, "https://" + proxy}, {proxy, "http://" + proxy}}) {
    Reply r = trigger_with(host, origin);
    EXPECT_EQ(r.status, 201) << "Host " << host << ", Origin " << origin << ": " << r.body;
  }
  const size_t accepted = ws.list().size();
  EXPECT_EQ(accepted, 4u);
  for (const auto& [host, origin] : std::vector<std::pair<std::string, std::string>>{
           {proxy, "https://evil.example"},
           {proxy, "https://" + proxy + ":8443"},
           {proxy, "https://" + proxy + ".evil.example"},
           {proxy, "ftp://" + proxy},
           {proxy, "HTTPS://evil.example"},
           {at, "https://127.0.0.2:" + port},
           {at, "null"}}) {
    Reply r = trigger_with(host, origin);
    EXPECT_EQ(r.status, 403) << "Host " << host << ", Origin " << origin << ": " << r.body;
    EXPECT_EQ(r.error_code(), "forbidden") << r.body;
  }
  EXPECT_EQ(ws.list().size(), accepted) << "a refused origin wrote something";

  // The dashboard's forms follow the same rule.
  Reply page = get(at, "/ui");
  ASSERT_EQ(page.status, 200);
  const size_t value = page.body.find("name=\"csrf\" value=\"");
  ASSERT_NE(value, std::string::npos) << page.body;
  const size_t start = value + std::string("name=\"csrf\" value=\"").size();
  const std::string csrf = page.body.substr(start, page.body.find('"', start) - start);
  Call form;
  form.method = "POST";
  form.path = "/ui/trigger";
  form.content_type = "application/x-www-form-urlencoded";
  form.body = "csrf=" + csrf + "&pipeline=EchoTwice&args=%5B%5D";
  form.headers = {{"Host", proxy}, {"Origin", "https://" + proxy}};
  Reply sent = http(at, form);
  EXPECT_EQ(sent.status, 303) << sent.body;
  form.headers = {{"Host", proxy}, {"Origin", "https://evil.example"}};
  EXPECT_EQ(http(at, form).status, 403);
  EXPECT_EQ(ws.list().size(), accepted + 1);
}

// docs/http-api.md, Security: "A request is logged (at debug, or error for
// a 5xx) with its method, path, status and duration: no query string, no
// header, no body." Every answered request, refused or not, has one line
// with exactly those fields besides the stable ones of every log line.
TEST(RequestLogTest, EveryRequestIsOneLineWithItsMethodPathStatusAndDuration) {
  ConfigOptions options = http_options();
  options.extra += "logger: {level: debug}\n";
  Workspace ws(options);
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string& at = serve.address();
  const std::string secret = "s3cr3t-value-in-a-query";
  struct Sent {
    std::string method, path;
    int status;
  };
  std::vector<Sent> sent;
  auto expect = [&](const Reply& r, const std::string& method, const std::string& path, int status) {
    EXPECT_EQ(r.status, status) << method << " " << path << ": " << r.body;
    sent.push_back({method, path, status});
  };
  expect(get(at, "/healthz", ""), "GET", "/healthz", 200);
  expect(get(at, "/api/v1/pipelines?q=" + secret + "&limit=5"), "GET", "/api/v1/pipelines", 200);
  expect(post(at, "/api/v1/pipelines/EchoTwice/trigger", R"({"args":[")" + secret + R"("]})"), "POST",
         "/api/v1/pipelines/EchoTwice/trigger", 201);
  expect(get(at, "/api/v1/pipelines/no-such-id"), "GET", "/api/v1/pipelines/no-such-id", 404);
  expect(get(at, "/api/v1/pipelines", "wrong-token-" + secret), "GET", "/api/v1/pipelines", 401);
  expect(get(at, "/api/v1/pipelines/EchoTwice/trigger"), "GET", "/api/v1/pipelines/EchoTwice/trigger", 405);
  Call form;
  form.method = "POST";
  form.path = "/api/v1/pipelines/EchoTwice/trigger";
  form.content_type = "text/plain";
  form.body = secret;
  expect(http(at, form), "POST", "/api/v1/pipelines/EchoTwice/trigger", 415);
  expect(get(at, "/ui/pipelines?pipeline=" + secret), "GET", "/ui/pipelines", 200);
  expect(get(at, "/metrics"), "GET", "/metrics", 200);

  ProcessResult stopped = serve.stop();
  ASSERT_EQ(stopped.exit_code, 0) << stopped.describe();
  const std::vector<json> lines = log_lines(stopped.out, {"HTTP request", "HTTP request failed"});
  ASSERT_EQ(lines.size(), sent.size()) << stopped.out;
  const std::set<std::string> fields = {"ts", "level", "msg", "role", "pid", "method", "path", "status", "duration_ms"};
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& line = lines[i];
    SCOPED_TRACE(line.dump());
    std::set<std::string> keys;
    for (const auto& [key, _] : line.items()) keys.insert(key);
    EXPECT_EQ(keys, fields);
    EXPECT_EQ(line["msg"], "HTTP request");
    EXPECT_EQ(line["level"], "debug");
    EXPECT_EQ(line["role"], "http");
    EXPECT_EQ(line["pid"], serve.process().pid());
    EXPECT_EQ(line["method"], sent[i].method);
    EXPECT_EQ(line["path"], sent[i].path);
    EXPECT_EQ(line["status"], sent[i].status);
    ASSERT_TRUE(line["duration_ms"].is_number());
    EXPECT_GE(line["duration_ms"].get<double>(), 0.0);
    EXPECT_LT(line["duration_ms"].get<double>(), 30000.0);
    EXPECT_TRUE(std::regex_match(line["ts"].get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
  }
  // No query, header or body reached the log.
  EXPECT_EQ(stopped.out.find(secret), std::string::npos) << stopped.out;
  EXPECT_EQ(stopped.err.find(secret), std::string::npos) << stopped.err;
  EXPECT_EQ(stopped.out.find(kToken), std::string::npos);
}

// `serve` in a terminal that hangs up (or a SIGHUP sent by mistake) goes
// on serving; SIGTERM still stops it.
TEST(ServeSignalTest, ServeIgnoresSighupAndKeepsAnswering) {
  Workspace ws(http_options());
  define_echo(ws);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string& at = serve.address();
  const pid_t pid = serve.process().pid();
  for (int i = 0; i < 3; ++i) {
    // To the process group, as a terminal's hang-up is sent. A fatal
    // signal starts the process's exit within kill() itself, so an answer
    // after it proves the signal did not end the server.
    ASSERT_EQ(::kill(-pid, SIGHUP), 0);
    EXPECT_EQ(get(at, "/healthz", "").status, 200) << "after SIGHUP " << i + 1;
    Reply made = post(at, "/api/v1/pipelines/EchoTwice/trigger", "{}");
    EXPECT_EQ(made.status, 201) << made.body;
  }
  ASSERT_TRUE(serve.process().running());
  EXPECT_EQ(serve.process().stdout_so_far().find("Shutdown requested"), std::string::npos)
      << serve.process().stdout_so_far();
  ProcessResult stopped = serve.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  EXPECT_EQ(count_of(stopped.out, "\"Shutdown requested\""), 1u) << stopped.out;
  EXPECT_EQ(ws.list().size(), 3u);
}

}  // namespace
}  // namespace ductwork::it
