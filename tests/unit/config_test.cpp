#include "config/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "config/config_check.h"
#include "temp_dir.h"
#include "util/suggest.h"

namespace ductwork {
namespace {

Config parse(const std::string& yaml) { return parse_config(yaml, "test.yml", "/base"); }

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Config, DefaultsFollowTheSpec) {
  Config c = parse("pipelines: '*'");
  EXPECT_TRUE(c.all_pipelines);
  EXPECT_EQ(c.job_worker.count.get("P"), 5);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "S"), 3);
  EXPECT_EQ(c.job_worker.max_crash.get("P", "S"), 10);
  EXPECT_DOUBLE_EQ(c.job_worker.polling_timeout.get("P"), 1.0);
  EXPECT_DOUBLE_EQ(c.job_worker.retry_delay, 10.0);
  EXPECT_EQ(c.pipeline_advancer.count.get("P"), 3);
  EXPECT_EQ(c.pipeline_advancer.max_retry.get("P"), 10);
  EXPECT_DOUBLE_EQ(c.supervisor.reaper_timeout, 300.0);
  EXPECT_EQ(c.database.adapter, "sqlite");
  EXPECT_EQ(c.database.path, "/base/ductwork.sqlite3");
}

// SPEC §18: how long a signalled event is kept (a day unless set).
TEST(Config, EventsRetention) {
  EXPECT_DOUBLE_EQ(parse("pipelines: '*'").events.retention, 86400);
  EXPECT_DOUBLE_EQ(parse("pipelines: '*'\nevents: {retention: 600.5}").events.retention, 600.5);
  EXPECT_DOUBLE_EQ(parse("pipelines: '*'\nevents: {retention: 0}").events.retention, 0);
  EXPECT_NE(error_of("pipelines: '*'\nevents: {retention: -1}").find("events.retention"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nevents: {retention: soon}").find("a duration in seconds"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nevents: {keep: 5}").find("unknown key"), std::string::npos)
      << error_of("pipelines: '*'\nevents: {keep: 5}");
}

TEST(Config, RelativePathsResolveAgainstTheFileDirectory) {
  Config c = parse("pipelines: [A]\ndatabase: {path: data/x.db}\nplugins: {directory: /abs/plugins}");
  EXPECT_EQ(c.database.path, "/base/data/x.db");
  EXPECT_EQ(c.plugins_directory, "/abs/plugins");
  EXPECT_FALSE(c.all_pipelines);
  EXPECT_TRUE(c.runs_pipeline("A"));
  EXPECT_FALSE(c.runs_pipeline("B"));
}

TEST(Config, DurationsAcceptFractions) {
  Config c = parse("pipelines: '*'\njob_worker: {polling_timeout: 0.05, retry_delay: 0.25}");
  EXPECT_DOUBLE_EQ(c.job_worker.polling_timeout.get("X"), 0.05);
  EXPECT_DOUBLE_EQ(c.job_worker.retry_delay, 0.25);
}

TEST(Config, PerPipelineAndPerStepValues) {
  Config c = parse(
      "pipelines: '*'\n"
      "job_worker:\n"
      "  count: {default: 2, Big: 8}\n"
      "  max_retry: {default: 1, P: {default: 4, Flaky: 9}, Q: 6}\n");
  EXPECT_EQ(c.job_worker.count.get("Other"), 2);
  EXPECT_EQ(c.job_worker.count.get("Big"), 8);
  EXPECT_EQ(c.job_worker.max_retry.get("Other", "Flaky"), 1);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "Other"), 4);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "Flaky"), 9);
  EXPECT_EQ(c.job_worker.max_retry.get("Q", "Flaky"), 6);
}

TEST(Config, UnknownKeyIsNamed) {
  std::string e = error_of("pipelines: '*'\njob_worker: {cuont: 2}");
  EXPECT_NE(e.find("job_worker.cuont"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("test.yml:2"), std::string::npos) << e;
}

TEST(Config, WrongShapesAreNamedWithTheExpectedShape) {
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {count: many}").find("job_worker.count: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {count: 0}").find("an integer from 1 to 1000, got 0"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {retry_delay: -1}").find("job_worker.retry_delay"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: 5").find("pipelines"), std::string::npos);
  EXPECT_NE(error_of("database: {path: x}").find("pipelines: required"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\ndatabase: {adapter: oracle}").find("database.adapter"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nlogger: {level: loud}").find("logger.level"), std::string::npos);
  EXPECT_NE(error_of("pipelines: [unclosed").find("not valid YAML"), std::string::npos);
}

TEST(Config, UnreadableFileIsAnError) {
  EXPECT_THROW(load_config("/nonexistent/ductwork.yml"), ConfigError);
  testsupport::TempDir dir;
  EXPECT_THROW(load_config(dir.path()), ConfigError);  // a directory is not a file
}

TEST(Config, LoadsAnExplicitFile) {
  testsupport::TempDir dir;
  std::string path = dir.write("conf/ductwork.yml", "pipelines: [A]\ndatabase: {path: db.sqlite3}\n");
  Config c = load_config(path);
  EXPECT_EQ(c.source, path);
  EXPECT_EQ(c.database.path, dir.path() + "/conf/db.sqlite3");
}

TEST(Config, EveryKeyOfTheSpecIsAccepted) {
  Config c = parse(
      "pipelines: [A, B]\n"
      "role: worker\n"
      "forking: none\n"
      "database: {adapter: sqlite, path: db.sqlite3}\n"
      "plugins: {directory: p}\n"
      "definitions: {directory: d}\n"
      "job_worker:\n"
      "  count: {default: 2, A: 3}\n"
      "  max_retry: {default: 1, A: {default: 2, S: 0}}\n"
      "  max_crash: {A: {S: 7}}\n"
      "  polling_timeout: {default: 0.5, B: 0.25}\n"
      "  retry_delay: 0.1\n"
      "  shutdown_timeout: 5\n"
      "pipeline_advancer:\n"
      "  count: 4\n"
      "  max_retry: {default: 9, A: 8}\n"
      "  max_crash: 6\n"
      "  polling_timeout: 0.2\n"
      "  shutdown_timeout: 7\n"
      "  steps: {max_depth: {default: 100, A: {S: -1}}}\n"
      "supervisor: {polling_timeout: 0.5, reaper_timeout: 60, shutdown_timeout: 9}\n"
      "logger: {level: warn, format: text}\n");
  EXPECT_EQ(c.pipelines, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(c.role, "worker");
  EXPECT_FALSE(c.forking);
  EXPECT_EQ(c.database.path, "/base/db.sqlite3");
  EXPECT_EQ(c.plugins_directory, "/base/p");
  EXPECT_EQ(c.definitions_directory, "/base/d");
  EXPECT_EQ(c.job_worker.count.get("A"), 3);
  EXPECT_EQ(c.job_worker.count.get("B"), 2);
  EXPECT_EQ(c.job_worker.max_retry.get("A", "S"), 0);
  EXPECT_EQ(c.job_worker.max_retry.get("A", "T"), 2);
  EXPECT_EQ(c.job_worker.max_retry.get("B", "S"), 1);
  EXPECT_EQ(c.job_worker.max_crash.get("A", "S"), 7);
  EXPECT_EQ(c.job_worker.max_crash.get("A", "T"), 10);
  EXPECT_DOUBLE_EQ(c.job_worker.polling_timeout.get("A"), 0.5);
  EXPECT_DOUBLE_EQ(c.job_worker.polling_timeout.get("B"), 0.25);
  EXPECT_DOUBLE_EQ(c.job_worker.retry_delay, 0.1);
  EXPECT_DOUBLE_EQ(c.job_worker.shutdown_timeout, 5);
  EXPECT_EQ(c.pipeline_advancer.count.get("A"), 4);
  EXPECT_EQ(c.pipeline_advancer.max_retry.get("A"), 8);
  EXPECT_EQ(c.pipeline_advancer.max_retry.get("B"), 9);
  EXPECT_EQ(c.pipeline_advancer.max_crash.get("A"), 6);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout.get("A"), 0.2);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.shutdown_timeout, 7);
  EXPECT_EQ(c.pipeline_advancer.max_depth.get("A", "S"), -1);
  EXPECT_EQ(c.pipeline_advancer.max_depth.get("A", "T"), 100);
  EXPECT_EQ(c.pipeline_advancer.max_depth.get("B", "S"), 100);
  EXPECT_DOUBLE_EQ(c.supervisor.polling_timeout, 0.5);
  EXPECT_DOUBLE_EQ(c.supervisor.reaper_timeout, 60);
  EXPECT_DOUBLE_EQ(c.supervisor.shutdown_timeout, 9);
  EXPECT_EQ(c.log_level, LogLevel::kWarn);
  EXPECT_EQ(c.log_format, Logger::Format::kText);
}

TEST(Config, RemainingDefaultsFollowTheSpec) {
  Config c = parse("pipelines: '*'");
  EXPECT_EQ(c.role, "all");
  EXPECT_TRUE(c.forking);
  EXPECT_DOUBLE_EQ(c.job_worker.shutdown_timeout, 20);
  EXPECT_EQ(c.pipeline_advancer.max_crash.get("P"), 10);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout.get("P"), 1);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.shutdown_timeout, 20);
  EXPECT_EQ(c.pipeline_advancer.max_depth.get("P", "S"), -1);
  EXPECT_DOUBLE_EQ(c.supervisor.polling_timeout, 1);
  EXPECT_DOUBLE_EQ(c.supervisor.shutdown_timeout, 30);
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.log_format, Logger::Format::kJson);
  EXPECT_EQ(c.plugins_directory, "/base/plugins");
  EXPECT_EQ(c.definitions_directory, "/base/pipelines");
}

TEST(Config, ErrorsSayWhatWasGiven) {
  EXPECT_EQ(error_of("pipelines: '*'\njob_worker: {count: many}"),
            "test.yml:2: job_worker.count: expected an integer from 1 to 1000, got \"many\"");
  EXPECT_EQ(error_of("pipelines: '*'\njob_worker: {retry_delay: -1}"),
            "test.yml:2: job_worker.retry_delay: expected a duration in seconds (a number from 0 to 31536000, "
            "fractions allowed), got -1");
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {retry_delay: 1e9}").find("got 1e9"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {max_retry: 2147483648}").find("got 2147483648"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\npipeline_advancer: {steps: {max_depth: -2}}")
                .find("pipeline_advancer.steps.max_depth: expected an integer >= -1, got -2"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {count: {A: {S: 1}}}")
                .find("job_worker.count.A: expected an integer from 1 to 1000, got a map"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nrole:").find("role: expected a string, got nothing"), std::string::npos);
  EXPECT_NE(error_of("pipelines: WordReport").find("(one name is written as [WordReport])"), std::string::npos);
  EXPECT_NE(error_of("pipelines: [A, '*']").find("pipelines[1]: \"*\" means every pipeline"), std::string::npos);
  EXPECT_NE(error_of("pipelines: [A, {B: 1}]").find("pipelines[1]: expected a pipeline name, got a map"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\n[a]: 1").find("expected names as keys"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\ndatabase: {adapter: mysql}")
                .find("test.yml:2: database.adapter: expected \"sqlite\" or \"postgresql\", got \"mysql\""),
            std::string::npos);
  EXPECT_EQ(error_of("pipelines: '*'\ndatabase: {adapter: postgresql, path: x.db}"),
            "test.yml:2: database.path: applies to the sqlite adapter; postgresql takes database.url");
  EXPECT_EQ(error_of("pipelines: '*'\ndatabase: {url: 'postgresql://h/d'}"),
            "test.yml:2: database.url: applies to the postgresql adapter; sqlite takes database.path");
  EXPECT_EQ(error_of("pipelines: '*'\ndatabase: {pool: 3}"),
            "test.yml:2: database.pool: applies to the postgresql adapter");
  EXPECT_NE(error_of("pipelines: '*'\ndatabase: {adapter: postgresql, url: 'postgresql://h/d', pool: 0}")
                .find("database.pool: expected an integer from 1 to 1000, got 0"),
            std::string::npos);
}

TEST(Config, TyposGetASuggestion) {
  EXPECT_EQ(error_of("pipelines: '*'\njob_worker: {cuont: 2}"),
            "test.yml:2: job_worker.cuont: unknown key, did you mean 'job_worker.count'? (expected one of: batch, count, "
            "max_crash, max_output_bytes, max_retry, polling_timeout, priority_aging, retry_delay, shutdown_timeout, timeout, "
            "timeout_grace)");
  EXPECT_NE(error_of("pipelines: '*'\nsupervisr: {}").find("supervisr: unknown key, did you mean 'supervisor'?"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nrole: advancr").find("did you mean 'advancer'?"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nlogger: {level: Info}").find("did you mean 'info'?"), std::string::npos);
  EXPECT_EQ(error_of("pipelines: '*'\nzzz: 1").find("did you mean"), std::string::npos);
}

TEST(Config, SingleAndListStarMeanEveryPipeline) {
  EXPECT_TRUE(parse("pipelines: '*'").all_pipelines);
  EXPECT_TRUE(parse("pipelines: ['*']").all_pipelines);
  EXPECT_FALSE(parse("pipelines: [A]").all_pipelines);
}

TEST(Config, ADuplicateKeyIsAnError) {
  EXPECT_NE(error_of("pipelines: '*'\nlogger: {level: info}\nlogger: {level: debug}")
                .find("test.yml:3: logger: given twice (first on line 2)"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {count: {A: 1, A: 2}}").find("job_worker.count.A: given twice"),
            std::string::npos);
}

TEST(Config, ReaperTimeoutMustExceedTheHeartbeat) {
  EXPECT_NE(error_of("pipelines: '*'\nsupervisor: {reaper_timeout: 0.5}")
                .find("supervisor.reaper_timeout: expected a duration greater than supervisor.polling_timeout (1), got 0.5"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(parse("pipelines: '*'\nsupervisor: {polling_timeout: 0.1, reaper_timeout: 0.5}").supervisor.reaper_timeout,
                   0.5);
}

TEST(Config, HttpListenIsChecked) {
  EXPECT_NE(error_of("pipelines: '*'\nhttp: {listen: nowhere}").find("http.listen: expected a \"host:port\" address"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nhttp: {listen: ':99999'}").find("got \":99999\""), std::string::npos);
  for (const char* ok : {"127.0.0.1:8080", "[::1]:8080", ":8080", "metrics.local:9394", "127.0.0.1:0"}) {
    EXPECT_EQ(parse(std::string("pipelines: '*'\nhttp: {listen: '") + ok + "'}").http.listen, ok) << ok;
  }
  Config none = parse("pipelines: '*'\nhttp: {}");
  EXPECT_EQ(none.http.listen, "");
  EXPECT_EQ(none.http.max_body, 16LL << 20);
  EXPECT_EQ(parse("pipelines: '*'\nhttp: {max_body: 2048}").http.max_body, 2048);
  EXPECT_NE(error_of("pipelines: '*'\nhttp: {max_body: 10}").find("http.max_body: expected an integer from 1024"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nhttp: {port: 1}")
                .find("http.port: unknown key (expected one of: idle_timeout, listen, max_body, max_connections, "
                      "request_timeout, token, token_file)"),
            std::string::npos);
}

TEST(Config, HttpConnectionBoundsAreChecked) {
  Config none = parse("pipelines: '*'\nhttp: {}");
  EXPECT_DOUBLE_EQ(none.http.request_timeout, 10);
  EXPECT_DOUBLE_EQ(none.http.idle_timeout, 2);
  EXPECT_EQ(none.http.max_connections, 512);
  Config set = parse("pipelines: '*'\nhttp: {request_timeout: 2.5, idle_timeout: 0.5, max_connections: 64}");
  EXPECT_DOUBLE_EQ(set.http.request_timeout, 2.5);
  EXPECT_DOUBLE_EQ(set.http.idle_timeout, 0.5);
  EXPECT_EQ(set.http.max_connections, 64);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"request_timeout: 0", "http.request_timeout: expected a duration in seconds (a number from 0.1"},
      {"request_timeout: soon", "http.request_timeout: expected a duration in seconds"},
      {"idle_timeout: -1", "http.idle_timeout: expected a duration in seconds (a number from 0.1"},
      {"max_connections: 0", "http.max_connections: expected an integer from 1 to 65536"},
      {"max_connections: 100000", "http.max_connections: expected an integer from 1 to 65536"},
  };
  for (const auto& [yaml, message] : bad) {
    EXPECT_NE(error_of("pipelines: '*'\nhttp: {" + yaml + "}").find(message), std::string::npos)
        << yaml << ": " << error_of("pipelines: '*'\nhttp: {" + yaml + "}");
  }
}

TEST(Config, LoopbackAddressesAreTold) {
  for (const char* loopback : {"127.0.0.1:1", "127.8.0.1:1", "[::1]:1", "localhost:1"}) {
    EXPECT_TRUE(is_loopback_listen(loopback)) << loopback;
  }
  for (const char* open : {":1", "0.0.0.0:1", "[::]:1", "10.0.0.1:1", "example.com:1", "128.0.0.1:1"}) {
    EXPECT_FALSE(is_loopback_listen(open)) << open;
  }
}

TEST(Config, HttpTokenIsCheckedAndNeverShown) {
  const std::string token = "s3cret-token-0123456789";
  Config c = parse("pipelines: '*'\nhttp: {listen: ':7420', token: '" + token + "'}");
  EXPECT_EQ(c.http.token, token);
  EXPECT_EQ(c.http.token_origin, "http.token");
  std::string shortish = error_of("pipelines: '*'\nhttp: {token: 'tiny-secret'}");
  EXPECT_NE(shortish.find("http.token: expected a token of at least 16 characters"), std::string::npos) << shortish;
  EXPECT_EQ(shortish.find("tiny-secret"), std::string::npos) << shortish;
  std::string spaced = error_of("pipelines: '*'\nhttp: {token: 'has a space in the middle'}");
  EXPECT_NE(spaced.find("printable ASCII without spaces"), std::string::npos) << spaced;
  EXPECT_EQ(spaced.find("has a space"), std::string::npos) << spaced;
  EXPECT_NE(error_of("pipelines: '*'\nhttp: {token: 'aaaaaaaaaaaaaaaaaaaa', token_file: x}")
                .find("give http.token or http.token_file, not both"),
            std::string::npos);
}

TEST(Config, HttpTokenFromAFileOrTheEnvironment) {
  testsupport::TempDir dir;
  dir.write("token", "file-token-0123456789\n");
  Config c = parse_config("pipelines: '*'\nhttp: {token_file: token}", "test.yml", dir.path());
  EXPECT_EQ(c.http.token, "file-token-0123456789");
  EXPECT_NE(error_of("pipelines: '*'\nhttp: {token_file: /nonexistent/token}")
                .find("http.token_file: cannot read /nonexistent/token"),
            std::string::npos);

  Config open = parse("pipelines: '*'\nhttp: {listen: ':7420'}");
  try {
    apply_environment({}, &open);
    ADD_FAILURE() << "an open address without a token was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("http.listen: \":7420\" is reachable from other machines, and no token is set"),
              std::string::npos)
        << e.what();
  }
  apply_environment({{"DUCTWORK_HTTP_TOKEN", "env-token-0123456789"}}, &open);
  EXPECT_EQ(open.http.token, "env-token-0123456789");
  EXPECT_EQ(open.http.token_origin, "DUCTWORK_HTTP_TOKEN");

  Config listen = parse("pipelines: '*'");
  apply_environment({{"DUCTWORK_HTTP_LISTEN", "127.0.0.1:9"}}, &listen);
  EXPECT_EQ(listen.http.listen, "127.0.0.1:9");
  try {
    apply_environment({{"DUCTWORK_HTTP_TOKEN", "short-one"}}, &listen);
    ADD_FAILURE() << "a short token was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DUCTWORK_HTTP_TOKEN (http.token): expected a token of at least 16"),
              std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("short-one"), std::string::npos) << e.what();
  }
}

TEST(Config, PerPipelineNamesAreRecordedWhereTheyWereWritten) {
  Config c = parse(
      "pipelines: '*'\n"
      "job_worker:\n"
      "  max_retry: {default: 1, A: {default: 2, S: 0}}\n"
      "  polling_timeout: {B: 1}\n");
  ASSERT_EQ(c.scoped_names.size(), 3u);
  EXPECT_EQ(c.scoped_names[0].where, "test.yml:3");
  EXPECT_EQ(c.scoped_names[0].key, "job_worker.max_retry");
  EXPECT_EQ(c.scoped_names[0].pipeline, "A");
  EXPECT_EQ(c.scoped_names[1].step, "S");
  EXPECT_EQ(c.scoped_names[2].key, "job_worker.polling_timeout");
  EXPECT_EQ(c.scoped_names[2].pipeline, "B");
}

TEST(ConfigCheck, NamesMustBeDefinedPipelinesAndTheirSteps) {
  Config c = parse(
      "pipelines: '*'\n"
      "job_worker:\n"
      "  count: {Billing: 2, Biling: 3}\n"
      "  max_retry: {Billing: {ChargeCard: 0, ChargeCrad: 1}, Ghost: {X: 1}}\n"
      "pipeline_advancer: {steps: {max_depth: {Billing: {Split: 10}}}}\n");
  PipelineSteps defined{{"Billing", {"ChargeCard", "Split"}}, {"Report", {"Count"}}};
  std::vector<std::string> problems = check_config_names(c, defined);
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0],
            "test.yml:3: job_worker.count.Biling: expected a defined pipeline name, got 'Biling', did you mean "
            "'Billing'? (defined: Billing, Report)");
  EXPECT_EQ(problems[1],
            "test.yml:4: job_worker.max_retry.Billing.ChargeCrad: expected a step class of pipeline Billing, got "
            "'ChargeCrad', did you mean 'ChargeCard'? (its steps: ChargeCard, Split)");
  EXPECT_NE(problems[2].find("job_worker.max_retry.Ghost: expected a defined pipeline name"), std::string::npos);
  EXPECT_TRUE(check_config_names(parse("pipelines: '*'"), {}).empty());
}

// --- environment overrides --------------------------------------------------

Config with_env(const Environment& env, const std::string& yaml = "pipelines: [A]") {
  Config c = parse(yaml);
  apply_environment(env, &c);
  return c;
}

std::string env_error(const Environment& env) {
  try {
    with_env(env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigEnvironment, OverridesReplaceTheFile) {
  std::string cwd = std::filesystem::current_path().string();
  Config c = with_env({{"DUCTWORK_ROLE", "advancer"},
                       {"DUCTWORK_PLUGINS_DIRECTORY", "/opt/plugins"},
                       {"DUCTWORK_DEFINITIONS_DIRECTORY", "defs"},
                       {"DUCTWORK_PIPELINES", "X, Y"},
                       {"DUCTWORK_FORKING", "none"},
                       {"DUCTWORK_LOG_LEVEL", "error"},
                       {"DUCTWORK_LOG_FORMAT", "text"}},
                      "pipelines: [A]\nrole: worker\nlogger: {level: debug}\n");
  EXPECT_EQ(c.role, "advancer");
  EXPECT_EQ(c.plugins_directory, "/opt/plugins");
  EXPECT_EQ(c.definitions_directory, cwd + "/defs");
  EXPECT_FALSE(c.all_pipelines);
  EXPECT_EQ(c.pipelines, (std::vector<std::string>{"X", "Y"}));
  EXPECT_EQ(c.pipelines_origin, "DUCTWORK_PIPELINES");
  EXPECT_FALSE(c.forking);
  EXPECT_EQ(c.log_level, LogLevel::kError);
  EXPECT_EQ(c.log_format, Logger::Format::kText);
  EXPECT_TRUE(with_env({{"DUCTWORK_PIPELINES", "*"}}).all_pipelines);
}

TEST(ConfigEnvironment, EmptyVariablesCountAsUnset) {
  Config c = with_env({{"DUCTWORK_ROLE", ""}, {"DUCTWORK_DATABASE_URL", ""}, {"DUCTWORK_PIPELINES", ""}});
  EXPECT_EQ(c.role, "all");
  EXPECT_EQ(c.database.path, "/base/ductwork.sqlite3");
  EXPECT_EQ(c.pipelines, std::vector<std::string>{"A"});
}

TEST(ConfigEnvironment, DatabaseUrlShapes) {
  std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(with_env({{"DUCTWORK_DATABASE_URL", "sqlite:///var/lib/dw.sqlite3"}}).database.path, "/var/lib/dw.sqlite3");
  EXPECT_EQ(with_env({{"DUCTWORK_DATABASE_URL", "sqlite:data/dw.sqlite3"}}).database.path, cwd + "/data/dw.sqlite3");
  EXPECT_EQ(with_env({{"DUCTWORK_DATABASE_URL", "/srv/dw.db"}}).database.path, "/srv/dw.db");
  EXPECT_EQ(with_env({{"DUCTWORK_DATABASE_URL", "dw.db"}}).database.path, cwd + "/dw.db");
  EXPECT_EQ(with_env({{"DUCTWORK_DATABASE_URL", "data:1.db"}}).database.path, cwd + "/data:1.db");
  Config pg = with_env({{"DUCTWORK_DATABASE_URL", "postgresql://u@db/ductwork"}});
  EXPECT_EQ(pg.database.adapter, "postgresql");
  EXPECT_EQ(pg.database.url, "postgresql://u@db/ductwork");
  EXPECT_EQ(with_env({{"DUCTWORK_DATABASE_URL", "postgres://db/x"}}).database.adapter, "postgresql");
  EXPECT_NE(env_error({{"DUCTWORK_DATABASE_URL", "redis://x"}}).find("adapter redis is not supported"),
            std::string::npos);
  for (const char* bad : {"sqlite:", "sqlite://", "sqlite://host/x.db", "sqlite:///"}) {
    EXPECT_NE(env_error({{"DUCTWORK_DATABASE_URL", bad}}).find("DUCTWORK_DATABASE_URL (database): expected a SQLite file"),
              std::string::npos)
        << bad;
  }
}

TEST(ConfigEnvironment, BadValuesNameTheVariableAndTheKey) {
  EXPECT_EQ(env_error({{"DUCTWORK_ROLE", "wroker"}}),
            "DUCTWORK_ROLE (role): expected one of: all, advancer, worker, got \"wroker\", did you mean 'worker'?");
  EXPECT_NE(env_error({{"DUCTWORK_FORKING", "yes"}}).find("DUCTWORK_FORKING (forking): expected fork or none"),
            std::string::npos);
  EXPECT_NE(env_error({{"DUCTWORK_LOG_LEVEL", "verbose"}}).find("DUCTWORK_LOG_LEVEL (logger.level)"), std::string::npos);
  EXPECT_NE(env_error({{"DUCTWORK_LOG_FORMAT", "xml"}}).find("DUCTWORK_LOG_FORMAT (logger.format)"), std::string::npos);
  for (const char* bad : {"A,,B", "A,", ",A", "A,A", "*,A", " "}) {
    std::string e = env_error({{"DUCTWORK_PIPELINES", bad}});
    EXPECT_NE(e.find("DUCTWORK_PIPELINES (pipelines): expected a comma-separated list"), std::string::npos) << bad << ": " << e;
  }
}

TEST(ConfigEnvironment, UnknownDuctworkVariablesAreWarnings) {
  Config c = with_env({{"DUCTWORK_DATABSE_URL", "x"}, {"DUCTWORK_FAULT", "x"}, {"DUCTWORK_CONFIG", "x"}});
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0],
            "unknown environment variable DUCTWORK_DATABSE_URL ignored, did you mean 'DUCTWORK_DATABASE_URL'?");
}

TEST(ConfigEnvironment, LoadConfigAppliesTheEnvironmentAfterTheFile) {
  testsupport::TempDir dir;
  std::string path = dir.write("ductwork.yml", "pipelines: [A]\nrole: worker\n");
  Config c = load_config("", {{"DUCTWORK_CONFIG", path}, {"DUCTWORK_ROLE", "advancer"}});
  EXPECT_EQ(c.source, path);
  EXPECT_EQ(c.role, "advancer");
  // DUCTWORK_PIPELINES stands in for a missing `pipelines`; without it the
  // key stays required.
  std::string bare = dir.write("bare.yml", "role: worker\n");
  EXPECT_THROW(load_config(bare, {}), ConfigError);
  Config b = load_config(bare, {{"DUCTWORK_PIPELINES", "A,B"}});
  EXPECT_EQ(b.pipelines, (std::vector<std::string>{"A", "B"}));
  EXPECT_THROW(load_config(path, {{"DUCTWORK_LOG_LEVEL", "loud"}}), ConfigError);
}

// --- Ductwork's own (Ruby gem) spellings -------------------------------------

// The file the Ruby gem's installer writes, with a production section that
// overrides part of it.
const char* const kRubyFile =
    "default: &default\n"                     // 1
    "  pipelines: \"*\"\n"                    // 2
    "  logger:\n"                             // 3
    "    level: 1\n"                          // 4
    "    source: default\n"                   // 5
    "  job_worker:\n"                         // 6
    "    count: 5\n"                          // 7
    "    max_retry: 7\n"                      // 8
    "    polling_timeout: 1\n"                // 9
    "    shutdown_timeout: 20\n"              // 10
    "  pipeline_advancer:\n"                  // 11
    "    count: 3\n"                          // 12
    "    max_crash: 10\n"                     // 13
    "    max_retry: 4\n"                      // 14
    "    polling_timeout: 1\n"                // 15
    "    shutdown_timeout: 20\n"              // 16
    "    steps:\n"                            // 17
    "      max_depth: -1\n"                   // 18
    "  supervisor:\n"                         // 19
    "    polling_timeout: 1\n"                // 20
    "    reaper_timeout: 300\n"               // 21
    "    shutdown_timeout: 30\n"              // 22
    "\n"                                      // 23
    "development:\n"                          // 24
    "  <<: *default\n"                        // 25
    "\n"                                      // 26
    "test:\n"                                 // 27
    "  <<: *default\n"                        // 28
    "  forking: none\n"                       // 29
    "\n"                                      // 30
    "production:\n"                           // 31
    "  <<: *default\n"                        // 32
    "  pipelines: [Billing, Report]\n"        // 33
    "  forking: default\n"                    // 34
    "  job_worker:\n"                         // 35
    "    count: 9\n";                         // 36

Config parse_env(const std::string& yaml, const Environment& env) { return parse_config(yaml, "test.yml", "/base", env); }

std::string env_section_error(const std::string& yaml, const Environment& env) {
  try {
    parse_env(yaml, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigSections, TheSectionOfTheEnvironmentIsReadWithItsMergeKeys) {
  Config p = parse_env(kRubyFile, {{"DUCTWORK_ENV", "production"}});
  EXPECT_EQ(p.environment, "production");
  EXPECT_EQ(p.source, "test.yml");
  EXPECT_FALSE(p.all_pipelines);
  EXPECT_EQ(p.pipelines, (std::vector<std::string>{"Billing", "Report"}));
  EXPECT_TRUE(p.forking);
  EXPECT_EQ(p.job_worker.count.get("Billing"), 9);
  // A merge is shallow (YAML 1.1, Ruby's Psych): production's job_worker
  // replaces default's whole, so max_retry is the built-in 3, not 7...
  EXPECT_EQ(p.job_worker.max_retry.get("Billing", "S"), 3);
  // ...while the sections production does not give come from default.
  EXPECT_EQ(p.pipeline_advancer.max_retry.get("Billing"), 4);
  EXPECT_DOUBLE_EQ(p.supervisor.reaper_timeout, 300);
  EXPECT_EQ(p.log_level, LogLevel::kInfo);

  Config d = parse_env(kRubyFile, {});  // nothing set: development, as Rails.env
  EXPECT_EQ(d.environment, "development");
  EXPECT_TRUE(d.all_pipelines);
  EXPECT_EQ(d.job_worker.count.get("Billing"), 5);
  EXPECT_EQ(d.job_worker.max_retry.get("Billing", "S"), 7);
  EXPECT_EQ(parse(kRubyFile).environment, "development");

  Config t = parse_env(kRubyFile, {{"RAILS_ENV", "test"}});
  EXPECT_EQ(t.environment, "test");
  EXPECT_FALSE(t.forking);
}

TEST(ConfigSections, DuctworkEnvThenRailsEnvThenRackEnvChooseTheSection) {
  EXPECT_EQ(parse_env(kRubyFile, {{"DUCTWORK_ENV", "test"}, {"RAILS_ENV", "production"}, {"RACK_ENV", "production"}})
                .environment,
            "test");
  EXPECT_EQ(parse_env(kRubyFile, {{"RAILS_ENV", "production"}, {"RACK_ENV", "test"}}).environment, "production");
  EXPECT_EQ(parse_env(kRubyFile, {{"RACK_ENV", "test"}}).environment, "test");
  // An empty variable counts as unset, as every other one.
  EXPECT_EQ(parse_env(kRubyFile, {{"DUCTWORK_ENV", ""}, {"RAILS_ENV", "test"}}).environment, "test");
}

TEST(ConfigSections, AMissingSectionNamesTheFileTheVariableAndTheSections) {
  EXPECT_EQ(env_section_error(kRubyFile, {{"DUCTWORK_ENV", "staging"}}),
            "test.yml: environment section \"staging\" (from DUCTWORK_ENV) not found; the file's sections: default, "
            "development, test, production (set DUCTWORK_ENV to one of them; a file whose top-level keys are maps "
            "and none a configuration key is read as environment sections)");
  EXPECT_NE(env_section_error(kRubyFile, {{"RAILS_ENV", "prodution"}})
                .find("environment section \"prodution\" (from RAILS_ENV) not found, did you mean 'production'?"),
            std::string::npos);
  std::string unset = env_section_error("default: {pipelines: '*'}\n", {});
  EXPECT_NE(unset.find("test.yml: environment section \"development\" (the default: DUCTWORK_ENV, RAILS_ENV and "
                       "RACK_ENV are unset) not found; the file's sections: default"),
            std::string::npos)
      << unset;
  EXPECT_EQ(parse_env("default: {pipelines: '*'}\n", {{"DUCTWORK_ENV", "default"}}).environment, "default");
  EXPECT_NE(env_section_error("production: {pipelines: '*'}\nproduction: {pipelines: [A]}\n",
                              {{"DUCTWORK_ENV", "production"}})
                .find("test.yml:2: production: environment section given twice (first on line 1)"),
            std::string::npos);
}

TEST(ConfigSections, ErrorsInASectionNameTheLineWhereTheValueIsWritten) {
  std::string yaml = std::string(kRubyFile) + "    max_crash: lots\n";  // line 37, in production
  EXPECT_EQ(env_section_error(yaml, {{"DUCTWORK_ENV", "production"}}),
            "test.yml:37: job_worker.max_crash: expected an integer >= 0, got \"lots\"");
  // A value merged from default is reported where default writes it.
  std::string merged = std::string(kRubyFile) + "staging:\n  <<: *default\n";
  size_t at = merged.find("    count: 3\n");
  merged.replace(at, 13, "    count: 0\n");  // line 12
  EXPECT_EQ(env_section_error(merged, {{"DUCTWORK_ENV", "staging"}}),
            "test.yml:12: pipeline_advancer.count: expected an integer from 1 to 1000, got 0");
  // Only the chosen section is read: development does not see that.
  EXPECT_NO_THROW(parse_env(yaml, {}));
  // Strictness within the section is the same as for a plain file.
  EXPECT_NE(env_section_error("production:\n  pipelines: '*'\n  job_workers: {count: 1}\n", {{"DUCTWORK_ENV", "production"}})
                .find("test.yml:3: job_workers: unknown key, did you mean 'job_worker'?"),
            std::string::npos);
  EXPECT_NE(env_section_error("production:\n  role: worker\n", {{"DUCTWORK_ENV", "production"}}).find("pipelines: required"),
            std::string::npos);
  // A key given twice next to a merge key is still a key given twice.
  EXPECT_NE(env_section_error("default: &d {pipelines: '*'}\nproduction:\n  <<: *d\n  role: worker\n  role: all\n",
                              {{"DUCTWORK_ENV", "production"}})
                .find("test.yml:5: role: given twice (first on line 4)"),
            std::string::npos);
}

TEST(ConfigSections, APlainFileIsReadAsBefore) {
  // A file with any configuration key at the top is a plain file, whatever
  // else it holds: an environment-looking key is an unknown key there.
  EXPECT_EQ(env_section_error("pipelines: '*'\nproduction: {role: worker}\n", {{"DUCTWORK_ENV", "production"}}),
            "test.yml:2: production: unknown key (expected one of: database, definitions, events, forking, http, "
            "job_worker, logger, pipeline_advancer, pipelines, plugins, retention, role, supervisor)");
  // A misspelt scalar key is not mistaken for a section.
  EXPECT_NE(error_of("pipeline: '*'\n").find("test.yml:1: pipeline: unknown key, did you mean 'pipelines'?"),
            std::string::npos);
  Config c = parse_env("pipelines: [A]\nrole: worker\n", {{"DUCTWORK_ENV", "production"}});
  EXPECT_EQ(c.environment, "");
  EXPECT_EQ(c.role, "worker");
  EXPECT_TRUE(c.warnings.empty());
}

TEST(ConfigSections, MergeKeysFollowYaml) {
  // In a plain file too, at any depth; the map's own keys win.
  Config c = parse("pipelines: '*'\njob_worker:\n  <<: {count: 2, max_retry: 4}\n  count: 6\n");
  EXPECT_EQ(c.job_worker.count.get("P"), 6);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "S"), 4);
  // A list of maps: an earlier one wins over a later one.
  Config l = parse_env("a: &a {role: worker}\nb: &b {role: advancer, pipelines: [X]}\nproduction:\n  <<: [*a, *b]\n",
                       {{"DUCTWORK_ENV", "production"}});
  EXPECT_EQ(l.role, "worker");
  EXPECT_EQ(l.pipelines, std::vector<std::string>{"X"});
  EXPECT_EQ(error_of("pipelines: '*'\njob_worker:\n  <<: 3\n"),
            "test.yml:3: <<: expected a map to merge (an alias such as *default) or a list of them, got \"3\"");
  EXPECT_NE(error_of("pipelines: '*'\njob_worker:\n  <<: [{count: 2}, x]\n").find("got a list holding \"x\""),
            std::string::npos);
  // A quoted "<<" is an ordinary (here unknown) key.
  EXPECT_NE(error_of("pipelines: '*'\njob_worker:\n  '<<': {count: 2}\n").find("job_worker.<<: unknown key"),
            std::string::npos);
}

TEST(ConfigSections, NestedAliasesAreResolvedOnceEach) {
  // Each level merges the one below twice: 2^40 merges if each alias were
  // expanded again, one each here.
  std::string yaml = "l0: &l0 {pipelines: '*', role: worker}\n";
  for (int i = 1; i <= 40; ++i) {
    yaml += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " {<<: [*l" + std::to_string(i - 1) + ", *l" +
            std::to_string(i - 1) + "]}\n";
  }
  yaml += "development:\n  <<: *l40\n";
  Config c = parse_env(yaml, {});
  EXPECT_EQ(c.role, "worker");
  EXPECT_TRUE(c.all_pipelines);
}

TEST(ConfigSections, AMapMergedIntoItselfDoesNotLoop) {
  Config c = parse_env("development: &d\n  pipelines: '*'\n  role: worker\n  <<: *d\n", {});
  EXPECT_TRUE(c.all_pipelines);
  EXPECT_EQ(c.role, "worker");
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: &j\n  count: 2\n  again: *j\n").find("job_worker.again: unknown key"),
            std::string::npos);
}

TEST(ConfigRuby, ForkingDefaultIsTheForkingMode) {
  EXPECT_TRUE(parse("pipelines: '*'\nforking: default").forking);
  EXPECT_FALSE(with_env({{"DUCTWORK_FORKING", "none"}}, "pipelines: '*'\nforking: default").forking);
  EXPECT_TRUE(with_env({{"DUCTWORK_FORKING", "default"}}, "pipelines: '*'\nforking: none").forking);
  EXPECT_NE(error_of("pipelines: '*'\nforking: defualt").find("forking: expected \"fork\" or \"default\""),
            std::string::npos);
}

TEST(ConfigRuby, NumericLoggerLevelsAreRubyLoggerLevels) {
  const std::vector<LogLevel> want = {LogLevel::kDebug, LogLevel::kInfo,  LogLevel::kWarn,
                                      LogLevel::kError, LogLevel::kError, LogLevel::kError};
  for (int n = 0; n <= 5; ++n) {
    SCOPED_TRACE(n);
    EXPECT_EQ(parse("pipelines: '*'\nlogger: {level: " + std::to_string(n) + "}").log_level, want[n]);
    EXPECT_EQ(with_env({{"DUCTWORK_LOG_LEVEL", std::to_string(n)}}).log_level, want[n]);
  }
  EXPECT_EQ(error_of("pipelines: '*'\nlogger: {level: 6}"),
            "test.yml:2: logger.level: expected one of: debug, info, warn, error, or a Ruby Logger level 0-5, got 6");
  EXPECT_NE(error_of("pipelines: '*'\nlogger: {level: -1}").find("got -1"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nlogger: {level: 1.0}").find("got 1.0"), std::string::npos);
  EXPECT_EQ(env_error({{"DUCTWORK_LOG_LEVEL", "7"}}),
            "DUCTWORK_LOG_LEVEL (logger.level): expected one of: debug, info, warn, error, or a Ruby Logger level "
            "0-5, got \"7\"");
}

TEST(ConfigRuby, RubyOnlyKeysAreWarnedAboutAndIgnored) {
  Config c = parse_env("production:\n  pipelines: '*'\n  logger:\n    level: warn\n    source: rails\n  database: dw\n",
                       {{"DUCTWORK_ENV", "production"}});
  EXPECT_EQ(c.log_level, LogLevel::kWarn);
  EXPECT_EQ(c.database.adapter, "sqlite");
  EXPECT_EQ(c.database.path, "/base/ductwork.sqlite3");
  ASSERT_EQ(c.warnings.size(), 2u) << ::testing::PrintToString(c.warnings);
  EXPECT_EQ(c.warnings[0],
            "test.yml:6: database: a setting of the Ruby gem, ignored: it names a database of Rails' "
            "config/database.yml, which this host does not read (database.adapter, database.path / database.url or "
            "DUCTWORK_DATABASE_URL choose its database)");
  EXPECT_EQ(c.warnings[1],
            "test.yml:5: logger.source: a setting of the Ruby gem, ignored: it chooses between Rails.logger and the "
            "gem's own logger; this host always writes its own log (logger.format)");
  // logger.source means nothing else anywhere, so a plain file may carry it
  // too; a string `database` in a plain file is more likely a misplaced
  // database.path, and stays an error there.
  Config plain = parse("pipelines: '*'\nlogger: {source: default}\n");
  ASSERT_EQ(plain.warnings.size(), 1u);
  EXPECT_EQ(plain.warnings[0].rfind("test.yml:2: logger.source: a setting of the Ruby gem, ignored", 0), 0u);
  EXPECT_EQ(error_of("pipelines: '*'\ndatabase: var/dw.sqlite3\n"),
            "test.yml:2: database: expected a map with the keys adapter, path, pool, url, got \"var/dw.sqlite3\"");
  // The gem's generated file: its one Ruby-only key is the one warning.
  Config r = parse_env(kRubyFile, {{"DUCTWORK_ENV", "production"}});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].rfind("test.yml:5: logger.source: a setting of the Ruby gem, ignored", 0), 0u) << r.warnings[0];
  // Genuinely unknown keys are refused as ever; the Ruby-only key is not
  // offered as a suggestion.
  EXPECT_EQ(error_of("pipelines: '*'\nlogger: {sorce: rails}"),
            "test.yml:2: logger.sorce: unknown key (expected one of: format, level)");
  EXPECT_NE(error_of("pipelines: '*'\ndatabase:").find("database: expected a map with the keys"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\ndatabase: [x]").find("database: expected a map with the keys"), std::string::npos);
}

TEST(ConfigRuby, DuctworkEnvIsAKnownVariable) {
  Config c = with_env({{"DUCTWORK_ENV", "production"}, {"DUCTWORK_ENVIRONMENT", "x"}});
  ASSERT_EQ(c.warnings.size(), 1u) << ::testing::PrintToString(c.warnings);
  EXPECT_EQ(c.warnings[0].rfind("unknown environment variable DUCTWORK_ENVIRONMENT ignored", 0), 0u) << c.warnings[0];
}

TEST(ConfigRuby, LoadConfigReadsTheSectionOfTheEnvironment) {
  testsupport::TempDir dir;
  std::string path = dir.write("config/ductwork.yml", kRubyFile);
  Config c = load_config(path, {{"RAILS_ENV", "production"}, {"DUCTWORK_ROLE", "worker"}});
  EXPECT_EQ(c.source, path);
  EXPECT_EQ(c.environment, "production");
  EXPECT_EQ(c.job_worker.count.get("Billing"), 9);
  EXPECT_EQ(c.role, "worker");
  EXPECT_EQ(c.database.path, dir.path() + "/config/ductwork.sqlite3");
  // DUCTWORK_PIPELINES stands in for a section's missing `pipelines` too.
  std::string bare = dir.write("bare.yml", "production:\n  role: worker\n");
  EXPECT_THROW(load_config(bare, {{"DUCTWORK_ENV", "production"}}), ConfigError);
  EXPECT_EQ(load_config(bare, {{"DUCTWORK_ENV", "production"}, {"DUCTWORK_PIPELINES", "A"}}).pipelines,
            std::vector<std::string>{"A"});
}

TEST(ConfigRuby, TheProcessEnvironmentIncludesRailsEnvAndRackEnv) {
  const char* saved = std::getenv("RACK_ENV");
  std::string before = saved ? saved : "";
  ::setenv("RACK_ENV", "staging", 1);
  Environment env = process_environment();
  if (saved) ::setenv("RACK_ENV", before.c_str(), 1);
  else ::unsetenv("RACK_ENV");
  ASSERT_TRUE(env.count("RACK_ENV"));
  EXPECT_EQ(env.at("RACK_ENV"), "staging");
  for (const auto& [name, _] : env) {
    EXPECT_TRUE(name.rfind("DUCTWORK_", 0) == 0 || name == "RAILS_ENV" || name == "RACK_ENV") << name;
  }
}

// --- per-pipeline advancers ---------------------------------------------------

TEST(ConfigAdvancers, CountAndPollingTimeoutArePerPipeline) {
  Config c = parse(
      "pipelines: '*'\n"
      "pipeline_advancer:\n"
      "  count: {default: 2, Big: 4, Small: 1}\n"
      "  polling_timeout: {default: 0.5, Fast: 0.05}\n");
  EXPECT_EQ(c.pipeline_advancer.count.get("Big"), 4);
  EXPECT_EQ(c.pipeline_advancer.count.get("Other"), 2);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout.get("Fast"), 0.05);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout.get("Other"), 0.5);
  ASSERT_EQ(c.scoped_names.size(), 3u);
  EXPECT_EQ(c.scoped_names[0].key, "pipeline_advancer.count");
  EXPECT_EQ(c.scoped_names[0].pipeline, "Big");
  EXPECT_EQ(c.scoped_names[2].key, "pipeline_advancer.polling_timeout");
  EXPECT_EQ(c.scoped_names[2].where, "test.yml:4");
  // The names are checked against the definitions like every other map's.
  std::vector<std::string> problems =
      check_config_names(c, {{"Big", {}}, {"Small", {}}, {"Fast", {}}});
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  problems = check_config_names(c, {{"Big", {}}, {"Fast", {}}});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("pipeline_advancer.count.Small: expected a defined pipeline name"), std::string::npos);
}

TEST(ConfigAdvancers, PerPipelineValuesAreCheckedLikeTheOthers) {
  EXPECT_EQ(error_of("pipelines: '*'\npipeline_advancer: {count: {Big: 0}}"),
            "test.yml:2: pipeline_advancer.count.Big: expected an integer from 1 to 1000, got 0");
  EXPECT_EQ(error_of("pipelines: '*'\npipeline_advancer: {count: {Big: {S: 1}}}"),
            "test.yml:2: pipeline_advancer.count.Big: expected an integer from 1 to 1000, got a map");
  EXPECT_EQ(error_of("pipelines: '*'\npipeline_advancer: {count: [1]}"),
            "test.yml:2: pipeline_advancer.count: expected an integer from 1 to 1000, or a map of default/pipeline "
            "name to one, got a list");
  EXPECT_NE(error_of("pipelines: '*'\npipeline_advancer: {polling_timeout: {Fast: 0.001}}")
                .find("pipeline_advancer.polling_timeout.Fast: expected a duration in seconds (a number from 0.01"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\npipeline_advancer: {count: 0}")
                .find("pipeline_advancer.count: expected an integer from 1 to 1000, got 0"),
            std::string::npos);
}

TEST(ConfigAdvancers, EachPipelineIsServedByItsCountOfThreads) {
  Config c = parse("pipelines: '*'\npipeline_advancer: {count: {default: 2, Big: 4, Small: 1}}");
  using Sets = std::vector<std::vector<std::string>>;
  EXPECT_EQ(c.pipeline_advancer.threads_for({"A", "Big", "Small"}),
            (Sets{{"A", "Big", "Small"}, {"A", "Big"}, {"Big"}, {"Big"}}));
  EXPECT_EQ(c.pipeline_advancer.threads_for({"Small"}), (Sets{{"Small"}}));
  EXPECT_EQ(c.pipeline_advancer.threads_for({}), Sets{});
  // One count for all: that many threads, each serving every pipeline.
  Config one = parse("pipelines: '*'\npipeline_advancer: {count: 3}");
  EXPECT_EQ(one.pipeline_advancer.threads_for({"A", "B"}), (Sets{{"A", "B"}, {"A", "B"}, {"A", "B"}}));
}

TEST(ConfigAdvancers, AThreadPollsAsOftenAsItsMostEagerPipeline) {
  Config c = parse("pipelines: '*'\npipeline_advancer: {polling_timeout: {default: 0.5, Fast: 0.05, Slow: 3}}");
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout_for({"A", "Fast", "Slow"}), 0.05);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout_for({"A", "Slow"}), 0.5);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout_for({"Slow"}), 3);
  EXPECT_DOUBLE_EQ(c.pipeline_advancer.polling_timeout_for({}), 0.5);
}

TEST(ConfigAdvancers, TheThreadBudgetCountsTheAdvancerThreadsOfTheHostedPipelines) {
  const std::string head = "pipelines: '*'\njob_worker: {count: {default: 5, A: 1000}}\n";
  // 1000 + 5 workers, and 3 advancers.
  EXPECT_FALSE(thread_budget_problem(parse(head), {"A", "B"}));
  // 1000 + 5 workers, and 30 advancers (the most any hosted pipeline asks for).
  Config c = parse(head + "pipeline_advancer: {count: {default: 1, A: 30, Elsewhere: 500}}\n");
  std::optional<std::string> problem = thread_budget_problem(c, {"A", "B"});
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("would run 1035 loop threads (job workers A: 1000, B: 5; advancers 30)"), std::string::npos)
      << *problem;
  EXPECT_FALSE(thread_budget_problem(c, {"B"}));
}

TEST(Suggest, ClosestMatchIsATypoNotAGuess) {
  EXPECT_EQ(closest_match("cuont", {"count", "max_crash"}), "count");
  EXPECT_EQ(closest_match("Count", {"count"}), "count");
  EXPECT_EQ(closest_match("b", {"A", "B"}), "B");
  EXPECT_EQ(closest_match("C", {"A", "B"}), "");
  EXPECT_EQ(closest_match("polling_timout", {"polling_timeout", "shutdown_timeout"}), "polling_timeout");
  EXPECT_EQ(closest_match("zzz", {"count"}), "");
  EXPECT_EQ(did_you_mean("infoo", {"info", "warn"}), ", did you mean 'info'?");
}

}  // namespace
}  // namespace ductwork

namespace ductwork {
namespace {

// job_worker.batch goes up to 1,024 claims per transaction (issue 11: a
// wide fan-out of microsecond steps commits in fewer, larger batches); the
// started log holds that many open steps per thread.
TEST(Config, JobWorkerBatchAcceptsUpTo1024) {
  Config c = parse("pipelines: '*'\njob_worker: {batch: {default: 1024, P: 1}}");
  EXPECT_EQ(c.job_worker.batch.get("X"), 1024);
  EXPECT_EQ(c.job_worker.batch.get("P"), 1);
  EXPECT_EQ(error_of("pipelines: '*'\njob_worker: {batch: 1025}"),
            "test.yml:2: job_worker.batch: expected an integer from 1 to 1024, got 1025");
  EXPECT_EQ(error_of("pipelines: '*'\njob_worker: {batch: 0}"),
            "test.yml:2: job_worker.batch: expected an integer from 1 to 1024, got 0");
}

}  // namespace
}  // namespace ductwork
