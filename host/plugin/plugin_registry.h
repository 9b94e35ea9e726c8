#pragma once

#include <boost/dll/shared_library.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ductwork/abi.h"
#include "plugin/frame_symbols.h"
#include "plugin/process_manifest.h"
#include "util/logger.h"

namespace ductwork {

// The oldest ABI version a host loads (docs/abi.md: a version stays
// loadable for at least two major releases after the next one appears).
constexpr uint32_t kOldestAbiVersion = 1;

// One lifecycle hook a plugin registered (SPEC §15). `abi` is null in a
// metadata-only registry (a probe's): such a hook can be listed, not run.
struct PluginHook {
  uint32_t event = 0;  // dw_hook_event
  std::string name;
  const dw_hook* abi = nullptr;
};

// "on_worker_start" for DW_ON_WORKER_START, and back (0 when unknown).
const char* hook_event_name(uint32_t event);
uint32_t hook_event_of(const std::string& name);

struct LoadedPlugin;
// [{"event": "on_worker_start", "name": "open_pool"}, ...] for `ductwork
// plugins --json` and the probe's report.
Json plugin_hooks_json(const LoadedPlugin& plugin);

// One plugin the host accepted. The library stays mapped for the plugin's
// lifetime; every pointer taken from its table is valid only that long. A
// plugin adopted from a probe (PluginRegistry::adopt) has its metadata only:
// no library and a null table.
struct LoadedPlugin {
  std::string path;
  std::string name;
  std::string version;
  uint32_t abi_version = 0;
  std::vector<std::string> step_names;
  std::vector<std::string> pipelines_json;  // canonical definitions it exports
  std::vector<PluginHook> hooks;            // in the plugin's registration order
  // Which version of the file was loaded (device, inode, size, modification
  // and change times): what a process that runs steps checks before it maps
  // the file (CheckedPlugin).
  std::string identity;
  const dw_plugin* table = nullptr;
  boost::dll::shared_library library;
  // Names the plugin's frames in its step's backtraces (null when adopted).
  std::unique_ptr<FrameSymbols> frames;
  // A process step manifest (SPEC §19) rather than a library: its steps run
  // in a step process (plugin/step_process.h); no library, no table, ABI 0.
  // Adopted from a probe it holds the name, command and steps only.
  std::shared_ptr<const ProcessManifest> manifest;
};

// A plugin file the probe loaded and accepted, and the identity of the
// version it loaded (LoadedPlugin::identity). A process that runs steps maps exactly these files with these
// bytes, never anything else of the folder: a plugin that throws in a static
// initialiser leaves the dynamic loader's lock held by the thread that
// loaded it, after which every backtrace taken by another thread hangs; one
// that hangs there never lets its process start. Only a probe process may
// meet such a plugin.
struct CheckedPlugin {
  std::string path;
  std::string identity;
};

// A step class and the plugin that provides it (`abi` is null in a
// metadata-only registry: such a step can be named, not run).
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

  // Loads every "*.so" and every process step manifest ("*.steps.yml") of
  // `directory` in name order. A missing directory is
  // logged and yields no plugins. `before_each` is told each file's path
  // before it is loaded (the plugin probe reports progress with it).
  void load_directory(const std::string& directory, Logger& logger,
                      const std::function<void(const std::string&)>& before_each = {});
  // Loads one library; returns false (and logs why) when it is refused.
  // With `expected_identity`, a file that is not the version the probe
  // checked (rebuilt or replaced since) is refused before it is mapped.
  bool load_file(const std::string& path, Logger& logger, const std::string* expected_identity = nullptr);
  // Loads the files the probe accepted, in order, each only if it is still
  // the version checked. `before_each` as for load_directory.
  void load_checked(const std::vector<CheckedPlugin>& checked, Logger& logger,
                    const std::function<void(const std::string&)>& before_each = {});
  // What a process that runs steps may load: every plugin here (loaded or
  // adopted from a probe), with the identity of its version.
  std::vector<CheckedPlugin> checked() const;

  // The step `name` resolves to: a bare name exported by exactly one plugin,
  // or `plugin:Step`. nullptr when nothing, or more than one plugin, matches.
  const StepClass* find_step(const std::string& name) const;
  // Every plugin exporting the bare step name `name` (two or more: the bare
  // name is ambiguous).
  std::vector<const LoadedPlugin*> exporters(const std::string& name) const;
  const std::vector<std::unique_ptr<LoadedPlugin>>& plugins() const { return plugins_; }
  // "path: reason" for every refused plugin.
  const std::vector<std::string>& refusals() const { return refusals_; }
  // The same, as (path, reason) pairs.
  const std::vector<std::pair<std::string, std::string>>& refused() const { return refused_; }

  // Metadata of a plugin another process loaded (plugin_probe): its steps
  // can be found and named, never run. Logged like a loaded plugin.
  void adopt(std::unique_ptr<LoadedPlugin> plugin, Logger& logger);
  // A refusal another process made; logged here as if made here.
  void adopt_refusal(const std::string& path, const std::string& reason, Logger& logger) {
    refuse(path, reason, logger);
  }
  // True when every plugin was adopted: nothing of theirs can run here.
  bool metadata_only() const { return metadata_only_; }
  // Start each manifest's command and check its handshake within `seconds`
  // as it is loaded (what the plugin probe does; a worker trusts the probe).
  void check_handshakes(double seconds) { handshake_seconds_ = seconds; }

 private:
  bool refuse(const std::string& path, const std::string& reason, Logger& logger);
  // load_file for a process step manifest.
  bool load_manifest(const std::string& path, Logger& logger, const std::string* expected_identity);
  // Registers an accepted plugin's steps and keeps it; false (refused) when
  // its name is taken.
  bool keep(std::unique_ptr<LoadedPlugin> plugin, Logger& logger);
  // The one "Plugin loaded" line, for a loaded or an adopted plugin.
  static void log_loaded(const LoadedPlugin& plugin, Logger& logger);

  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  std::map<std::string, std::vector<StepClass>> steps_;  // bare name -> its exporters
  std::vector<std::string> refusals_;
  std::vector<std::pair<std::string, std::string>> refused_;
  bool metadata_only_ = false;
  double handshake_seconds_ = 0;  // 0: not checked here
};

}  // namespace ductwork
