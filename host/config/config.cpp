#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ductwork {
namespace fs = std::filesystem;
namespace {

class Parser {
 public:
  Parser(std::string source, std::string base_dir) : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what, const YAML::Node& node) const {
    std::ostringstream msg;
    msg << source_;
    if (node.IsDefined() && node.Mark().line >= 0) msg << ":" << node.Mark().line + 1;
    msg << ": " << key << ": " << what;
    throw ConfigError(msg.str());
  }

  void only_keys(const YAML::Node& node, const std::string& key, const std::set<std::string>& allowed) const {
    if (!node.IsMap()) fail(key.empty() ? "(top level)" : key, "expected a map", node);
    for (const auto& kv : node) {
      std::string name = kv.first.as<std::string>();
      if (!allowed.count(name)) {
        std::string known;
        for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
        fail(key.empty() ? name : key + "." + name, "unknown key (expected one of: " + known + ")", kv.first);
      }
    }
  }

  std::string string(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(key, "expected a string", node);
    return node.as<std::string>();
  }

  std::string path(const YAML::Node& node, const std::string& key) const {
    std::string value = string(node, key);
    if (value.empty()) fail(key, "expected a non-empty path", node);
    fs::path p(value);
    if (p.is_relative() && !base_dir_.empty()) p = fs::path(base_dir_) / p;
    return p.lexically_normal().string();
  }

  long long integer(const YAML::Node& node, const std::string& key, long long min) const {
    std::string shape = "expected an integer >= " + std::to_string(min);
    if (!node.IsScalar()) fail(key, shape, node);
    long long value;
    try {
      std::size_t used = 0;
      std::string text = node.as<std::string>();
      value = std::stoll(text, &used);
      if (used != text.size()) fail(key, shape, node);
    } catch (const std::logic_error&) {
      fail(key, shape, node);
    }
    if (value < min) fail(key, shape, node);
    return value;
  }

  // Durations are seconds and accept fractions ("0.05").
  double seconds(const YAML::Node& node, const std::string& key) const {
    std::string shape = "expected a duration in seconds (a number >= 0, fractions allowed)";
    if (!node.IsScalar()) fail(key, shape, node);
    std::string text = node.as<std::string>();
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0) {
      fail(key, shape, node);
    }
    return value;
  }

  // Scoped integer: a number, or {default: n, Pipeline: n | {default: n, Step: n}}.
  void scoped_int(const YAML::Node& node, const std::string& key, long long min, bool per_step,
                  Scoped<int>* out) const {
    if (node.IsScalar()) {
      out->set_default(static_cast<int>(integer(node, key, min)));
      return;
    }
    std::string shape = per_step ? "expected an integer or a map of default/pipeline name to an integer or "
                                   "to a map of default/step name to an integer"
                                 : "expected an integer or a map of default/pipeline name to an integer";
    if (!node.IsMap()) fail(key, shape, node);
    if (node["default"]) out->set_default(static_cast<int>(integer(node["default"], key + ".default", min)));
    for (const auto& kv : node) {
      std::string pipeline = kv.first.as<std::string>();
      if (pipeline == "default") continue;
      std::string sub = key + "." + pipeline;
      if (kv.second.IsScalar()) {
        out->set_pipeline(pipeline, static_cast<int>(integer(kv.second, sub, min)));
      } else if (per_step && kv.second.IsMap()) {
        if (kv.second["default"]) {
          out->set_pipeline(pipeline, static_cast<int>(integer(kv.second["default"], sub + ".default", min)));
        } else {
          out->set_pipeline(pipeline, out->default_value());
        }
        for (const auto& step : kv.second) {
          std::string step_name = step.first.as<std::string>();
          if (step_name == "default") continue;
          out->set_step(pipeline, step_name, static_cast<int>(integer(step.second, sub + "." + step_name, min)));
        }
      } else {
        fail(sub, shape, kv.second);
      }
    }
  }

  void scoped_seconds(const YAML::Node& node, const std::string& key, Scoped<double>* out) const {
    if (node.IsScalar()) {
      out->set_default(seconds(node, key));
      return;
    }
    if (!node.IsMap()) fail(key, "expected a duration in seconds or a map of default/pipeline name to one", node);
    if (node["default"]) out->set_default(seconds(node["default"], key + ".default"));
    for (const auto& kv : node) {
      std::string pipeline = kv.first.as<std::string>();
      if (pipeline == "default") continue;
      out->set_pipeline(pipeline, seconds(kv.second, key + "." + pipeline));
    }
  }

  Config parse(const YAML::Node& root) const {
    Config config;
    config.source = source_;
    config.database.path = (fs::path(base_dir_.empty() ? "." : base_dir_) / "ductwork.sqlite3").lexically_normal();
    config.plugins_directory = (fs::path(base_dir_.empty() ? "." : base_dir_) / "plugins").lexically_normal();
    config.definitions_directory = (fs::path(base_dir_.empty() ? "." : base_dir_) / "pipelines").lexically_normal();
    if (!root.IsDefined() || root.IsNull()) fail("pipelines", "required (a list of pipeline names, or \"*\")", root);
    only_keys(root, "", {"database", "plugins", "definitions", "pipelines", "job_worker", "pipeline_advancer", "supervisor", "logger", "forking", "role"});
    if (root["forking"]) {
      std::string mode = string(root["forking"], "forking");
      if (mode == "fork" || mode == "true") config.forking = true;
      else if (mode == "none" || mode == "false") config.forking = false;
      else fail("forking", "expected \"fork\" (child processes, the default) or \"none\" (threads of one process)", root["forking"]);
    }
    if (root["role"]) config.role = string(root["role"], "role");

    if (auto db = root["database"]) {
      only_keys(db, "database", {"adapter", "path"});
      if (db["adapter"]) {
        config.database.adapter = string(db["adapter"], "database.adapter");
        if (config.database.adapter != "sqlite") {
          fail("database.adapter", "expected \"sqlite\" (the only adapter this build supports)", db["adapter"]);
        }
      }
      if (db["path"]) config.database.path = path(db["path"], "database.path");
    }
    if (auto plugins = root["plugins"]) {
      only_keys(plugins, "plugins", {"directory"});
      if (plugins["directory"]) config.plugins_directory = path(plugins["directory"], "plugins.directory");
    }
    if (auto defs = root["definitions"]) {
      only_keys(defs, "definitions", {"directory"});
      if (defs["directory"]) config.definitions_directory = path(defs["directory"], "definitions.directory");
    }

    auto pipelines = root["pipelines"];
    const std::string pipelines_shape = "required: a list of pipeline names, or \"*\" for every loaded pipeline";
    if (!pipelines) fail("pipelines", pipelines_shape, root);
    if (pipelines.IsScalar() && pipelines.as<std::string>() == "*") {
      config.all_pipelines = true;
    } else if (pipelines.IsSequence() && pipelines.size() > 0) {
      config.all_pipelines = false;
      for (const auto& p : pipelines) config.pipelines.push_back(string(p, "pipelines[]"));
    } else {
      fail("pipelines", pipelines_shape, pipelines);
    }

    if (auto jw = root["job_worker"]) {
      only_keys(jw, "job_worker", {"count", "polling_timeout", "max_retry", "max_crash", "retry_delay", "shutdown_timeout"});
      if (jw["count"]) scoped_int(jw["count"], "job_worker.count", 1, false, &config.job_worker.count);
      if (jw["polling_timeout"]) scoped_seconds(jw["polling_timeout"], "job_worker.polling_timeout", &config.job_worker.polling_timeout);
      if (jw["max_retry"]) scoped_int(jw["max_retry"], "job_worker.max_retry", 0, true, &config.job_worker.max_retry);
      if (jw["max_crash"]) scoped_int(jw["max_crash"], "job_worker.max_crash", 0, true, &config.job_worker.max_crash);
      if (jw["retry_delay"]) config.job_worker.retry_delay = seconds(jw["retry_delay"], "job_worker.retry_delay");
      if (jw["shutdown_timeout"]) config.job_worker.shutdown_timeout = seconds(jw["shutdown_timeout"], "job_worker.shutdown_timeout");
    }
    if (auto pa = root["pipeline_advancer"]) {
      only_keys(pa, "pipeline_advancer", {"count", "polling_timeout", "max_retry", "max_crash", "shutdown_timeout", "steps"});
      if (pa["count"]) config.pipeline_advancer.count = static_cast<int>(integer(pa["count"], "pipeline_advancer.count", 1));
      if (pa["polling_timeout"]) config.pipeline_advancer.polling_timeout = seconds(pa["polling_timeout"], "pipeline_advancer.polling_timeout");
      if (pa["max_retry"]) scoped_int(pa["max_retry"], "pipeline_advancer.max_retry", 0, false, &config.pipeline_advancer.max_retry);
      if (pa["max_crash"]) scoped_int(pa["max_crash"], "pipeline_advancer.max_crash", 0, false, &config.pipeline_advancer.max_crash);
      if (pa["shutdown_timeout"]) config.pipeline_advancer.shutdown_timeout = seconds(pa["shutdown_timeout"], "pipeline_advancer.shutdown_timeout");
      if (auto steps = pa["steps"]) {
        if (!steps.IsMap()) fail("pipeline_advancer.steps", "expected a map with 'max_depth'", steps);
        only_keys(steps, "pipeline_advancer.steps", {"max_depth"});
        // -1 = unlimited; per pipeline and per pipeline+step (the step that fans out).
        if (steps["max_depth"]) scoped_int(steps["max_depth"], "pipeline_advancer.steps.max_depth", -1, true, &config.pipeline_advancer.max_depth);
      }
    }
    if (auto sup = root["supervisor"]) {
      only_keys(sup, "supervisor", {"polling_timeout", "reaper_timeout", "shutdown_timeout"});
      if (sup["polling_timeout"]) config.supervisor.polling_timeout = seconds(sup["polling_timeout"], "supervisor.polling_timeout");
      if (sup["reaper_timeout"]) config.supervisor.reaper_timeout = seconds(sup["reaper_timeout"], "supervisor.reaper_timeout");
      if (sup["shutdown_timeout"]) config.supervisor.shutdown_timeout = seconds(sup["shutdown_timeout"], "supervisor.shutdown_timeout");
    }
    if (auto logger = root["logger"]) {
      only_keys(logger, "logger", {"level"});
      if (logger["level"] && !parse_log_level(string(logger["level"], "logger.level"), &config.log_level)) {
        fail("logger.level", "expected one of: debug, info, warn, error", logger["level"]);
      }
    }
    if (const char* env = std::getenv("DUCTWORK_ROLE"); env && *env) config.role = env;
    if (config.role != "all" && config.role != "advancer" && config.role != "worker") {
      fail("role", "expected all, advancer or worker (from the file or DUCTWORK_ROLE), got '" + config.role + "'",
           root["role"] ? root["role"] : root);
    }
    return config;
  }

 private:
  std::string source_;
  std::string base_dir_;
};

}  // namespace

bool Config::runs_pipeline(const std::string& pipeline) const {
  if (all_pipelines) return true;
  for (const auto& p : pipelines) {
    if (p == pipeline) return true;
  }
  return false;
}

Config parse_config(const std::string& yaml_text, const std::string& source, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  return Parser(source, base_dir).parse(root);
}

Config load_config(const std::string& explicit_path) {
  std::string path = explicit_path;
  if (path.empty()) {
    if (const char* env = std::getenv("DUCTWORK_CONFIG"); env && *env) path = env;
  }
  if (path.empty()) {
    if (!fs::exists("ductwork.yml")) {
      Config defaults;  // no file: everything default, every loaded pipeline
      if (const char* env = std::getenv("DUCTWORK_ROLE"); env && *env) defaults.role = env;
      if (defaults.role != "all" && defaults.role != "advancer" && defaults.role != "worker") {
        throw ConfigError("DUCTWORK_ROLE: expected all, advancer or worker, got '" + defaults.role + "'");
      }
      defaults.database.path = fs::absolute("ductwork.sqlite3").string();
      defaults.plugins_directory = fs::absolute("plugins").string();
      defaults.definitions_directory = fs::absolute("pipelines").string();
      return defaults;
    }
    path = "ductwork.yml";
  }
  std::ifstream in(path);
  if (!in || fs::is_directory(path)) throw ConfigError(path + ": cannot read the configuration file");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": cannot read the configuration file");
  std::string base = fs::absolute(path).parent_path().string();
  return parse_config(text.str(), path, base);
}

}  // namespace ductwork
