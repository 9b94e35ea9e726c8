#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "config/config.h"
#include "engine/definition_loader.h"
#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork::cli {

// What a command needs, built in the order that keeps bad input from writing
// anything: configuration, then plugins and definitions, and the database
// last.
class Bootstrap {
 public:
  // Reads the configuration (-c, DUCTWORK_CONFIG, ./ductwork.yml, defaults,
  // then the DUCTWORK_* environment overrides). Logs go to `log_out` (stdout
  // for `start`, stderr for every other command) in logger.format, from
  // logger.level but never below `min_level`.
  Bootstrap(const Args& args, std::FILE* log_out, LogLevel min_level);

  Config& config() { return config_; }
  Logger& logger() { return *logger_; }

  // What the plugins of plugins.directory export. By default they are
  // loaded in a probe process (plugin_probe.h), bounded by
  // plugins.load_timeout, so no plugin code runs in this one; a plugin that
  // hangs, exits or crashes while loading is a PluginLoadError naming it.
  PluginRegistry& plugins();
  // Plugins whose steps can run here: loaded in this process, only the
  // files the probe accepted and only while their bytes are the ones it
  // checked (CheckedPlugin), within plugins.load_timeout
  // (plugin_load_watch.h: past it the process logs the refusal and ends,
  // exit 1 or set_plugin_timeout_exit_code's).
  PluginRegistry& runnable_plugins();
  // A child of the supervisor: the supervisor's probe accepted `checked`;
  // load those here, no probe of its own.
  void load_plugins_in_process(std::vector<CheckedPlugin> checked) {
    plugins_in_process_ = true;
    checked_ = std::move(checked);
  }
  // The exit code a child ends with when its plugins do not load in time.
  void set_plugin_timeout_exit_code(int code) { plugin_timeout_exit_code_ = code; }
  // A child: the supervisor that started it has migrated the database, so
  // stores() only opens it (a child starts sooner; on PostgreSQL the
  // migration check is a connection and several round trips).
  void trust_migrated_database() { migrate_ = false; }
  // Polled while the probe runs; true gives up (PluginProbeInterrupted).
  void set_stop_check(std::function<bool()> check) { stop_check_ = std::move(check); }
  // Loads definition files and plugin pipelines (plugins first). Throws
  // DefinitionError for a broken definition, unless
  // tolerate_broken_definitions() was called.
  const DefinitionSet& definitions();
  // `start`: a definition that does not load is left out, and
  // definition_problems() says why, instead of failing the command: one
  // broken file must not stop every pipeline of a host.
  void tolerate_broken_definitions() { tolerate_broken_definitions_ = true; }
  const std::vector<std::string>& definition_problems() {
    definitions();
    return definition_problems_;
  }
  // The pipelines this host runs: pipelines: "*" means every known one; a
  // listed name that is not defined is BadInput. Also checks the
  // configuration against the definitions (config_problems): any problem
  // throws ConfigError listing them all.
  std::vector<std::string> hosted_pipelines();
  // What parse_config could not check without the definitions: per-pipeline
  // and per-step keys naming a pipeline or step that `defs` does not define.
  // Empty when everything resolves.
  std::vector<std::string> config_problems(const DefinitionSet& defs) const;

  // True when the configured database already exists (read-only commands
  // must not create it).
  bool database_exists();
  // Opens the database and applies pending migrations. An unopenable or
  // corrupt database is BadInput naming the path.
  StoreFactory& stores();
  std::unique_ptr<Store> open_store();
  // For read-only commands: opens the existing database without applying
  // migrations, so a read never writes.
  std::unique_ptr<Store> open_store_for_reading();

 private:
  Config config_;
  std::unique_ptr<Logger> logger_;
  std::unique_ptr<PluginRegistry> plugins_;
  std::unique_ptr<PluginRegistry> runnable_;
  bool plugins_in_process_ = false;
  std::vector<CheckedPlugin> checked_;
  int plugin_timeout_exit_code_ = 1;
  bool migrate_ = true;
  std::function<bool()> stop_check_;
  std::unique_ptr<DefinitionSet> definitions_;
  bool tolerate_broken_definitions_ = false;
  std::vector<std::string> definition_problems_;
  std::unique_ptr<StoreFactory> stores_;
};

}  // namespace ductwork::cli
