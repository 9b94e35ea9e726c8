#pragma once

#include <boost/dll/shared_library.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ductwork/abi.h"
#include "util/logger.h"

namespace ductwork {

// One plugin the host accepted. The library stays mapped for the plugin's
// lifetime; every pointer taken from its table is valid only that long.
struct LoadedPlugin {
  std::string path;
  std::string name;
  std::string version;
  uint32_t abi_version = 0;
  std::vector<std::string> step_names;
  std::vector<std::string> pipelines_json;  // canonical definitions it exports
  const dw_plugin* table = nullptr;
  boost::dll::shared_library library;
};

// A step class and the plugin that provides it.
struct StepClass {
  const dw_step_class* abi = nullptr;
  const LoadedPlugin* plugin = nullptr;
};

// The plugins of plugins.directory and the step classes they export. Loading
// never fails as a whole: a plugin with an unsupported ABI version, no entry
// point, or a malformed table is refused with one log line and the rest
// load. Two plugins may export the same step name: a definition then names
// the one it means as `plugin:Step`, and the bare name is ambiguous (it
// resolves to nothing, and validation names both plugins). Must outlive
// every execution that uses it.
class PluginRegistry {
 public:
  PluginRegistry() = default;
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Loads every "*.so" of `directory` in name order. A missing directory is
  // logged and yields no plugins.
  void load_directory(const std::string& directory, Logger& logger);
  // Loads one library; returns false (and logs why) when it is refused.
  bool load_file(const std::string& path, Logger& logger);

  // The step `name` resolves to: a bare name exported by exactly one plugin,
  // or `plugin:Step`. nullptr when nothing, or more than one plugin, matches.
  const StepClass* find_step(const std::string& name) const;
  // Every plugin exporting the bare step name `name` (two or more: the bare
  // name is ambiguous).
  std::vector<const LoadedPlugin*> exporters(const std::string& name) const;
  const std::vector<std::unique_ptr<LoadedPlugin>>& plugins() const { return plugins_; }
  // "path: reason" for every refused plugin.
  const std::vector<std::string>& refusals() const { return refusals_; }

 private:
  bool refuse(const std::string& path, const std::string& reason, Logger& logger);

  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  std::map<std::string, std::vector<StepClass>> steps_;  // bare name -> its exporters
  std::vector<std::string> refusals_;
};

}  // namespace ductwork
