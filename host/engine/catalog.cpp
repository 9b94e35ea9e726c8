#include "engine/catalog.h"

#include <algorithm>

#include "engine/compiled_definition_cache.h"
#include "store/store.h"
#include "util/suggest.h"

namespace ductwork {

DefinitionSet load_catalog(const std::string& definitions_directory, const PluginRegistry& plugins,
                           std::vector<std::string>* problems) {
  CompiledDefinitionCache cache(CompiledDefinitionCache::default_folder());
  DefinitionSet set = load_definition_directory(definitions_directory, problems, &cache);
  for (const auto& plugin : plugins.plugins()) {
    // Every error names the plugin: from_json prefixes its messages with it.
    std::string source = "plugin " + plugin->name + " (" + plugin->path + ")";
    for (const auto& text : plugin->pipelines_json) {
      try {
        std::optional<Json> doc = try_parse_json(text);
        const Json* name = doc ? doc->find("pipeline") : nullptr;
        if (!doc || !doc->is_object() || name == nullptr || !name->is_string()) {
          throw DefinitionError(source + ": an exported pipeline is not canonical JSON with a \"pipeline\" name");
        }
        set.add(Definition::from_json(*doc, name->as_string(), source), source);
      } catch (const DefinitionError& e) {
        if (!problems) throw;
        problems->push_back(e.what());
      }
    }
  }
  return set;
}

std::vector<std::string> check_steps_resolve(const DefinitionSet& definitions, const PluginRegistry& plugins,
                                             const std::vector<std::string>* only) {
  std::vector<std::string> problems;
  // What a near miss may be suggested from: every bare name, then every
  // qualified plugin:Step (so "testkit:Dubble" gets "testkit:Double").
  std::vector<std::string> exported;
  for (const auto& plugin : plugins.plugins()) {
    exported.insert(exported.end(), plugin->step_names.begin(), plugin->step_names.end());
  }
  for (const auto& plugin : plugins.plugins()) {
    for (const auto& step : plugin->step_names) exported.push_back(plugin->name + ":" + step);
  }
  std::vector<std::string> defined;
  for (const auto& [name, _] : definitions.pipelines) defined.push_back(name);
  for (const auto& [name, definition] : definitions.pipelines) {
    if (only && std::find(only->begin(), only->end(), name) == only->end()) continue;
    for (const auto& child : definition.invoked_pipelines()) {
      if (definitions.find(child)) continue;
      problems.push_back(definitions.sources.at(name) + ": pipeline " + name + ": 'invoke: " + child +
                         "' names no pipeline defined here" + did_you_mean(child, defined));
    }
    for (const auto& klass : definition.step_classes()) {
      if (plugins.find_step(klass)) continue;
      std::string where = definitions.sources.at(name) + ": pipeline " + name + ": step " + klass;
      auto exporters = plugins.exporters(klass);
      if (exporters.size() > 1) {
        std::string which, qualified;
        for (size_t i = 0; i < exporters.size(); ++i) {
          const char* sep = i == 0 ? "" : i + 1 == exporters.size() ? " and " : ", ";
          which += sep + exporters[i]->name + " (" + exporters[i]->path + ")";
          qualified += std::string(i == 0 ? "" : " or ") + exporters[i]->name + ":" + klass;
        }
        problems.push_back(where + " is ambiguous: exported by plugins " + which + "; name it " + qualified);
        continue;
      }
      problems.push_back(where + " is not exported by any loaded plugin" + did_you_mean(klass, exported));
    }
  }
  return problems;
}

std::shared_ptr<const Definition> DefinitionCache::get(const std::string& sha1, const std::string& run_id,
                                                       Store& store) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_sha1_.find(sha1);
    if (it != by_sha1_.end()) return it->second;
  }
  std::string text = store.run_definition(run_id);
  std::optional<Json> doc = try_parse_json(text);
  if (!doc) throw DefinitionError("run " + run_id + ": stored definition is not valid JSON");
  auto def = std::make_shared<const Definition>(Definition::from_json(*doc, "", "run " + run_id, /*strict=*/false));
  std::lock_guard<std::mutex> lock(mutex_);
  return by_sha1_.emplace(sha1, std::move(def)).first->second;
}

TriggerTarget find_triggerable(const DefinitionSet& definitions, const PluginRegistry& plugins,
                               const std::string& name) {
  TriggerTarget out;
  out.definition = definitions.find(name);
  if (!out.definition) {
    std::string known;
    std::vector<std::string> names;
    for (const auto& [n, _] : definitions.pipelines) {
      known += (known.empty() ? "" : ", ") + n;
      names.push_back(n);
    }
    out.unknown = true;
    out.problem = "unknown pipeline '" + name + "'" + did_you_mean(name, names) + " (defined: " +
                  (known.empty() ? "none" : known) + ")";
    return out;
  }
  std::vector<std::string> only{name};
  std::vector<std::string> missing = check_steps_resolve(definitions, plugins, &only);
  if (!missing.empty()) {
    out.problem = "cannot trigger " + name + ": ";
    for (size_t i = 0; i < missing.size(); ++i) out.problem += (i ? "; " : "") + missing[i];
    out.definition = nullptr;
  }
  return out;
}

}  // namespace ductwork
