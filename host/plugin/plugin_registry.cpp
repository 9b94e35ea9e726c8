#include "plugin/plugin_registry.h"

#include <ductwork/pipeline.hpp>

#include <boost/dll/import.hpp>


#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "plugin/host_api.h"
#include "util/json.h"
#include "plugin/step_process.h"

namespace ductwork {
namespace fs = std::filesystem;

bool PluginRegistry::refuse(const std::string& path, const std::string& reason, Logger& logger) {
  refusals_.push_back(path + ": " + reason);
  refused_.emplace_back(path, reason);
  logger.error("Plugin refused", Json::object({{"plugin_path", path}, {"reason", reason}}));
  return false;
}

void PluginRegistry::load_directory(const std::string& directory, Logger& logger,
                                    const std::function<void(const std::string&)>& before_each) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      refuse(directory, "cannot read the plugins folder: " + ec.message(), logger);  // e.g. a symlink loop
    } else {
      logger.warn("Plugin directory not found", Json::object({{"directory", directory}}));
    }
    return;
  }
  std::vector<fs::path> files;
  std::vector<std::pair<std::string, std::string>> unreadable;
  fs::directory_iterator it(directory, ec);
  if (ec) {
    refuse(directory, "cannot read the plugins folder: " + ec.message(), logger);
    return;
  }
  for (const auto& entry : it) {
    if (entry.path().extension() != ".so" && !is_process_manifest(entry.path().string())) continue;
    if (entry.path().filename().string().front() == '.') continue;  // hidden: an editor's or a copy's temporary
    std::error_code file_ec;
    bool regular = entry.is_regular_file(file_ec);
    if (file_ec) {
      unreadable.emplace_back(entry.path().string(), file_ec.message());  // e.g. a symlink loop
    } else if (regular) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::sort(unreadable.begin(), unreadable.end());
  for (const auto& [path, why] : unreadable) refuse(path, "cannot be read: " + why, logger);
  for (const auto& file : files) {
    if (before_each) before_each(file.string());
    load_file(file.string(), logger);
  }
}

const char* hook_event_name(uint32_t event) {
  switch (event) {
    case DW_ON_SUPERVISOR_START: return "on_supervisor_start";
    case DW_ON_SUPERVISOR_STOP: return "on_supervisor_stop";
    case DW_ON_ADVANCER_START: return "on_advancer_start";
    case DW_ON_ADVANCER_STOP: return "on_advancer_stop";
    case DW_ON_WORKER_START: return "on_worker_start";
    case DW_ON_WORKER_STOP: return "on_worker_stop";
    default: return nullptr;
  }
}

uint32_t hook_event_of(const std::string& name) {
  for (uint32_t event = DW_ON_SUPERVISOR_START; event <= DW_ON_WORKER_STOP; ++event) {
    if (name == hook_event_name(event)) return event;
  }
  return 0;
}

Json plugin_hooks_json(const LoadedPlugin& plugin) {
  Json hooks = Json::array();
  for (const auto& hook : plugin.hooks) {
    hooks.push_back(Json::object({{"event", hook_event_name(hook.event)}, {"name", hook.name}}));
  }
  return hooks;
}

void PluginRegistry::log_loaded(const LoadedPlugin& plugin, Logger& logger) {
  Json hooks = Json::array();
  for (const auto& hook : plugin.hooks) hooks.push_back(std::string(hook_event_name(hook.event)) + ": " + hook.name);
  Json fields = Json::object({{"plugin", plugin.name},
                              {"version", plugin.version},
                              {"plugin_path", plugin.path},
                              {"steps", Json::Array(plugin.step_names.begin(), plugin.step_names.end())}});
  if (!plugin.hooks.empty()) fields["hooks"] = hooks;
  if (plugin.manifest) fields["command"] = json_strings(plugin.manifest->command);
  logger.info("Plugin loaded", fields);
}

void PluginRegistry::adopt(std::unique_ptr<LoadedPlugin> plugin, Logger& logger) {
  metadata_only_ = true;
  log_loaded(*plugin, logger);
  for (const auto& name : plugin->step_names) steps_[name].push_back(StepClass{nullptr, plugin.get()});
  plugins_.push_back(std::move(plugin));
}


void PluginRegistry::load_checked(const std::vector<CheckedPlugin>& checked, Logger& logger,
                                  const std::function<void(const std::string&)>& before_each) {
  for (const auto& plugin : checked) {
    if (before_each) before_each(plugin.path);
    load_file(plugin.path, logger, &plugin.identity);
  }
}

std::vector<CheckedPlugin> PluginRegistry::checked() const {
  std::vector<CheckedPlugin> out;
  for (const auto& plugin : plugins_) out.push_back(CheckedPlugin{plugin->path, plugin->identity});
  return out;
}

namespace {

// Which file `path` is, and which version of it: device, inode, size and
// the modification and change times in nanoseconds. Any write to the file,
// or a new file renamed over it, changes it (the change time cannot be set
// back by hand), and taking it costs one stat(): a content hash of every
// plugin cost each command tens of milliseconds.
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(std::string("cannot stat it: ") + std::strerror(errno));
  auto ns = [](const timespec& t) { return std::to_string(t.tv_sec) + "." + std::to_string(t.tv_nsec); };
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         ns(st.st_mtim) + ":" + ns(st.st_ctim);
}

// Loads `path` from a private copy: an operator who copies a new build over
// the file (same inode, rewritten in place) would otherwise change code
// under a running worker (it segfaulted) and mix versions in one run. The
// copy lives in a fresh folder that is removed as soon as the library is
// mapped (the mapping outlives the unlinked file), so a killed process
// leaves nothing behind.
// With `expected_identity`, a file that is not the version the probe
// loaded is refused unmapped; one that changes while it is copied is too.
// Returns the path the library was mapped from (what backtraces show), and
// the file's identity (file_identity) in *identity.
std::string load_private_copy(boost::dll::shared_library& library, const std::string& path,
                              const std::string* expected_identity, std::string* identity) {
  std::string folder = (fs::temp_directory_path() / "ductwork-plugin-XXXXXX").string();
  if (!::mkdtemp(folder.data())) throw std::runtime_error(std::string("cannot make a private copy: ") + std::strerror(errno));
  struct Cleanup {
    const std::string& folder;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(folder, ec);
    }
  } cleanup{folder};
  fs::path copy = fs::path(folder) / fs::path(path).filename();
  *identity = file_identity(path);
  fs::copy_file(path, copy);
  if (file_identity(path) != *identity) throw std::runtime_error("the file changed while it was being copied");
  if (expected_identity && *identity != *expected_identity) {
    throw std::runtime_error(
        "the file changed since the plugin probe checked it; reload the host (SIGHUP) to check and load the new "
        "file");
  }
  // Mapped once by hand first: Boost.DLL reports a failed dlopen as errno's
  // text ("Bad file descriptor") wrapped in its own, while the loader's
  // reason names what is wrong (a missing dependency, an undefined symbol).
  // Boost's load of the mapped library then only counts a reference.
  // Called through a pointer the compiler cannot see through: glibc
  // declares dlopen nothrow, yet a plugin's static initialiser may throw
  // out of it, and a call the compiler takes for nothrow has no unwind entry
  // (the exception would end the process in std::terminate).
  static void* (*volatile const open_library)(const char*, int) = ::dlopen;
  void* mapped = open_library(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (mapped == nullptr) {
    const char* why = ::dlerror();
    std::string reason = why != nullptr ? why : "the dynamic loader refused it";
    // It names the private copy; the operator knows the file by its own path.
    const std::string shown = copy.string();
    for (size_t at = reason.find(shown); at != std::string::npos; at = reason.find(shown, at + path.size())) {
      reason.replace(at, shown.size(), path);
    }
    throw std::runtime_error(reason);
  }
  library.load(copy.string(), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  ::dlclose(mapped);
  return copy.string();
}

}  // namespace

bool PluginRegistry::load_file(const std::string& path, Logger& logger, const std::string* expected_identity) {
  if (is_process_manifest(path)) return load_manifest(path, logger, expected_identity);
  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->path = path;
  try {
    plugin->frames = std::make_unique<FrameSymbols>(
        load_private_copy(plugin->library, path, expected_identity, &plugin->identity), path);
  } catch (const std::exception& e) {
    return refuse(path, std::string("cannot be loaded: ") + e.what(), logger);
  }
  if (!plugin->library.has(DUCTWORK_ABI_VERSION_SYMBOL) || !plugin->library.has(DUCTWORK_INIT_SYMBOL)) {
    return refuse(path, "missing entry point (" DUCTWORK_ABI_VERSION_SYMBOL " / " DUCTWORK_INIT_SYMBOL
                        "): not a Ductwork plugin",
                  logger);
  }
  // The ABI version is checked before any other plugin code runs.
  auto abi_version = plugin->library.get<uint32_t()>(DUCTWORK_ABI_VERSION_SYMBOL)();
  if (abi_version > DUCTWORK_ABI_VERSION) {
    return refuse(path,
                  "unsupported ABI version " + std::to_string(abi_version) + ": the plugin was built for ABI version " +
                      std::to_string(abi_version) + ", newer than this host's ABI version " +
                      std::to_string(DUCTWORK_ABI_VERSION) +
                      " (upgrade ductwork, or build the plugin against this host's SDK)",
                  logger);
  }
  if (abi_version < kOldestAbiVersion) {
    return refuse(path,
                  "unsupported ABI version " + std::to_string(abi_version) + ": the plugin was built for ABI version " +
                      std::to_string(abi_version) + ", older than the oldest this host loads (ABI version " +
                      std::to_string(kOldestAbiVersion) + "; docs/abi.md)",
                  logger);
  }
  const dw_plugin* table = plugin->library.get<const dw_plugin*(const dw_host_api*)>(DUCTWORK_INIT_SYMBOL)(host_api());
  if (!table) {
    // The SDK's plugins say why their initialiser failed (a pipeline that
    // breaks a builder rule, say); older or hand-written ones may not.
    const char* why = nullptr;
    if (plugin->library.has(DUCTWORK_INIT_ERROR_SYMBOL)) {
      why = plugin->library.get<const char*()>(DUCTWORK_INIT_ERROR_SYMBOL)();
    }
    if (why && *why) return refuse(path, std::string("its initialiser failed: ") + why, logger);
    return refuse(path, "its initialiser returned no plugin table (see the plugin's own message on stderr)", logger);
  }
  if (table->struct_size < offsetof(dw_plugin, free_string) + sizeof(table->free_string) ||
      table->abi_version != abi_version || !table->name || !table->free_string) {
    return refuse(path, "its plugin table is malformed (too small, wrong ABI version, or no name)", logger);
  }
  plugin->table = table;
  plugin->abi_version = table->abi_version;
  plugin->name = table->name;
  plugin->version = table->version ? table->version : "";
  // Names are printed in JSON documents and logs and stored in rows: plain
  // text only (invalid UTF-8 broke every command that printed it).
  try {
    detail::check_name("plugin", plugin->name);
  } catch (const PipelineError& e) {
    return refuse(path, e.what(), logger);
  }
  if (plugin->version.size() > 64 ||
      std::any_of(plugin->version.begin(), plugin->version.end(), [](unsigned char c) { return c < 0x20 || c >= 0x7f; })) {
    return refuse(path, "version '" + detail::shown_name(plugin->version) + "' is not printable text of at most 64 characters",
                  logger);
  }
  std::set<std::string> own;
  for (size_t i = 0; i < table->step_count; ++i) {
    const dw_step_class* cls = table->steps[i];
    // struct_size says which fields the plugin's struct has: fields are only
    // appended, so anything smaller than this ABI's is malformed.
    if (!cls || cls->struct_size < offsetof(dw_step_class, destroy) + sizeof(cls->destroy) || !cls->name ||
        !cls->create || !cls->execute || !cls->destroy) {
      return refuse(path, "step #" + std::to_string(i) + " is malformed (too small, or missing name or function)",
                    logger);
    }
    std::string name = cls->name;
    try {
      detail::check_step_name(name);
    } catch (const PipelineError& e) {
      return refuse(path, "step #" + std::to_string(i) + ": " + e.what(), logger);
    }
    if (!own.insert(name).second) return refuse(path, "step " + name + " is exported twice", logger);
    plugin->step_names.push_back(name);
  }
  for (size_t i = 0; i < table->pipeline_count; ++i) {
    if (table->pipelines_json && table->pipelines_json[i]) plugin->pipelines_json.emplace_back(table->pipelines_json[i]);
  }
  // Hooks were appended to the table: a plugin built before them has none.
  if (table->struct_size >= offsetof(dw_plugin, hooks) + sizeof(table->hooks)) {
    for (size_t i = 0; i < table->hook_count; ++i) {
      const dw_hook* hook = table->hooks ? table->hooks[i] : nullptr;
      if (!hook || hook->struct_size < offsetof(dw_hook, run) + sizeof(hook->run) || !hook->name || !hook->run) {
        return refuse(path, "hook #" + std::to_string(i) + " is malformed (too small, or missing name or function)",
                      logger);
      }
      std::string name = hook->name;
      try {
        detail::check_name("hook", name);
      } catch (const PipelineError& e) {
        return refuse(path, "hook #" + std::to_string(i) + ": " + e.what(), logger);
      }
      if (hook_event_name(hook->event) == nullptr) {
        // A newer SDK's event: this host has no such moment to run it at.
        logger.warn("Plugin hook skipped: this host does not know its event",
                    Json::object({{"plugin_path", path}, {"hook", name}, {"event", hook->event}}));
        continue;
      }
      plugin->hooks.push_back(PluginHook{hook->event, std::move(name), hook});
    }
  }
  return keep(std::move(plugin), logger);
}

bool PluginRegistry::keep(std::unique_ptr<LoadedPlugin> plugin, Logger& logger) {
  for (const auto& loaded : plugins_) {
    if (loaded->name == plugin->name) {
      return refuse(plugin->path, "plugin name " + plugin->name + " is already taken by " + loaded->path +
                                      " (plugin:Step names must say which plugin they mean)",
                    logger);
    }
  }
  if (plugin->table != nullptr) {
    for (size_t i = 0; i < plugin->table->step_count; ++i) {
      steps_[plugin->table->steps[i]->name].push_back(StepClass{plugin->table->steps[i], plugin.get()});
    }
  } else {
    for (const auto& name : plugin->step_names) steps_[name].push_back(StepClass{nullptr, plugin.get()});
  }
  log_loaded(*plugin, logger);
  plugins_.push_back(std::move(plugin));
  return true;
}

bool PluginRegistry::load_manifest(const std::string& path, Logger& logger, const std::string* expected_identity) {
  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->path = path;
  try {
    plugin->identity = file_identity(path);
  } catch (const std::exception& e) {
    return refuse(path, std::string("cannot be read: ") + e.what(), logger);
  }
  if (expected_identity && plugin->identity != *expected_identity) {
    return refuse(path,
                  "the file changed since the plugin probe checked it; reload the host (SIGHUP) to check and load the "
                  "new file",
                  logger);
  }
  std::shared_ptr<ProcessManifest> manifest;
  try {
    manifest = std::make_shared<ProcessManifest>(read_process_manifest(path));
  } catch (const ManifestError& e) {
    return refuse(path, e.what(), logger);
  }
  if (handshake_seconds_ > 0) {
    StepProcess process(manifest, logger);
    try {
      process.start(handshake_seconds_);
    } catch (const StepProcessError& e) {
      return refuse(path, "its command " + manifest->command.front() + " " + e.what(), logger);
    }
    process.stop(1.0);
  }
  plugin->name = manifest->name;
  plugin->version = manifest->version;
  plugin->step_names = manifest->steps;
  plugin->manifest = std::move(manifest);
  return keep(std::move(plugin), logger);
}

const StepClass* PluginRegistry::find_step(const std::string& name) const {
  auto it = steps_.find(name);
  if (it != steps_.end()) return it->second.size() == 1 ? &it->second.front() : nullptr;
  // plugin:Step (a step name may itself contain ':', so every split is tried).
  for (size_t colon = name.find(':'); colon != std::string::npos; colon = name.find(':', colon + 1)) {
    auto bare = steps_.find(name.substr(colon + 1));
    if (bare == steps_.end()) continue;
    for (const auto& step : bare->second) {
      if (step.plugin->name == std::string_view(name).substr(0, colon)) return &step;
    }
  }
  return nullptr;
}

std::vector<const LoadedPlugin*> PluginRegistry::exporters(const std::string& name) const {
  std::vector<const LoadedPlugin*> out;
  auto it = steps_.find(name);
  if (it != steps_.end()) {
    for (const auto& step : it->second) out.push_back(step.plugin);
  }
  return out;
}

}  // namespace ductwork
