#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/definition_loader.h"
#include "plugin/plugin_registry.h"

namespace ductwork {

class Store;

// Every pipeline this host knows: the definition files of
// definitions.directory plus the pipelines plugins export. A pipeline name
// defined twice is an error. A broken definition throws DefinitionError; with
// `problems` every one is appended there instead and skipped.
DefinitionSet load_catalog(const std::string& definitions_directory, const PluginRegistry& plugins,
                           std::vector<std::string>* problems = nullptr);

// Problems that keep a definition set from running with these plugins: a
// step class no loaded plugin exports. Empty when everything resolves.
// With `only`, just those pipelines are checked.
std::vector<std::string> check_steps_resolve(const DefinitionSet& definitions, const PluginRegistry& plugins,
                                             const std::vector<std::string>* only = nullptr);

// Whether pipeline `name` can be triggered here: `definition` when it can;
// otherwise `problem` says why, and `unknown` tells a name nothing defines
// (the message lists the defined ones) from a definition whose steps no
// loaded plugin exports (a run of it would wait forever, so `start` refuses
// to host it and trigger refuses it too).
struct TriggerTarget {
  const Definition* definition = nullptr;
  bool unknown = false;
  std::string problem;
};
TriggerTarget find_triggerable(const DefinitionSet& definitions, const PluginRegistry& plugins,
                               const std::string& name);

// Parsed definition snapshots of runs, by definition_sha1. Runs keep the
// definition they were triggered with; the cache reads a snapshot from the
// store once and shares it between threads.
class DefinitionCache {
 public:
  std::shared_ptr<const Definition> get(const std::string& sha1, const std::string& run_id, Store& store);

  // The pipelines this host defines, what an invoke edge starts (SPEC §18):
  // set before any loop starts, and kept alive by the caller as long.
  void set_catalog(const DefinitionSet* catalog) { catalog_ = catalog; }
  // The pipeline named `name` as this host defines it, or nullptr.
  const Definition* defined(const std::string& name) const { return catalog_ ? catalog_->find(name) : nullptr; }

 private:
  const DefinitionSet* catalog_ = nullptr;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Definition>> by_sha1_;
};

}  // namespace ductwork
