#include "engine/definition_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "engine/compiled_definition_cache.h"
#include "engine/definition_compiler.h"
#include "util/bounded_read.h"
#include "util/json_limits.h"

namespace ductwork {
namespace fs = std::filesystem;

const Definition* DefinitionSet::find(const std::string& name) const {
  auto it = pipelines.find(name);
  return it == pipelines.end() ? nullptr : &it->second;
}

void DefinitionSet::add(Definition definition, const std::string& source) {
  auto it = sources.find(definition.pipeline);
  if (it != sources.end()) {
    throw DefinitionError(source + ": pipeline " + definition.pipeline + " is already defined in " + it->second +
                          " (a pipeline name is defined once)");
  }
  sources.emplace(definition.pipeline, source);
  std::string name = definition.pipeline;
  pipelines.emplace(name, std::move(definition));
}

namespace {

// Every command loads every definition file, so one file must never cost
// much: a 2 KB YAML alias bomb took `validate` 38 s and 2.5 GB, and a 5 MB
// file 8.6 s. A real definition is a few hundred nodes.
constexpr size_t kMaxDefinitionBytes = 1 << 20;
constexpr int kMaxDefinitionDepth = 128;
constexpr size_t kMaxDefinitionNodes = 100000;

// Counts the nodes of `node` as the compiler will walk them, an alias once
// per use, giving up past the budget; false when the budget or the depth is
// exceeded. Aliases are shared nodes in yaml-cpp, so the walk costs at most
// the budget however large the expansion would be.
bool within_budget(const YAML::Node& node, int depth, size_t* nodes) {
  if (++*nodes > kMaxDefinitionNodes || depth > kMaxDefinitionDepth) return false;
  if (node.IsSequence()) {
    for (const auto& child : node) {
      if (!within_budget(child, depth + 1, nodes)) return false;
    }
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      if (!within_budget(kv.first, depth + 1, nodes) || !within_budget(kv.second, depth + 1, nodes)) return false;
    }
  }
  return true;
}

// The definition of a file's text: from the cache when an entry for this
// text is there and reads back, else compiled (and then cached).
Definition compile_cached(const std::string& text, const std::string& source, const CompiledDefinitionCache* cache) {
  if (cache == nullptr) return compile_definition_text(text, source);
  std::string key = cache->key(text);
  if (auto stored = cache->get(key)) {
    std::optional<Json> doc = try_parse_json(*stored);
    const Json* name = doc ? doc->find("pipeline") : nullptr;
    const Json* stored_definition = doc ? doc->find("definition") : nullptr;
    if (name != nullptr && name->is_string() && stored_definition != nullptr) {
      try {
        return Definition::from_json(*stored_definition, name->as_string(), source);
      } catch (const std::exception&) {
        // A damaged entry: compile again and overwrite it.
      }
    }
  }
  Definition definition = compile_definition_text(text, source);
  cache->put(key, Json::object({{"pipeline", definition.pipeline}, {"definition", definition.to_json()}}).dump());
  return definition;
}

}  // namespace

Definition compile_definition_text(const std::string& text, const std::string& source) {
  if (text.size() > kMaxDefinitionBytes) {
    throw DefinitionError(source + ": the file is " + std::to_string(text.size()) +
                          " bytes; a definition file may be at most " + std::to_string(kMaxDefinitionBytes) + " bytes");
  }
  // Flow collections nest by recursion in the YAML parser: bound them
  // before it runs.
  if (json_nesting_depth(text, kMaxDefinitionDepth) > kMaxDefinitionDepth) {
    throw DefinitionError(source + ": brackets nest deeper than " + std::to_string(kMaxDefinitionDepth) + " levels");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw DefinitionError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML/JSON: " + e.msg);
  }
  size_t nodes = 0;
  if (!within_budget(root, 0, &nodes)) {
    throw DefinitionError(source + ": the definition expands to more than " + std::to_string(kMaxDefinitionNodes) +
                          " YAML nodes or nests deeper than " + std::to_string(kMaxDefinitionDepth) +
                          " levels (YAML aliases repeat what they name; write the steps out)");
  }
  try {
    return compile_definition_yaml(root, source);
  } catch (const JsonError& e) {
    // Text the definition's JSON cannot hold; every rule should have caught
    // it first, but never let it escape as something other than this file's
    // error.
    throw DefinitionError(source + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw DefinitionError(source + ":" + std::to_string(e.mark.line + 1) + ": not a definition: " + e.msg);
  }
}

DefinitionSet load_definition_directory(const std::string& directory, std::vector<std::string>* problems,
                                        const CompiledDefinitionCache* cache) {
  DefinitionSet set;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    // Missing is fine (no definitions); unreadable (a symlink loop, no
    // permission) is a mistake to name, not a filesystem exception.
    if (ec && ec != std::errc::no_such_file_or_directory) {
      throw DefinitionError(directory + ": cannot read the definitions folder: " + ec.message());
    }
    return set;
  }
  std::vector<fs::path> files;
  std::vector<std::pair<fs::path, std::string>> unreadable;
  fs::directory_iterator it(directory, ec);
  if (ec) throw DefinitionError(directory + ": cannot read the definitions folder: " + ec.message());
  for (const auto& entry : it) {
    auto ext = entry.path().extension().string();
    if (ext != ".yml" && ext != ".yaml" && ext != ".json") continue;
    // Hidden files are an editor's lock or swap files (`.#echo.yml`), never
    // definitions: one broke every command that reads the folder.
    if (entry.path().filename().string().front() == '.') continue;
    std::error_code file_ec;
    bool regular = entry.is_regular_file(file_ec);
    if (file_ec) {
      unreadable.emplace_back(entry.path(), file_ec.message());  // e.g. a symlink loop
    } else if (regular) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::sort(unreadable.begin(), unreadable.end());
  for (const auto& [file, why] : unreadable) {
    DefinitionError error(file.string() + ": cannot read the definition file: " + why);
    if (!problems) throw error;
    problems->push_back(error.what());
  }
  for (const auto& file : files) {
    try {
      // Read no further than the limit: a 50 MB file used to be read
      // whole before its size was refused.
      BoundedFile read = read_bounded_file(file.string(), kMaxDefinitionBytes);
      if (read.error != 0) {
        throw DefinitionError(file.string() + ": cannot read the definition file: " + std::strerror(read.error));
      }
      if (read.too_large) {
        throw DefinitionError(file.string() + ": the file is more than " + std::to_string(kMaxDefinitionBytes) +
                              " bytes; a definition file may be at most " + std::to_string(kMaxDefinitionBytes) +
                              " bytes");
      }
      set.add(compile_cached(read.text, file.string(), cache), file.string());
    } catch (const DefinitionError& e) {
      if (!problems) throw;
      problems->push_back(e.what());
    }
  }
  return set;
}

}  // namespace ductwork
