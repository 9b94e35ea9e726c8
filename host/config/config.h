#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/logger.h"

namespace ductwork {

// A configuration file that breaks a rule. what() names the key and the
// expected shape, e.g. "ductwork.yml: job_worker.count: expected an integer
// >= 1 or a map of pipeline name to integer".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The largest configuration file read (the file, or whatever -c names:
// /dev/zero is refused after this many bytes), and the largest
// http.token_file.
constexpr std::size_t kMaxConfigFileBytes = 1 << 20;
constexpr std::size_t kMaxTokenFileBytes = 64 * 1024;

// A value that can be given once for everything, per pipeline, and (for some
// keys) per pipeline and step. The YAML shapes are
//   key: 3
//   key: {default: 3, MyPipeline: 5}
//   key: {default: 3, MyPipeline: {default: 5, MyStep: 1}}
template <class T>
class Scoped {
 public:
  explicit Scoped(T fallback) : default_(fallback) {}

  T get(const std::string& pipeline, const std::string& step = std::string()) const {
    auto p = per_pipeline_.find(pipeline);
    if (p == per_pipeline_.end()) return default_;
    if (!step.empty()) {
      auto s = p->second.per_step.find(step);
      if (s != p->second.per_step.end()) return s->second;
    }
    return p->second.value;
  }

  // Whether a value was given for this pipeline (or steps of it), as
  // opposed to the default applying to it.
  bool scoped(const std::string& pipeline) const { return per_pipeline_.count(pipeline) > 0; }

  void set_default(T value) { default_ = value; }
  void set_pipeline(const std::string& pipeline, T value) { slot(pipeline).value = value; }
  void set_step(const std::string& pipeline, const std::string& step, T value) {
    slot(pipeline).per_step[step] = value;
  }
  T default_value() const { return default_; }

 private:
  struct PipelineSlot {
    T value;
    std::map<std::string, T> per_step;
  };
  PipelineSlot& slot(const std::string& pipeline) {
    auto it = per_pipeline_.find(pipeline);
    if (it == per_pipeline_.end()) it = per_pipeline_.emplace(pipeline, PipelineSlot{default_, {}}).first;
    return it->second;
  }

  T default_;
  std::map<std::string, PipelineSlot> per_pipeline_;
};

struct DatabaseConfig {
  std::string adapter = "sqlite";          // "sqlite" | "postgresql"
  std::string path = "ductwork.sqlite3";  // sqlite: file path, created on first use
  std::string url;                         // postgresql: postgresql://user:pw@host:port/db (or keyword form)
  int pool = 8;                            // postgresql: connections per process
};

// A pipeline (and step) name written as a key of a per-pipeline map, with
// where it was written. parse_config cannot know which pipelines exist; the
// host checks these once definitions are loaded (config_check.h).
struct ScopedName {
  std::string where;  // "<file>:<line>"
  int line = 0;       // of `where`, to keep file order
  std::string key;    // e.g. "job_worker.max_retry"
  std::string pipeline;
  std::string step;  // empty for a pipeline-level entry
};

struct JobWorkerConfig {
  Scoped<int> count{5};
  Scoped<int> max_retry{3};
  Scoped<int> max_crash{10};
  Scoped<double> polling_timeout{1.0};
  // Issue 11: how many due jobs one worker thread may claim in one
  // transaction and commit the successes of in one transaction. The worker
  // grows its batch towards this while its steps are quick (under 2 ms,
  // about 20 ms of work per batch) and falls back to one job after a slow
  // step; 1 turns batching off.
  Scoped<int> batch{256};
  double retry_delay = 10.0;
  double shutdown_timeout = 20.0;
  // Issue 38: a queued job due for longer than this is claimed as if it had
  // the top priority (0), however busy the better priorities are; 0 never.
  double priority_aging = 300.0;
  // SPEC §13: how long a step may run (0: no limit), per pipeline and step;
  // when the config gives it for the pipeline or step it wins over the
  // definition's `timeout:`, which wins over the config's default (see
  // effective_step_timeout). Past it the step's cancellation flag is
  // raised; `timeout_grace` later its process is killed (forking) or its
  // thread abandoned (threaded).
  Scoped<double> timeout{0};
  Scoped<double> timeout_grace{10};
  // Largest JSON text a step may return or store as a context value, and
  // the largest argument list `trigger` accepts (bytes).
  long long max_output_bytes = 16LL << 20;
};

struct PipelineAdvancerConfig {
  // Advancers per pipeline (see threads_for), and how long an idle one
  // sleeps; both per pipeline.
  Scoped<int> count{3};
  Scoped<int> max_retry{10};
  Scoped<int> max_crash{10};
  Scoped<double> polling_timeout{1.0};
  double shutdown_timeout = 20.0;
  // steps.max_depth: the widest fan-out (expand items, divide targets) a
  // step may make; -1 = unlimited. Per pipeline and per step.
  Scoped<int> max_depth{-1};
  // steps.max_invoke_depth (SPEC §18): how deeply child pipelines nest; an
  // invoke that would start a child deeper than this halts the branch with
  // invoke_depth_exceeded. Per (parent) pipeline.
  Scoped<int> max_invoke_depth{10};

  // The advancer threads of a host running `pipelines`, each given as the
  // pipelines it serves (in the order of `pipelines`): thread i serves every
  // pipeline whose count exceeds i. So pipeline P is advanced by exactly
  // count.get(P) threads, and the host runs as many threads as the largest
  // count among its pipelines; one count for all (`count: 3`) gives that
  // many threads, each serving every pipeline. None for no pipeline.
  std::vector<std::vector<std::string>> threads_for(const std::vector<std::string>& pipelines) const;
  // The idle sleep of a thread serving `pipelines`: the shortest of their
  // polling timeouts, so none waits longer than it asked for.
  double polling_timeout_for(const std::vector<std::string>& pipelines) const;
};

// SPEC §16: how long finished pipelines are kept (docs/configuration.md,
// "Retention"). A status without an age is kept forever: the default keeps
// everything, so an upgrade never deletes anything by surprise.
struct RetentionAges {
  std::optional<double> completed, halted, cancelled;  // seconds after the pipeline finished
};
struct RetentionConfig {
  RetentionAges ages;
  double interval = 60;  // seconds between pruner passes
  // Per pipeline name; a status it leaves out takes `ages`'.
  std::map<std::string, RetentionAges> pipelines;
  // A folder: each pruned pipeline's status document is appended there
  // before its rows go (engine/prune_archive.h); relative to the file.
  std::optional<std::string> archive;
  // Whether any pipeline has an age at all (else no pruner runs).
  bool enabled() const;
};

// SPEC §18: events delivered by `ductwork signal` / POST /api/v1/events.
struct EventsConfig {
  // Seconds an event is kept: one no branch waited for can be taken by an
  // await that begins meanwhile, and a repeated idempotency_key is known.
  double retention = 86400;
};

struct SupervisorConfig {
  double polling_timeout = 1.0;
  double reaper_timeout = 300.0;
  double shutdown_timeout = 30.0;
};

// SPEC §12: the HTTP API, dashboard and /metrics (docs/http-api.md).
struct HttpConfig {
  // Where `ductwork serve` listens when nothing is configured.
  static constexpr const char* kDefaultListen = "127.0.0.1:7420";
  // "host:port" (port 0: any free port, logged at start). Empty: `start`
  // serves nothing; `serve` listens on kDefaultListen.
  std::string listen;
  // The bearer token every endpoint but /healthz then requires; empty for
  // none (only allowed on a loopback address). From http.token,
  // http.token_file (the file's first line) or DUCTWORK_HTTP_TOKEN; never
  // written to a log or an error message.
  std::string token;
  std::string token_origin;  // which of the three gave it, for messages
  long long max_body = 16LL << 20;  // larger request bodies get 413
  // Seconds from a request's first byte until all of it has arrived (past
  // it: 408 and the connection closed); also how long an answer may wait
  // for its client to read any of it.
  double request_timeout = 10;
  // Seconds a connection may stay open with no request under way.
  double idle_timeout = 2;
  // Connections open at once; past it a new one replaces the one idle the
  // longest, or gets 503 when every one is in a request.
  int max_connections = 512;
};

// True when `listen`'s host part is a loopback address (127.0.0.0/8, ::1,
// localhost). An empty host (every interface) is not.
bool is_loopback_listen(const std::string& listen);

// Everything the host reads from ductwork.yml. Relative paths are resolved
// against the directory of the file they came from.
struct Config {
  std::string source = "(built-in defaults)";
  // For a file of Rails-style environment sections (`default:`,
  // `production:` ...), the section read (chosen by DUCTWORK_ENV, else
  // RAILS_ENV, else RACK_ENV, else "development"); empty for a plain file.
  std::string environment;
  DatabaseConfig database;
  std::string plugins_directory = "plugins";
  // How long loading the plugins may take (plugins.load_timeout, seconds):
  // a plugin hanging in its initialisation fails the command past it.
  double plugins_load_timeout = 60;
  // How long a process step manifest's command may take to answer its
  // handshake (plugins.handshake_timeout, seconds; SPEC §19): longer, and
  // the manifest is refused (at load) or the execution crashed (at run).
  double plugins_handshake_timeout = 10;
  std::string definitions_directory = "pipelines";
  bool all_pipelines = true;           // pipelines: "*"
  std::vector<std::string> pipelines;  // when !all_pipelines
  // Where `pipelines` came from, for errors: "<file>: pipelines" or
  // "DUCTWORK_PIPELINES".
  std::string pipelines_origin = "pipelines";
  JobWorkerConfig job_worker;
  PipelineAdvancerConfig pipeline_advancer;
  SupervisorConfig supervisor;
  HttpConfig http;
  RetentionConfig retention;
  EventsConfig events;
  LogLevel log_level = LogLevel::kInfo;
  // logger.format: json (one object per line, the default) or text (one
  // human-readable line, for terminals).
  Logger::Format log_format = Logger::Format::kJson;
  // forking: "fork" (default; "default" as in the Ruby gem) runs advancers
  // and per-pipeline workers in child processes under a supervisor; "none"
  // runs every loop as threads of one process.
  bool forking = true;
  // role: all | advancer | worker (DUCTWORK_ROLE overrides the file).
  std::string role = "all";

  // Every per-pipeline / per-step key of the file, for check_config_names.
  std::vector<ScopedName> scoped_names;
  // Things worth a warning that are not errors (e.g. an unknown DUCTWORK_*
  // environment variable, a key only the Ruby gem uses, which is ignored);
  // the host logs them once its logger exists.
  std::vector<std::string> warnings;

  // True when `pipeline` is one this host runs.
  bool runs_pipeline(const std::string& pipeline) const;
};

// Parses forking: "fork" / "default" / "true" -> true, "none" / "false" ->
// false; returns false for anything else.
bool parse_forking(const std::string& text, bool* forking);

// Parses logger.level: debug, info, warn, error, or a Ruby Logger level
// number (0 debug, 1 info, 2 warn, 3 error, and 4 fatal and 5 unknown, which
// have no level of their own here, mean error); returns false for anything
// else.
bool parse_config_log_level(const std::string& text, LogLevel* level);

// The environment variables the configuration reads (DUCTWORK_*, and
// RAILS_ENV / RACK_ENV, which choose an environment section), by name.
// Passed in explicitly so tests need not touch the process environment.
using Environment = std::map<std::string, std::string>;

// The variables of this process's environment the configuration reads:
// every DUCTWORK_* one, RAILS_ENV and RACK_ENV.
Environment process_environment();

// Reads the configuration. `explicit_path` is the -c argument (empty if
// none); otherwise DUCTWORK_CONFIG, then ./ductwork.yml if it exists, else
// built-in defaults. Then applies the environment overrides (see
// apply_environment). Throws ConfigError naming the file, key and expected
// shape (or the variable) for anything unreadable, unknown or of the wrong
// type.
Config load_config(const std::string& explicit_path);
Config load_config(const std::string& explicit_path, const Environment& env);

// Parses a YAML document alone, without the environment overrides (for
// tests); `source` names it in errors and `base_dir` resolves relative
// paths. A file of environment sections is read at the section `env`
// chooses (DUCTWORK_ENV, RAILS_ENV, RACK_ENV; "development" when none is
// set, as without `env`).
Config parse_config(const std::string& yaml_text, const std::string& source, const std::string& base_dir);
Config parse_config(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                    const Environment& env);

// Overrides `config` with the deployment variables of `env`, each validated
// by the rules of the key it replaces and named in errors as the variable:
// DUCTWORK_ROLE, DUCTWORK_DATABASE_URL, DUCTWORK_PLUGINS_DIRECTORY,
// DUCTWORK_DEFINITIONS_DIRECTORY, DUCTWORK_PIPELINES, DUCTWORK_FORKING,
// DUCTWORK_LOG_LEVEL, DUCTWORK_LOG_FORMAT. Empty variables count as unset;
// relative paths resolve against the current directory. (DUCTWORK_ENV
// chooses a section while the file is read; see parse_config.)
void apply_environment(const Environment& env, Config* config);

}  // namespace ductwork
