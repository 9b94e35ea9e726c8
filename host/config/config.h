#pragma once

#include <map>
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
  std::string adapter = "sqlite";
  std::string path = "ductwork.sqlite3";  // sqlite: file path, created on first use
};

struct JobWorkerConfig {
  Scoped<int> count{5};
  Scoped<int> max_retry{3};
  Scoped<int> max_crash{10};
  Scoped<double> polling_timeout{1.0};
  double retry_delay = 10.0;
  double shutdown_timeout = 20.0;
};

struct PipelineAdvancerConfig {
  int count = 3;
  Scoped<int> max_retry{10};
  Scoped<int> max_crash{10};
  double polling_timeout = 1.0;
  double shutdown_timeout = 20.0;
  // steps.max_depth: the widest fan-out (expand items, divide targets) a
  // step may make; -1 = unlimited. Per pipeline and per step.
  Scoped<int> max_depth{-1};
};

struct SupervisorConfig {
  double polling_timeout = 1.0;
  double reaper_timeout = 300.0;
  double shutdown_timeout = 30.0;
};

// Everything the host reads from ductwork.yml. Relative paths are resolved
// against the directory of the file they came from.
struct Config {
  std::string source = "(built-in defaults)";
  DatabaseConfig database;
  std::string plugins_directory = "plugins";
  std::string definitions_directory = "pipelines";
  bool all_pipelines = true;           // pipelines: "*"
  std::vector<std::string> pipelines;  // when !all_pipelines
  JobWorkerConfig job_worker;
  PipelineAdvancerConfig pipeline_advancer;
  SupervisorConfig supervisor;
  LogLevel log_level = LogLevel::kInfo;
  // forking: "fork" (default) runs advancers and per-pipeline workers in
  // child processes under a supervisor; "none" runs every loop as threads
  // of one process.
  bool forking = true;
  // role: all | advancer | worker (DUCTWORK_ROLE overrides the file).
  std::string role = "all";

  // True when `pipeline` is one this host runs.
  bool runs_pipeline(const std::string& pipeline) const;
};

// Reads the configuration. `explicit_path` is the -c argument (empty if
// none); otherwise DUCTWORK_CONFIG, then ./ductwork.yml if it exists, else
// built-in defaults. Throws ConfigError naming the file, key and expected
// shape for anything unreadable, unknown or of the wrong type.
Config load_config(const std::string& explicit_path);

// Parses a YAML document (for tests); `source` names it in errors and
// `base_dir` resolves relative paths.
Config parse_config(const std::string& yaml_text, const std::string& source, const std::string& base_dir);

}  // namespace ductwork
