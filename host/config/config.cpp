#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <climits>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "config/config_internal.h"
#include "config/yaml_reader.h"
#include "util/bounded_read.h"
#include "util/suggest.h"

namespace ductwork {
namespace fs = std::filesystem;
namespace {

using config_internal::describe;
using config_internal::number_text;

// Below these a loop polls in a busy spin, or supervisors restart healthy
// children between two heartbeats (a 0.000001 s reaper timeout restarted
// children 786 times in 30 s and wrote 22 MB of log).
constexpr double kMinPollingSeconds = 0.01;
// A plugin gets at least this long to load (less would refuse slow disks).
constexpr double kMinPluginLoadSeconds = 0.5;
constexpr double kMinReaperSeconds = 0.5;
// More threads than that per pipeline is a typo, not a plan.
constexpr long long kMaxCount = 1000;
// job_worker.batch: the started log (process/started_log.h) holds 1,056 open steps per thread.
constexpr long long kMaxBatch = 1024;

const std::vector<std::string> kTopLevelKeys = {"database", "plugins", "definitions", "pipelines", "job_worker",
                                                "pipeline_advancer", "supervisor", "logger", "forking", "role", "http",
                                                "retention", "events"};

// The sections of a ductwork.yml, each read with YamlReader's typed readers.
class Parser : public config_internal::YamlReader {
 public:
  using YamlReader::YamlReader;

  Config parse(const YAML::Node& root, bool pipelines_required) {
    Config config;
    config.source = source_;
    config.pipelines_origin = source_ + ": pipelines";
    config.database.path = resolve("ductwork.sqlite3");
    config.plugins_directory = resolve("plugins");
    config.definitions_directory = resolve("pipelines");
    if (!root.IsDefined() || root.IsNull()) {
      if (!pipelines_required) return config;
      fail("pipelines", "required (a list of pipeline names, or \"*\")", root);
    }
    only_keys(root, "", kTopLevelKeys);
    parse_pipelines(root, pipelines_required, &config);
    if (root["forking"]) {
      std::string mode = string(root["forking"], "forking");
      if (!parse_forking(mode, &config.forking)) {
        expected("forking",
                 "\"fork\" or \"default\" (child processes, the default) or \"none\" (threads of one process)",
                 root["forking"], {"fork", "none"});
      }
    }
    if (root["role"]) {
      config.role = string(root["role"], "role");
      if (!is_one_of(config.role, config_internal::kRoles)) {
        expected("role", "one of: all, advancer, worker", root["role"], config_internal::kRoles);
      }
    }
    if (auto db = root["database"]) {
      // The Ruby gem's `database:` names a database of Rails'
      // config/database.yml (for connects_to): nothing this host can read.
      // Only in the gem's layout (environment sections): in a plain file a
      // string is more likely a misplaced database.path, and stays an error.
      if (section_line_ > 0 && db.IsScalar() && !db.Scalar().empty()) {
        ruby_only(db, "database", "names a database of Rails' config/database.yml, which this host does not read "
                  "(database.adapter, database.path / database.url or DUCTWORK_DATABASE_URL choose its database)",
                  &config);
      } else {
        parse_database(db, &config);
      }
    }
    if (auto plugins = root["plugins"]) {
      only_keys(plugins, "plugins", {"directory", "load_timeout", "handshake_timeout"});
      if (plugins["directory"]) config.plugins_directory = path(plugins["directory"], "plugins.directory");
      if (plugins["load_timeout"]) {
        config.plugins_load_timeout = seconds(plugins["load_timeout"], "plugins.load_timeout", kMinPluginLoadSeconds);
      }
      if (plugins["handshake_timeout"]) {
        config.plugins_handshake_timeout =
            seconds(plugins["handshake_timeout"], "plugins.handshake_timeout", kMinPluginLoadSeconds);
      }
    }
    if (auto defs = root["definitions"]) {
      only_keys(defs, "definitions", {"directory"});
      if (defs["directory"]) config.definitions_directory = path(defs["directory"], "definitions.directory");
    }
    if (auto jw = root["job_worker"]) parse_job_worker(jw, &config);
    if (auto pa = root["pipeline_advancer"]) parse_pipeline_advancer(pa, &config);
    if (auto sup = root["supervisor"]) parse_supervisor(sup, &config);
    if (auto logger = root["logger"]) parse_logger(logger, &config);
    if (auto http = root["http"]) parse_http(http, &config);
    if (auto retention = root["retention"]) parse_retention(retention, &config);
    if (auto events = root["events"]) {
      only_keys(events, "events", {"retention"});
      if (events["retention"]) config.events.retention = seconds(events["retention"], "events.retention", 0);
    }
    // Sections are parsed key by key; report names in the order they were written.
    std::stable_sort(config.scoped_names.begin(), config.scoped_names.end(),
                     [](const ScopedName& a, const ScopedName& b) { return a.line < b.line; });
    return config;
  }

 private:
  void parse_pipelines(const YAML::Node& root, bool required, Config* config) const {
    auto pipelines = root["pipelines"];
    const std::string kinds = "list of pipeline names, or \"*\" for every loaded pipeline";
    const std::string shape = "a " + kinds;
    if (!pipelines) {
      if (required) fail("pipelines", "required: " + shape, root);
      return;
    }
    if (pipelines.IsScalar() && pipelines.Scalar() == "*") {
      config->all_pipelines = true;
      return;
    }
    if (pipelines.IsScalar() && !pipelines.Scalar().empty()) {
      fail("pipelines", "expected " + shape + ", got " + describe(pipelines) + " (one name is written as [" +
                            pipelines.Scalar() + "])",
           pipelines);
    }
    if (!pipelines.IsSequence() || pipelines.size() == 0) expected("pipelines", "a non-empty " + kinds, pipelines);
    std::vector<std::string> names;
    for (size_t i = 0; i < pipelines.size(); ++i) {
      const YAML::Node& item = pipelines[i];
      std::string key = "pipelines[" + std::to_string(i) + "]";
      if (!item.IsScalar() || item.Scalar().empty()) expected(key, "a pipeline name", item);
      const std::string& name = item.Scalar();
      if (name == "*" && pipelines.size() > 1) {
        fail(key, "\"*\" means every pipeline and cannot be listed with names (write pipelines: \"*\")", item);
      }
      if (is_one_of(name, names)) fail(key, "'" + name + "' is listed twice", item);
      names.push_back(name);
    }
    if (names.size() == 1 && names[0] == "*") {
      config->all_pipelines = true;
      return;
    }
    config->all_pipelines = false;
    config->pipelines = std::move(names);
  }

  void parse_database(const YAML::Node& db, Config* config) const {
    only_keys(db, "database", {"adapter", "path", "url", "pool"});
    if (db["adapter"]) {
      std::string adapter = string(db["adapter"], "database.adapter");
      if (adapter == "postgres") adapter = "postgresql";
      if (adapter != "sqlite" && adapter != "postgresql") {
        expected("database.adapter", "\"sqlite\" or \"postgresql\"", db["adapter"], {"sqlite", "postgresql"});
      }
      config->database.adapter = adapter;
    }
    const bool postgresql = config->database.adapter == "postgresql";
    if (db["path"]) {
      if (postgresql) fail("database.path", "applies to the sqlite adapter; postgresql takes database.url", db["path"]);
      if (db["path"].IsScalar()) {
        std::string problem = config_internal::database_path_problem(db["path"].Scalar());
        if (!problem.empty()) fail("database.path", problem, db["path"]);
      }
      config->database.path = path(db["path"], "database.path");
    }
    if (db["url"]) {
      if (!postgresql) {
        fail("database.url", "applies to the postgresql adapter; sqlite takes database.path", db["url"]);
      }
      config->database.url = string(db["url"], "database.url");
      if (config->database.url.find_first_not_of(" \t") == std::string::npos) {
        fail("database.url", "is empty", db["url"]);
      }
    }
    if (db["pool"]) {
      if (!postgresql) fail("database.pool", "applies to the postgresql adapter", db["pool"]);
      config->database.pool = static_cast<int>(integer(db["pool"], "database.pool", 1, 1000));
    }
  }

  void parse_job_worker(const YAML::Node& jw, Config* config) const {
    only_keys(jw, "job_worker",
              {"count", "batch", "polling_timeout", "max_retry", "max_crash", "retry_delay", "shutdown_timeout",
               "max_output_bytes", "timeout", "timeout_grace", "priority_aging"});
    JobWorkerConfig& c = config->job_worker;
    if (jw["count"]) scoped_int(jw["count"], "job_worker.count", 1, kMaxCount, false, &c.count, config);
    if (jw["batch"]) scoped_int(jw["batch"], "job_worker.batch", 1, kMaxBatch, false, &c.batch, config);
    if (jw["polling_timeout"]) {
      scoped_seconds(jw["polling_timeout"], "job_worker.polling_timeout", kMinPollingSeconds, &c.polling_timeout,
                     config);
    }
    if (jw["max_retry"]) scoped_int(jw["max_retry"], "job_worker.max_retry", 0, INT_MAX, true, &c.max_retry, config);
    if (jw["max_crash"]) scoped_int(jw["max_crash"], "job_worker.max_crash", 0, INT_MAX, true, &c.max_crash, config);
    if (jw["retry_delay"]) c.retry_delay = seconds(jw["retry_delay"], "job_worker.retry_delay");
    if (jw["shutdown_timeout"]) c.shutdown_timeout = seconds(jw["shutdown_timeout"], "job_worker.shutdown_timeout");
    if (jw["priority_aging"]) c.priority_aging = seconds(jw["priority_aging"], "job_worker.priority_aging");
    // SPEC §13; 0 = no timeout (e.g. to lift a default for one pipeline).
    if (jw["timeout"]) scoped_seconds(jw["timeout"], "job_worker.timeout", 0, &c.timeout, config, /*per_step=*/true);
    if (jw["timeout_grace"]) {
      scoped_seconds(jw["timeout_grace"], "job_worker.timeout_grace", 0, &c.timeout_grace, config, /*per_step=*/true);
    }
    // Up to 512 MiB: a row value must stay well inside SQLite's 1 GB limit,
    // whose "string or blob too big" would otherwise surface mid-commit.
    if (jw["max_output_bytes"]) {
      c.max_output_bytes = integer(jw["max_output_bytes"], "job_worker.max_output_bytes", 1024, 512LL << 20);
    }
  }

  void parse_pipeline_advancer(const YAML::Node& pa, Config* config) const {
    only_keys(pa, "pipeline_advancer", {"count", "polling_timeout", "max_retry", "max_crash", "shutdown_timeout", "steps"});
    PipelineAdvancerConfig& c = config->pipeline_advancer;
    // Per pipeline, as in the Ruby gem (PipelineAdvancerConfig::threads_for
    // says what a pipeline's count means).
    if (pa["count"]) scoped_int(pa["count"], "pipeline_advancer.count", 1, kMaxCount, false, &c.count, config);
    if (pa["polling_timeout"]) {
      scoped_seconds(pa["polling_timeout"], "pipeline_advancer.polling_timeout", kMinPollingSeconds,
                     &c.polling_timeout, config);
    }
    if (pa["max_retry"]) {
      scoped_int(pa["max_retry"], "pipeline_advancer.max_retry", 0, INT_MAX, false, &c.max_retry, config);
    }
    if (pa["max_crash"]) {
      scoped_int(pa["max_crash"], "pipeline_advancer.max_crash", 0, INT_MAX, false, &c.max_crash, config);
    }
    if (pa["shutdown_timeout"]) {
      c.shutdown_timeout = seconds(pa["shutdown_timeout"], "pipeline_advancer.shutdown_timeout");
    }
    if (auto steps = pa["steps"]) {
      only_keys(steps, "pipeline_advancer.steps", {"max_depth", "max_invoke_depth"});
      // -1 = unlimited; per pipeline and per pipeline+step (the step that fans out).
      if (steps["max_depth"]) {
        scoped_int(steps["max_depth"], "pipeline_advancer.steps.max_depth", -1, INT_MAX, true, &c.max_depth, config);
      }
      if (steps["max_invoke_depth"]) {
        scoped_int(steps["max_invoke_depth"], "pipeline_advancer.steps.max_invoke_depth", 1, 1000, false,
                   &c.max_invoke_depth, config);
      }
    }
  }

  // An age per finished status, under `key` ("retention" or
  // "retention.pipelines.NAME").
  void parse_retention_ages(const YAML::Node& node, const std::string& key, RetentionAges* ages) const {
    for (auto [name, slot] : {std::pair{"completed", &ages->completed}, std::pair{"halted", &ages->halted},
                              std::pair{"cancelled", &ages->cancelled}}) {
      if (node[name]) *slot = seconds(node[name], key + "." + name);
    }
  }

  void parse_retention(const YAML::Node& node, Config* config) const {
    only_keys(node, "retention", {"completed", "halted", "cancelled", "interval", "pipelines", "archive"});
    RetentionConfig& c = config->retention;
    parse_retention_ages(node, "retention", &c.ages);
    if (node["interval"]) c.interval = seconds(node["interval"], "retention.interval", kMinPollingSeconds);
    if (node["archive"]) c.archive = path(node["archive"], "retention.archive");
    if (auto pipelines = node["pipelines"]) {
      if (!pipelines.IsMap()) expected("retention.pipelines", "a map of pipeline names to {completed, halted, cancelled}", pipelines);
      for (const auto& entry : pipelines) {
        const std::string name = entry.first.Scalar();
        const std::string key = "retention.pipelines." + name;
        if (!entry.second.IsMap()) expected(key, "a map with completed, halted and/or cancelled ages", entry.second);
        only_keys(entry.second, key, {"completed", "halted", "cancelled"});
        parse_retention_ages(entry.second, key, &c.pipelines[name]);
        remember(config, entry.first, "retention.pipelines", name);
      }
    }
  }

  void parse_supervisor(const YAML::Node& sup, Config* config) const {
    only_keys(sup, "supervisor", {"polling_timeout", "reaper_timeout", "shutdown_timeout"});
    SupervisorConfig& c = config->supervisor;
    if (sup["polling_timeout"]) c.polling_timeout = seconds(sup["polling_timeout"], "supervisor.polling_timeout", kMinPollingSeconds);
    if (sup["reaper_timeout"]) c.reaper_timeout = seconds(sup["reaper_timeout"], "supervisor.reaper_timeout", kMinReaperSeconds);
    if (sup["shutdown_timeout"]) c.shutdown_timeout = seconds(sup["shutdown_timeout"], "supervisor.shutdown_timeout");
    // A process heartbeats every polling_timeout; reaping it sooner than
    // that would reap live processes between two heartbeats.
    if (c.reaper_timeout <= c.polling_timeout) {
      YAML::Node at = sup["reaper_timeout"] ? sup["reaper_timeout"] : sup["polling_timeout"];
      fail("supervisor.reaper_timeout",
           "expected a duration greater than supervisor.polling_timeout (" + number_text(c.polling_timeout) +
               "), got " + number_text(c.reaper_timeout),
           at);
    }
  }

  void parse_logger(const YAML::Node& logger, Config* config) const {
    only_keys(logger, "logger", {"level", "format"}, {"source"});
    if (logger["level"] && !parse_config_log_level(string(logger["level"], "logger.level"), &config->log_level)) {
      expected("logger.level", config_internal::kLogLevelShape, logger["level"], {"debug", "info", "warn", "error"});
    }
    if (auto source = logger["source"]) {
      ruby_only(source, "logger.source", "chooses between Rails.logger and the gem's own logger; this host always "
                "writes its own log (logger.format)", config);
    }
    if (logger["format"] && !parse_log_format(string(logger["format"], "logger.format"), &config->log_format)) {
      expected("logger.format", "one of: json, text", logger["format"], {"json", "text"});
    }
  }

  void parse_http(const YAML::Node& http, Config* config) const {
    only_keys(http, "http",
              {"listen", "token", "token_file", "max_body", "request_timeout", "idle_timeout", "max_connections"});
    HttpConfig& c = config->http;
    if (auto listen = http["listen"]) {
      const std::string shape =
          "a \"host:port\" address (e.g. \"127.0.0.1:7420\", \"[::1]:7420\", \":7420\"; port 0: any free port)";
      if (!listen.IsScalar() || !config_internal::valid_listen_address(listen.Scalar())) expected("http.listen", shape, listen);
      c.listen = listen.Scalar();
    }
    // The token's value is never shown, in errors either.
    if (http["token"] && http["token_file"]) {
      fail("http.token", "give http.token or http.token_file, not both", http["token_file"]);
    }
    if (auto token = http["token"]) {
      if (!token.IsScalar()) fail("http.token", "expected a string", token);
      c.token = token.Scalar();
      c.token_origin = "http.token";
    }
    if (auto file = http["token_file"]) {
      std::string at = path(file, "http.token_file");
      BoundedFile read = read_bounded_file(at, kMaxTokenFileBytes);
      if (read.error != 0) fail("http.token_file", "cannot read " + at + " (" + std::strerror(read.error) + ")", file);
      if (read.too_large) {
        fail("http.token_file", at + " is more than " + std::to_string(kMaxTokenFileBytes) +
                                    " bytes; it should hold the token alone", file);
      }
      c.token = read.text.substr(0, read.text.find('\n'));
      while (!c.token.empty() && std::isspace(static_cast<unsigned char>(c.token.back()))) c.token.pop_back();
      c.token_origin = "http.token_file (" + at + ")";
    }
    if (!c.token_origin.empty()) {
      if (std::string problem = config_internal::http_token_problem(c.token); !problem.empty()) {
        fail(c.token_origin.rfind("http.token_file", 0) == 0 ? "http.token_file" : "http.token", problem,
             http["token"] ? http["token"] : http["token_file"]);
      }
    }
    if (auto max_body = http["max_body"]) c.max_body = integer(max_body, "http.max_body", 1024, 1LL << 30);
    // Below a tenth of a second even a client on the same machine could
    // not send a request or come back with the next one.
    if (auto t = http["request_timeout"]) c.request_timeout = seconds(t, "http.request_timeout", 0.1);
    if (auto t = http["idle_timeout"]) c.idle_timeout = seconds(t, "http.idle_timeout", 0.1);
    if (auto n = http["max_connections"]) {
      c.max_connections = static_cast<int>(integer(n, "http.max_connections", 1, 65536));
    }
  }

};

}  // namespace

namespace config_internal {

const std::vector<std::string> kRoles = {"all", "advancer", "worker"};
const char* const kLogLevelShape = "one of: debug, info, warn, error, or a Ruby Logger level 0-5";

Config parse_document(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                      bool pipelines_required, const Environment& env) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  Document doc = choose_document(root, source, env, kTopLevelKeys);
  Config config = Parser(source, base_dir, doc.section_line).parse(doc.root, pipelines_required);
  config.environment = doc.environment;
  return config;
}

}  // namespace config_internal

bool parse_forking(const std::string& text, bool* forking) {
  // "default" is the Ruby gem's spelling of the forking mode.
  if (text == "fork" || text == "default" || text == "true") *forking = true;
  else if (text == "none" || text == "false") *forking = false;
  else return false;
  return true;
}

bool parse_config_log_level(const std::string& text, LogLevel* level) {
  if (parse_log_level(text, level)) return true;
  // Ruby's Logger::DEBUG..UNKNOWN. FATAL and UNKNOWN have no level of their
  // own here: error is the most severe there is.
  static const LogLevel kRubyLevels[] = {LogLevel::kDebug, LogLevel::kInfo,  LogLevel::kWarn,
                                         LogLevel::kError, LogLevel::kError, LogLevel::kError};
  if (text.size() != 1 || text[0] < '0' || text[0] > '5') return false;
  *level = kRubyLevels[text[0] - '0'];
  return true;
}

std::vector<std::vector<std::string>> PipelineAdvancerConfig::threads_for(
    const std::vector<std::string>& pipelines) const {
  int threads = 0;
  for (const auto& p : pipelines) threads = std::max(threads, count.get(p));
  std::vector<std::vector<std::string>> out(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    for (const auto& p : pipelines) {
      if (count.get(p) > i) out[static_cast<size_t>(i)].push_back(p);
    }
  }
  return out;
}

double PipelineAdvancerConfig::polling_timeout_for(const std::vector<std::string>& pipelines) const {
  if (pipelines.empty()) return polling_timeout.default_value();
  double shortest = polling_timeout.get(pipelines.front());
  for (const auto& p : pipelines) shortest = std::min(shortest, polling_timeout.get(p));
  return shortest;
}

bool Config::runs_pipeline(const std::string& pipeline) const {
  if (all_pipelines) return true;
  for (const auto& p : pipelines) {
    if (p == pipeline) return true;
  }
  return false;
}

Config parse_config(const std::string& yaml_text, const std::string& source, const std::string& base_dir) {
  return parse_config(yaml_text, source, base_dir, Environment{});
}

Config parse_config(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                    const Environment& env) {
  return config_internal::parse_document(yaml_text, source, base_dir, /*pipelines_required=*/true, env);
}

bool RetentionConfig::enabled() const {
  auto any = [](const RetentionAges& a) { return a.completed || a.halted || a.cancelled; };
  if (any(ages)) return true;
  for (const auto& [name, override_ages] : pipelines) {
    if (any(override_ages)) return true;
  }
  return false;
}

}  // namespace ductwork
