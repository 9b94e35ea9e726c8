#include "cli/bootstrap.h"

#include <filesystem>

#include "config/config_check.h"
#include "engine/catalog.h"
#include "plugin/plugin_probe.h"
#include "process/plugin_load_watch.h"
#include "store/store_error.h"
#include "util/suggest.h"

namespace ductwork::cli {

Bootstrap::Bootstrap(const Args& args, std::FILE* log_out, LogLevel min_level)
    : config_(load_config(args.config_path)) {
  logger_ = std::make_unique<Logger>(log_out, config_.log_format, std::max(min_level, config_.log_level));
  logger_->set_role(args.command);
  for (const auto& warning : config_.warnings) logger_->warn("Configuration warning", {{"warning", warning}});
}

PluginRegistry& Bootstrap::plugins() {
  if (!plugins_) {
    auto registry = std::make_unique<PluginRegistry>();
    if (plugins_in_process_) {
      load_checked_plugins(*registry, checked_, config_.plugins_load_timeout, plugin_timeout_exit_code_, *logger_);
    } else {
      probe_plugins(std::filesystem::read_symlink("/proc/self/exe").string(), config_.plugins_directory,
                    config_.plugins_load_timeout, config_.plugins_handshake_timeout, *registry, *logger_,
                    stop_check_);
    }
    plugins_ = std::move(registry);
  }
  return *plugins_;
}

PluginRegistry& Bootstrap::runnable_plugins() {
  PluginRegistry& checked = plugins();
  if (plugins_in_process_) return checked;
  if (!runnable_) {
    runnable_ = std::make_unique<PluginRegistry>();
    load_checked_plugins(*runnable_, checked.checked(), config_.plugins_load_timeout, plugin_timeout_exit_code_, *logger_);
  }
  return *runnable_;
}

const DefinitionSet& Bootstrap::definitions() {
  if (!definitions_) {
    definitions_ = std::make_unique<DefinitionSet>(load_catalog(
        config_.definitions_directory, plugins(), tolerate_broken_definitions_ ? &definition_problems_ : nullptr));
  }
  return *definitions_;
}

std::vector<std::string> Bootstrap::config_problems(const DefinitionSet& defs) const {
  PipelineSteps defined;
  for (const auto& [name, definition] : defs.pipelines) {
    std::vector<std::string> classes = definition.step_classes();
    defined[name].insert(classes.begin(), classes.end());
  }
  return check_config_names(config_, defined);
}

namespace {

void throw_thread_budget(const Config& config, const std::vector<std::string>& pipelines) {
  if (auto problem = thread_budget_problem(config, pipelines)) throw ConfigError(*problem);
}

}  // namespace

std::vector<std::string> Bootstrap::hosted_pipelines() {
  const DefinitionSet& defs = definitions();
  std::vector<std::string> problems = config_problems(defs);
  if (problems.size() == 1) throw ConfigError(problems[0]);
  if (!problems.empty()) {
    std::string all = std::to_string(problems.size()) + " keys name what is not defined:";
    for (const auto& p : problems) all += "\n  " + p;
    throw ConfigError(all);
  }
  std::vector<std::string> out;
  if (config_.all_pipelines) {
    for (const auto& [name, _] : defs.pipelines) out.push_back(name);
    throw_thread_budget(config_, out);
    return out;
  }
  for (const auto& name : config_.pipelines) {
    if (!defs.find(name)) {
      std::vector<std::string> known;
      for (const auto& [defined, _] : defs.pipelines) known.push_back(defined);
      std::string refused;
      for (const auto& problem : definition_problems_) refused += "\n  refused definition: " + problem;
      throw BadInput(config_.pipelines_origin + ": '" + name + "' is not defined in " +
                     config_.definitions_directory + " or by a loaded plugin" + did_you_mean(name, known) + refused);
    }
    out.push_back(name);
  }
  throw_thread_budget(config_, out);
  return out;
}

bool Bootstrap::database_exists() {
  if (config_.database.adapter != "sqlite") return open_store_for_reading()->has_schema();  // a server: ask it
  std::error_code ec;
  return std::filesystem::exists(config_.database.path, ec);
}

StoreFactory& Bootstrap::stores() {
  if (!stores_) {
    try {
      auto factory = make_store_factory(config_.database);
      if (migrate_) factory->open()->migrate();
      stores_ = std::move(factory);
    } catch (const StoreError& e) {
      throw BadInput(e.what());
    }
  }
  return *stores_;
}

std::unique_ptr<Store> Bootstrap::open_store() { return stores().open(); }

std::unique_ptr<Store> Bootstrap::open_store_for_reading() {
  try {
    return make_store_factory(config_.database)->open();
  } catch (const StoreError& e) {
    throw BadInput(e.what());
  }
}

}  // namespace ductwork::cli
