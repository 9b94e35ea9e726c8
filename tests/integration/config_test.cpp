// Configuration through the real binary: a ductwork.yml with each kind of
// mistake is refused by `start` and `validate` (exit 2, the mistake named,
// nothing written); every DUCTWORK_* override takes effect; the log formats
// and levels; `pipelines: "*"`; a file written for the Ruby gem (environment
// sections chosen by DUCTWORK_ENV / RAILS_ENV, merge keys, its spellings).
#include <regex>
#include <sstream>

#include "harness.h"

namespace ductwork::it {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// Pipelines A (Inc, Double) and B (Inc, Inc), both defined by files.
void define_pipelines(Workspace& ws) {
  ws.define("a.yml", chain_definition("A", {"Inc", "Double"}));
  ws.define("b.yml", chain_definition("B", {"Inc", "Inc"}));
}

// The workspace's paths, fast loops, then `body` (which must give
// `pipelines`, and may give any section the head does not).
std::string config_text(const Workspace& ws, const std::string& body) {
  std::ostringstream y;
  y << ws.database_yaml() << "plugins: {directory: \"" << DUCTWORK_PLUGIN_DIR << "\"}\n"
    << "definitions: {directory: \"" << ws.definitions_dir() << "\"}\n"
    << body;
  return y.str();
}

const char* const kFast =
    "job_worker: {count: 2, polling_timeout: 0.05, retry_delay: 0.05}\n"
    "pipeline_advancer: {count: 2, polling_timeout: 0.05}\n"
    "supervisor: {polling_timeout: 0.1}\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// --- Each kind of mistake -------------------------------------------------

struct Mistake {
  const char* name;
  std::string body;                  // after the head; replaces `pipelines: "*"` + kFast
  std::vector<std::string> needles;  // all on stderr
  // Needs the loaded definitions to be seen (checked by `start` and
  // `validate` once definitions are loaded; `parse_config` alone cannot).
  bool needs_definitions = false;
};

std::string fast_with(const std::string& job_worker_extra) {
  return "pipelines: \"*\"\njob_worker: {polling_timeout: 0.05, retry_delay: 0.05, " + job_worker_extra +
         "}\npipeline_advancer: {count: 2, polling_timeout: 0.05}\n";
}

std::vector<Mistake> mistakes() {
  return {
      {"UnknownTopLevelKey", std::string("pipelines: \"*\"\njob_workers: {count: 2}\n"),
       {"ductwork.yml:5: job_workers: unknown key, did you mean 'job_worker'?"}},
      {"UnknownNestedKey", fast_with("max_retries: 2"),
       {"job_worker.max_retries: unknown key, did you mean 'job_worker.max_retry'?", "expected one of: batch, count,"}},
      {"WrongType", fast_with("count: [1, 2]"),
       {"job_worker.count: expected an integer from 1 to 1000, or a map of default/pipeline name to one, got a list"}},
      {"WrongTypeInAStepEntry", fast_with("max_retry: {A: {Inc: lots}}"),
       {"job_worker.max_retry.A.Inc: expected an integer >= 0, got \"lots\""}},
      {"OutOfRange", fast_with("count: 5000"), {"job_worker.count: expected an integer from 1 to 1000, got 5000"}},
      {"NegativeDuration", fast_with("shutdown_timeout: -1"),
       {"job_worker.shutdown_timeout: expected a duration in seconds", "got -1"}},
      {"PollingThatWouldSpin", "pipelines: \"*\"\njob_worker: {polling_timeout: 0}\n",
       {"job_worker.polling_timeout: expected a duration in seconds (a number from 0.01 to 31536000", "got 0"}},
      {"AdvancerPollingThatWouldSpin", "pipelines: \"*\"\npipeline_advancer: {polling_timeout: 0.001}\n",
       {"pipeline_advancer.polling_timeout: expected a duration in seconds (a number from 0.01", "got 0.001"}},
      {"ReaperThatWouldRestartHealthyChildren",
       "pipelines: \"*\"\nsupervisor: {polling_timeout: 0.01, reaper_timeout: 0.000001}\n",
       {"supervisor.reaper_timeout: expected a duration in seconds (a number from 0.5", "got 0.000001"}},
      {"TooManyThreadsAcrossPipelines", fast_with("count: {A: 1000, B: 1000}"),
       {"job_worker.count: the 2 hosted pipelines would run 2002 loop threads (job workers A: 1000, B: 1000; "
        "advancers 2), at most 1024 per host"},
       true},
      {"ReaperFasterThanHeartbeat", "pipelines: \"*\"\nsupervisor: {polling_timeout: 2, reaper_timeout: 1}\n",
       {"supervisor.reaper_timeout: expected a duration greater than supervisor.polling_timeout (2), got 1"}},
      {"UnknownRole", "pipelines: \"*\"\nrole: wroker\n",
       {"role: expected one of: all, advancer, worker, got \"wroker\", did you mean 'worker'?"}},
      {"UnknownForking", "pipelines: \"*\"\nforking: threads\n", {"forking: expected \"fork\"", "got \"threads\""}},
      {"UnknownLogLevel", "pipelines: \"*\"\nlogger: {level: verbose}\n",
       {"logger.level: expected one of: debug, info, warn, error, or a Ruby Logger level 0-5, got \"verbose\""}},
      {"UnknownLogFormat", "pipelines: \"*\"\nlogger: {format: jsno}\n",
       {"logger.format: expected one of: json, text, got \"jsno\", did you mean 'json'?"}},
      {"SectionThatIsNotAMap", "pipelines: \"*\"\nlogger: verbose\n",
       {"logger: expected a map with the keys format, level, got \"verbose\""}},
      {"EmptyPipelinesList", "pipelines: []\n", {"pipelines: expected a non-empty list of pipeline names", "got an empty list"}},
      {"MissingPipelines", std::string(kFast), {"pipelines: required"}},
      {"PipelineListedTwice", "pipelines: [A, A]\n", {"pipelines[1]: 'A' is listed twice"}},
      {"SectionGivenTwice", "pipelines: \"*\"\nsupervisor: {polling_timeout: 1}\nsupervisor: {polling_timeout: 2}\n",
       {"ductwork.yml:6: supervisor: given twice (first on line 5)"}},
      {"HttpListenShape", "pipelines: \"*\"\nhttp: {listen: \"localhost\"}\n",
       {"http.listen: expected a \"host:port\" address", "got \"localhost\""}},
      {"HttpListenBeyondLoopbackWithoutAToken", "pipelines: \"*\"\nhttp: {listen: \":8080\"}\n",
       {"http.listen: \":8080\" is reachable from other machines, and no token is set"}},
      {"HttpTokenTooShort", "pipelines: \"*\"\nhttp: {token: \"abc\"}\n",
       {"http.token: expected a token of at least 16 characters (it is not shown)"}},
      {"NotYaml", "pipelines: [unclosed\n", {"ductwork.yml", "not valid YAML"}},
      {"PerPipelineMapNamesAnUndefinedPipeline", fast_with("max_crash: {default: 3, b: 1}"),
       {"job_worker.max_crash.b: expected a defined pipeline name, got 'b', did you mean 'B'?", "(defined: A, B"},
       true},
      {"PerStepEntryNamesAStepThePipelineLacks", fast_with("max_retry: {A: {default: 2, Dobule: 1}}"),
       {"job_worker.max_retry.A.Dobule: expected a step class of pipeline A, got 'Dobule', did you mean 'Double'?",
        "(its steps: Double, Inc)"},
       true},
      {"MaxDepthStepOfAnotherPipeline",
       "pipelines: \"*\"\npipeline_advancer: {steps: {max_depth: {B: {Double: 3}}}}\n",
       {"pipeline_advancer.steps.max_depth.B.Double: expected a step class of pipeline B, got 'Double'"}, true},
  };
}

// Parameter: whether a database with one triggered run exists beforehand.
class ConfigMistakeTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    define_pipelines(ws_);
    ws_.write_config_text(config_text(ws_, std::string("pipelines: \"*\"\n") + kFast));
    if (GetParam()) {
      ASSERT_FALSE(ws_.trigger("A", {"1"}).empty());
    }
  }

  // `ductwork ARGS` exits 2 with every needle on stderr, prints nothing on
  // stdout but start's early log lines, and leaves the database as it was.
  void expect_refused(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
    SCOPED_TRACE("ductwork " + ::testing::PrintToString(args));
    DbSnapshot before = ws_.snapshot();
    ASSERT_EQ(before.exists, GetParam());
    testsupport::ProcessResult r = ws_.run(args, 15);
    EXPECT_EQ(r.exit_code, 2) << r.describe() << "\nstderr: " << r.err << "\nstdout: " << r.out;
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "stderr lacks [" << n << "]: " << r.err;
    for (const auto& line : lines_of(r.out)) {
      json entry = json::parse(line, nullptr, false);
      ASSERT_TRUE(entry.is_object()) << "a non-log line on stdout: [" << line << "]";
      EXPECT_NE(entry.value("msg", ""), "Host started") << line;
      EXPECT_NE(entry.value("msg", ""), "Supervisor started") << line;
    }
    EXPECT_EQ(ws_.snapshot(), before) << "the database must be unchanged";
  }

  Workspace ws_{empty_database()};
};

TEST_P(ConfigMistakeTest, EachKindOfMistakeIsRefusedByStartAndValidateNamingIt) {
  for (const Mistake& m : mistakes()) {
    SCOPED_TRACE(m.name);
    ws_.write_config_text(config_text(ws_, m.body));
    expect_refused({"start", "--drain"}, m.needles);
    expect_refused({"validate"}, m.needles);
  }
}

TEST_P(ConfigMistakeTest, ThePostgresqlAdapterNeedsAUrl) {
  ws_.write_config_text("plugins: {directory: \"" DUCTWORK_PLUGIN_DIR "\"}\ndefinitions: {directory: \"" +
                        ws_.definitions_dir() + "\"}\npipelines: \"*\"\ndatabase: {adapter: postgresql}\n");
  for (const char* cmd : {"start", "validate", "migrate"}) {
    expect_refused({cmd}, {"database.url: required with database.adapter postgresql"});
  }
}

// A server that does not answer fails the command at once, naming the
// database without its password, and writes nothing anywhere.
TEST_P(ConfigMistakeTest, AnUnreachablePostgresqlServerIsAClearError) {
  ws_.write_config_text("plugins: {directory: \"" DUCTWORK_PLUGIN_DIR "\"}\ndefinitions: {directory: \"" +
                        ws_.definitions_dir() + "\"}\npipelines: \"*\"\n" +
                        "database: {adapter: postgresql, url: \"postgresql://dw:s3cret@127.0.0.1:1/nowhere\"}\n");
  ws_.define("a.yml", chain_definition("A", {"Inc"}));
  for (const auto& cmd : std::vector<std::vector<std::string>>{{"migrate"}, {"trigger", "A", "1"}, {"start", "--drain"}}) {
    testsupport::ProcessResult r = ws_.run(cmd, 20);
    EXPECT_EQ(r.exit_code, 2) << cmd[0] << ": " << r.describe();
    EXPECT_NE(r.err.find("postgresql://dw@127.0.0.1:1/nowhere: cannot connect"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << "the password must not be shown: " << r.err;
  }
}

TEST_P(ConfigMistakeTest, EveryNameMistakeIsListedAtOnce) {
  ws_.write_config_text(config_text(
      ws_, fast_with("max_crash: {Nope: 1}, max_retry: {A: {Inc: 1, Nada: 2}}") +
               "pipeline_advancer_x: 1\n"));
  // A parse error comes first and alone...
  expect_refused({"start", "--drain"}, {"pipeline_advancer_x: unknown key, did you mean 'pipeline_advancer'?"});
  ws_.write_config_text(config_text(ws_, fast_with("max_crash: {Nope: 1}, max_retry: {A: {Inc: 1, Nada: 2}}")));
  // ...names that need the definitions are all listed together.
  expect_refused({"start", "--drain"}, {"2 keys name what is not defined", "job_worker.max_crash.Nope",
                                        "job_worker.max_retry.A.Nada"});
}

TEST_P(ConfigMistakeTest, BadEnvironmentValuesAreRefusedNamingTheVariable) {
  const std::vector<std::pair<Env, std::vector<std::string>>> cases = {
      {{{"DUCTWORK_LOG_LEVEL", "loud"}}, {"DUCTWORK_LOG_LEVEL (logger.level): expected one of: debug, info, warn, error, or a Ruby Logger level 0-5, got \"loud\""}},
      {{{"DUCTWORK_LOG_FORMAT", "txt"}}, {"DUCTWORK_LOG_FORMAT (logger.format): expected one of: json, text, got \"txt\", did you mean 'text'?"}},
      {{{"DUCTWORK_FORKING", "maybe"}}, {"DUCTWORK_FORKING (forking): expected fork or none, got \"maybe\""}},
      {{{"DUCTWORK_PIPELINES", "A,,B"}}, {"DUCTWORK_PIPELINES (pipelines): expected a comma-separated list", "got \"A,,B\""}},
      {{{"DUCTWORK_ROLE", "janitor"}}, {"DUCTWORK_ROLE (role)", "got \"janitor\""}},
      {{{"DUCTWORK_DATABASE_URL", "mysql://db.example/ductwork"}}, {"adapter mysql is not supported by this build"}},
      {{{"DUCTWORK_DATABASE_URL", "sqlite://host/x.db"}}, {"DUCTWORK_DATABASE_URL (database): expected a SQLite file"}},
  };
  for (const auto& [env, needles] : cases) {
    SCOPED_TRACE(env[0].first + "=" + env[0].second);
    DbSnapshot before = ws_.snapshot();
    for (const auto& cmd : std::vector<std::vector<std::string>>{{"start", "--drain"}, {"validate"}, {"trigger", "A", "1"}}) {
      testsupport::ProcessResult r = ws_.run_with_env(cmd, env, 15);
      EXPECT_EQ(r.exit_code, 2) << cmd[0] << ": " << r.describe() << " " << r.err;
      for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << cmd[0] << " stderr lacks [" << n << "]: " << r.err;
    }
    EXPECT_EQ(ws_.snapshot(), before);
  }
}

INSTANTIATE_TEST_SUITE_P(Database, ConfigMistakeTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Existing") : std::string("Absent");
                         });

// `validate` checks the configuration's pipeline and step names against the
// definitions it loads (Bootstrap::config_problems), every mistake at once.
TEST(ConfigNamesAtValidate, PerPipelineAndPerStepNamesAreCheckedByValidate) {
  Workspace ws(empty_database());
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, fast_with("max_crash: {Bee: 1}, max_retry: {A: {Dobule: 1}}")));
  testsupport::ProcessResult r = ws.run({"validate"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("job_worker.max_crash.Bee"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("job_worker.max_retry.A.Dobule"), std::string::npos) << r.err;
  EXPECT_FALSE(ws.database_created());
}

// --- Pipelines ------------------------------------------------------------

TEST(ConfigPipelinesTest, StarRunsEveryLoadedPipeline) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\n") + kFast));
  std::string a = ws.trigger("A", {"1"});
  std::string b = ws.trigger("B", {"1"});
  ws.drain();
  EXPECT_EQ(ws.status(a)["status"], "completed");
  EXPECT_EQ(ws.status(b)["status"], "completed");
}

TEST(ConfigPipelinesTest, AListRunsOnlyThoseAndDuctworkPipelinesOverridesIt) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: [A]\n") + kFast));
  std::string a = ws.trigger("A", {"1"});
  std::string b = ws.trigger("B", {"1"});
  ws.drain();  // drains A's runs only
  EXPECT_EQ(ws.status(a)["status"], "completed");
  EXPECT_NE(ws.status(b)["status"], "completed");

  testsupport::ProcessResult r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_PIPELINES", " B , A "}});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.status(b)["status"], "completed");

  r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_PIPELINES", "A,b"}});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("DUCTWORK_PIPELINES: 'b' is not defined"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'B'?"), std::string::npos) << r.err;
}

TEST(ConfigPipelinesTest, DuctworkPipelinesStandsInForAMissingKey) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, kFast));  // no `pipelines`
  EXPECT_EQ(ws.run({"trigger", "A", "1"}).exit_code, 2) << "pipelines is required without the variable";
  Env env{{"DUCTWORK_PIPELINES", "*"}};
  testsupport::ProcessResult t = ws.run_with_env({"trigger", "A", "1"}, env);
  ASSERT_EQ(t.exit_code, 0) << t.describe();
  testsupport::ProcessResult r = ws.run_with_env({"start", "--drain"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  testsupport::ProcessResult s = ws.run_with_env({"status", t.out.substr(0, t.out.find('\n')), "--json"}, env);
  EXPECT_EQ(parse_json(s.out, "status")["status"], "completed");
}

// --- Environment overrides ------------------------------------------------

TEST(ConfigEnvironmentTest, DatabaseUrlPointsEveryCommandAtAnotherFile) {
  Workspace ws(empty_database());
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\n") + kFast));
  const std::string other = ws.file("elsewhere/other.sqlite3");
  ws.write("elsewhere/.keep", "");
  for (const std::string& url : std::vector<std::string>{"sqlite://" + other, "sqlite:elsewhere/other.sqlite3", other}) {
    SCOPED_TRACE(url);
    Env env{{"DUCTWORK_DATABASE_URL", url}};
    testsupport::ProcessResult t = ws.run_with_env({"trigger", "A", "2"}, env);
    ASSERT_EQ(t.exit_code, 0) << t.describe() << t.err;
    std::string id = t.out.substr(0, t.out.find('\n'));
    EXPECT_TRUE(testsupport::file_exists(other));
    EXPECT_FALSE(ws.database_created()) << "the file's database must not be touched";

    EXPECT_EQ(ws.run_with_env({"start", "--drain"}, env).exit_code, 0);
    testsupport::ProcessResult s = ws.run_with_env({"status", id, "--json"}, env);
    ASSERT_EQ(s.exit_code, 0) << s.describe() << s.err;
    EXPECT_EQ(parse_json(s.out, "status")["status"], "completed");
    // Without the variable, the configured (absent) database knows nothing.
    EXPECT_EQ(ws.run({"status", id, "--json"}).exit_code, 2);
  }
}

TEST(ConfigEnvironmentTest, PluginsAndDefinitionsDirectories) {
  Workspace ws;
  ws.write_config_text(ws.database_yaml() +
                       "plugins: {directory: no-plugins}\ndefinitions: {directory: no-definitions}\n"
                       "pipelines: \"*\"\n" + kFast);
  ws.write("other-defs/c.yml", chain_definition("C", {"Inc", "Inc", "Inc"}));
  EXPECT_EQ(ws.run({"trigger", "C", "0"}).exit_code, 2) << "C is not in the configured directory";

  Env env{{"DUCTWORK_DEFINITIONS_DIRECTORY", "other-defs"}};  // relative to the current directory
  // C is found now, but no plugin of the configured directory exports Inc:
  // trigger and start both refuse it, naming the step.
  testsupport::ProcessResult t = ws.run_with_env({"trigger", "C", "0"}, env);
  EXPECT_EQ(t.exit_code, 2) << t.describe();
  EXPECT_NE(t.err.find("step Inc is not exported"), std::string::npos) << t.err;
  testsupport::ProcessResult r = ws.run_with_env({"start", "--drain"}, env);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("Inc"), std::string::npos) << r.err;
  // ...the variable points at one that does.
  env.emplace_back("DUCTWORK_PLUGINS_DIRECTORY", DUCTWORK_PLUGIN_DIR);
  t = ws.run_with_env({"trigger", "C", "0"}, env);
  ASSERT_EQ(t.exit_code, 0) << t.describe() << t.err;
  std::string id = t.out.substr(0, t.out.find('\n'));
  r = ws.run_with_env({"start", "--drain"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  testsupport::ProcessResult s = ws.run_with_env({"status", id, "--json"}, env);
  EXPECT_EQ(parse_json(s.out, "status")["status"], "completed");
}

// The roles in a start's JSON log lines.
std::set<std::string> log_roles(const std::string& out) {
  std::set<std::string> roles;
  for (const auto& line : lines_of(out)) {
    json entry = json::parse(line, nullptr, false);
    if (entry.is_object()) roles.insert(entry.value("role", ""));
  }
  return roles;
}

TEST(ConfigEnvironmentTest, ForkingChoosesProcessesOrThreads) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\n") + kFast));
  ws.trigger("A", {"1"});
  testsupport::ProcessResult forked = ws.run({"start", "--drain"});
  ASSERT_EQ(forked.exit_code, 0) << forked.describe();
  EXPECT_TRUE(log_roles(forked.out).count("supervisor")) << forked.out;

  ws.trigger("A", {"1"});
  testsupport::ProcessResult threaded = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_FORKING", "none"}});
  ASSERT_EQ(threaded.exit_code, 0) << threaded.describe();
  EXPECT_EQ(log_roles(threaded.out), std::set<std::string>{"host"}) << threaded.out;
}

// --- Logs -----------------------------------------------------------------

TEST(ConfigLogTest, JsonLinesCarryTheStableFieldsByDefault) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\nlogger: {level: debug}\n") + kFast));
  std::string id = ws.trigger("A", {"1"});
  testsupport::ProcessResult r = ws.run({"start", "--drain"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  bool saw_claim = false;
  for (const auto& line : lines_of(r.out)) {
    json entry = json::parse(line, nullptr, false);
    ASSERT_TRUE(entry.is_object()) << line;
    for (const char* key : {"ts", "level", "msg", "role", "pid"}) EXPECT_TRUE(entry.contains(key)) << key << ": " << line;
    EXPECT_TRUE(std::regex_match(entry.value("ts", ""),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")))
        << line;
    EXPECT_TRUE(entry["pid"].is_number_integer()) << line;
    if (entry.value("msg", "") == "Job claimed") {
      saw_claim = true;
      for (const char* key : {"pipeline", "run_id", "branch_id", "job_id", "step"}) {
        EXPECT_TRUE(entry.contains(key)) << key << ": " << line;
      }
      EXPECT_EQ(entry.value("pipeline", ""), "A");
      EXPECT_EQ(entry.value("level", ""), "debug");
      EXPECT_EQ(entry.value("role", ""), "worker");
    }
  }
  EXPECT_TRUE(saw_claim) << "logger.level: debug shows each claim:\n" << r.out;
}

TEST(ConfigLogTest, TextFormatGivesOneHumanLinePerEntry) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\n") + kFast));
  ws.trigger("A", {"1"});
  for (const auto& [env, where] : std::vector<std::pair<Env, std::string>>{
           {{{"DUCTWORK_LOG_FORMAT", "text"}}, "DUCTWORK_LOG_FORMAT"}, {{}, "logger.format"}}) {
    SCOPED_TRACE(where);
    if (env.empty()) ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\nlogger: {format: text}\n") + kFast));
    testsupport::ProcessResult r = ws.run_with_env({"start", "--drain"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    static const std::regex text_line(R"(^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO |WARN |ERROR) \[[a-z]+ \d+\] \S.*$)");
    bool saw_started = false;
    for (const auto& line : lines_of(r.out)) {
      EXPECT_TRUE(std::regex_match(line, text_line)) << "not a text log line: [" << line << "]";
      EXPECT_NE(line.front(), '{') << line;
      if (line.find("INFO  [supervisor ") != std::string::npos && line.find("] Supervisor started ") != std::string::npos) {
        saw_started = true;
        EXPECT_NE(line.find(" pipelines=[\"A\",\"B\"]"), std::string::npos) << line;
      }
    }
    EXPECT_TRUE(saw_started) << r.out;
  }
  // The variable also overrides the file back to JSON.
  testsupport::ProcessResult r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_LOG_FORMAT", "json"}});
  ASSERT_EQ(r.exit_code, 0);
  for (const auto& line : lines_of(r.out)) EXPECT_TRUE(json::parse(line, nullptr, false).is_object()) << line;
}

TEST(ConfigLogTest, LevelFiltersAndTheVariableOverridesTheFile) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\n") + kFast));
  auto levels = [](const std::string& out) {
    std::set<std::string> seen;
    for (const auto& line : lines_of(out)) seen.insert(json::parse(line, nullptr, false).value("level", "?"));
    return seen;
  };
  ws.trigger("A", {"1"});
  testsupport::ProcessResult r = ws.run({"start", "--drain"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(levels(r.out).count("info")) << r.out;

  ws.trigger("A", {"1"});
  r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_LOG_LEVEL", "error"}});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "") << "DUCTWORK_LOG_LEVEL=error silences info lines";

  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\nlogger: {level: error}\n") + kFast));
  std::string id = ws.trigger("A", {"1"});
  r = ws.run({"start", "--drain"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "") << "logger.level: error silences info lines";
  EXPECT_EQ(ws.status(id)["status"], "completed");

  ws.trigger("A", {"1"});
  r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_LOG_LEVEL", "info"}});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(levels(r.out).count("info")) << "the variable overrides the file: " << r.out;
}

TEST(ConfigLogTest, AnUnknownDuctworkVariableIsAWarningNotAnError) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(config_text(ws, std::string("pipelines: \"*\"\n") + kFast));
  testsupport::ProcessResult r = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_LOGLEVEL", "error"}});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("unknown environment variable DUCTWORK_LOGLEVEL ignored, did you mean 'DUCTWORK_LOG_LEVEL'?"),
            std::string::npos)
      << r.out;
}

// --- A file written for the Ruby gem --------------------------------------

// Rails-style sections sharing `default` through a merge key, in the gem's
// spellings: forking: default, a numeric logger.level, logger.source, and
// per-pipeline advancer counts and polling timeouts. development names a
// pipeline that does not exist; production logs at level 0 (debug).
std::string ruby_style_config(const Workspace& ws) {
  std::ostringstream y;
  y << "default: &default\n"
    << "  " << ws.database_yaml() << "  plugins: {directory: \"" << DUCTWORK_PLUGIN_DIR << "\"}\n"
    << "  definitions: {directory: \"" << ws.definitions_dir() << "\"}\n"
    << "  pipelines: \"*\"\n"
    << "  forking: default\n"
    << "  logger:\n"
    << "    level: 1\n"
    << "    source: rails\n"
    << "  job_worker: {count: 2, polling_timeout: 0.05, retry_delay: 0.05}\n"
    << "  pipeline_advancer: {count: {default: 1, A: 2}, polling_timeout: {default: 0.05, B: 0.02}}\n"
    << "  supervisor: {polling_timeout: 0.1}\n"
    << "\n"
    << "development:\n"
    << "  <<: *default\n"
    << "  pipelines: [Nope]\n"
    << "\n"
    << "production:\n"
    << "  <<: *default\n"
    << "  logger: {level: 0, source: rails}\n";  // replaces default's logger whole (a shallow merge)
  return y.str();
}

// `ductwork ARGS` with exactly these of DUCTWORK_ENV, RAILS_ENV and RACK_ENV
// (whatever the test runner's environment holds).
testsupport::ProcessResult run_in_env(const Workspace& ws, const std::vector<std::string>& args, const Env& env) {
  testsupport::ProcessOptions options = ws.process_options(30);
  options.env = env;
  for (const char* name : {"DUCTWORK_ENV", "RAILS_ENV", "RACK_ENV"}) {
    bool given = false;
    for (const auto& [k, _] : env) given = given || k == name;
    if (!given) options.unset_env.push_back(name);
  }
  return testsupport::run_process(ws.command(args), options);
}

std::string trigger_in_env(const Workspace& ws, const std::string& pipeline, const Env& env) {
  testsupport::ProcessResult r = run_in_env(ws, {"trigger", pipeline, "1"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  return r.out.substr(0, r.out.find('\n'));
}

std::string status_in_env(const Workspace& ws, const std::string& id, const Env& env) {
  testsupport::ProcessResult r = run_in_env(ws, {"status", id, "--json"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  return parse_json(r.out, "status").value("status", "");
}

// The start's JSON lines: how many at debug level, and the warnings.
struct StartLog {
  int debug_lines = 0;
  std::vector<std::string> warnings;
};

StartLog start_log(const std::string& out) {
  StartLog log;
  for (const auto& line : lines_of(out)) {
    json entry = json::parse(line, nullptr, false);
    if (!entry.is_object()) continue;
    if (entry.value("level", "") == "debug") ++log.debug_lines;
    if (entry.value("msg", "") == "Configuration warning") log.warnings.push_back(entry.value("warning", ""));
  }
  return log;
}

TEST(ConfigRubyStyleTest, TheSectionOfDuctworkEnvOrRailsEnvRuns) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(ruby_style_config(ws));
  for (const Env& env : std::vector<Env>{{{"DUCTWORK_ENV", "production"}}, {{"RAILS_ENV", "production"}},
                                         {{"RACK_ENV", "development"}, {"DUCTWORK_ENV", "production"}}}) {
    SCOPED_TRACE(env[0].first);
    std::string a = trigger_in_env(ws, "A", env);
    std::string b = trigger_in_env(ws, "B", env);
    testsupport::ProcessResult r = run_in_env(ws, {"start", "--drain"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
    EXPECT_EQ(status_in_env(ws, a, env), "completed");
    EXPECT_EQ(status_in_env(ws, b, env), "completed");
    StartLog log = start_log(r.out);
    EXPECT_GT(log.debug_lines, 0) << "production's logger.level 0 is debug:\n" << r.out;
    EXPECT_TRUE(log_roles(r.out).count("supervisor")) << "forking: default forks: " << r.out;
    ASSERT_FALSE(log.warnings.empty()) << r.out;
    EXPECT_NE(log.warnings[0].find("logger.source: a setting of the Ruby gem, ignored"), std::string::npos)
        << log.warnings[0];
  }
}

TEST(ConfigRubyStyleTest, WithoutAVariableTheDevelopmentSectionIsRead) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(ruby_style_config(ws));
  testsupport::ProcessResult r = run_in_env(ws, {"start", "--drain"}, {});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("'Nope' is not defined"), std::string::npos) << r.err;
}

TEST(ConfigRubyStyleTest, AMissingSectionIsRefusedNamingTheVariableAndTheSections) {
  Workspace ws;
  define_pipelines(ws);
  ws.write_config_text(ruby_style_config(ws));
  DbSnapshot before = ws.snapshot();
  for (const auto& cmd : std::vector<std::vector<std::string>>{{"start", "--drain"}, {"validate"}, {"trigger", "A", "1"}}) {
    testsupport::ProcessResult r = run_in_env(ws, cmd, {{"DUCTWORK_ENV", "staging"}});
    EXPECT_EQ(r.exit_code, 2) << cmd[0] << ": " << r.describe();
    EXPECT_NE(r.err.find(ws.config_path() + ": environment section \"staging\" (from DUCTWORK_ENV) not found; the "
                         "file's sections: default, development, production"),
              std::string::npos)
        << cmd[0] << ": " << r.err;
  }
  EXPECT_EQ(ws.snapshot(), before);
}

}  // namespace
}  // namespace ductwork::it
