#include "plugin/process_manifest.h"

#include <ductwork/pipeline.hpp>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "util/suggest.h"

namespace ductwork {
namespace fs = std::filesystem;

namespace {

constexpr const char* kSuffix = ".steps.yml";

std::string at_line(const YAML::Node& node) {
  return node.Mark().line >= 0 ? "line " + std::to_string(node.Mark().line + 1) + ": " : std::string();
}

[[noreturn]] void fail(const YAML::Node& node, const std::string& what) { throw ManifestError(at_line(node) + what); }

std::string kind_of(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return node.size() == 0 ? "an empty map" : "a map";
  if (node.IsSequence()) return node.size() == 0 ? "an empty list" : "a list";
  return "\"" + node.Scalar() + "\"";
}

std::vector<std::string> strings(const YAML::Node& node, const std::string& key) {
  if (!node.IsSequence() || node.size() == 0) fail(node, key + ": expected a non-empty list of strings, got " + kind_of(node));
  std::vector<std::string> out;
  for (const auto& item : node) {
    if (!item.IsScalar()) fail(item, key + ": expected a string, got " + kind_of(item));
    out.push_back(item.Scalar());
  }
  return out;
}

// The executable `word` names: with a '/', against `directory`; bare,
// the first match on PATH. Empty when there is none.
std::string resolve_executable(const std::string& word, const std::string& directory) {
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (word.find('/') != std::string::npos) {
    fs::path p = fs::path(word).is_absolute() ? fs::path(word) : fs::path(directory) / word;
    return runnable(p) ? p.lexically_normal().string() : std::string();
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(at, end - at);
    if (!dir.empty() && runnable(fs::path(dir) / word)) return (fs::path(dir) / word).string();
    at = end + 1;
  }
  return std::string();
}

}  // namespace

bool is_process_manifest(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string suffix = kSuffix;
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ProcessManifest read_process_manifest(const std::string& path) {
  ProcessManifest out;
  out.path = path;
  const std::string file = fs::path(path).filename().string();
  out.name = file.substr(0, file.size() - std::string(kSuffix).size());
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ManifestError("cannot be read");
  } catch (const YAML::Exception& e) {
    throw ManifestError("line " + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw ManifestError("expected a map with command: and steps:, got " + kind_of(root));
  static const std::vector<std::string> kKeys = {"name", "version", "command", "directory", "environment", "steps"};
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      fail(entry.first, "unknown key '" + key + "'" + did_you_mean(key, kKeys) + " (known: name, version, command, "
                        "directory, environment, steps)");
    }
  }
  try {
    if (root["name"]) {
      if (!root["name"].IsScalar()) fail(root["name"], "name: expected a string, got " + kind_of(root["name"]));
      out.name = root["name"].Scalar();
    }
    detail::check_name("plugin", out.name);
    if (root["version"]) {
      if (!root["version"].IsScalar()) fail(root["version"], "version: expected a string, got " + kind_of(root["version"]));
      out.version = root["version"].Scalar();
    }
    if (!root["command"]) throw ManifestError("command: missing (the program that serves the steps, as a list: "
                                              "[\"python3\", \"-u\", \"steps.py\"])");
    out.command = strings(root["command"], "command");
    const fs::path folder = fs::absolute(fs::path(path)).parent_path();
    out.directory = folder.string();
    if (root["directory"]) {
      const YAML::Node dir = root["directory"];
      if (!dir.IsScalar() || dir.Scalar().empty()) fail(dir, "directory: expected a folder, got " + kind_of(dir));
      out.directory = (fs::path(dir.Scalar()).is_absolute() ? fs::path(dir.Scalar()) : folder / dir.Scalar())
                          .lexically_normal()
                          .string();
      std::error_code ec;
      if (!fs::is_directory(out.directory, ec)) fail(dir, "directory: " + out.directory + " is not a folder");
    }
    if (root["environment"]) {
      const YAML::Node env = root["environment"];
      if (!env.IsMap()) fail(env, "environment: expected a map of NAME: value, got " + kind_of(env));
      for (const auto& entry : env) {
        const std::string name = entry.first.Scalar();
        if (name.empty() || name.find('=') != std::string::npos) fail(entry.first, "environment: '" + name + "' is not a variable name");
        if (!entry.second.IsScalar()) fail(entry.second, "environment: " + name + ": expected a string, got " + kind_of(entry.second));
        out.environment.emplace_back(name, entry.second.Scalar());
      }
    }
    if (!root["steps"]) throw ManifestError("steps: missing (the step classes the command serves: [Resize, Thumbnail])");
    std::set<std::string> seen;
    for (const std::string& step : strings(root["steps"], "steps")) {
      detail::check_step_name(step);
      if (!seen.insert(step).second) fail(root["steps"], "steps: " + step + " is listed twice");
      out.steps.push_back(step);
    }
    out.executable = resolve_executable(out.command.front(), out.directory);
    if (out.executable.empty()) {
      fail(root["command"], "command: " + out.command.front() +
                                (out.command.front().find('/') != std::string::npos
                                     ? " is not an executable file (looked in " + out.directory + ")"
                                     : " is not an executable on PATH"));
    }
  } catch (const PipelineError& e) {
    throw ManifestError(e.what());
  }
  return out;
}

}  // namespace ductwork
