#include "engine/definition_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ductwork {
namespace fs = std::filesystem;
namespace {

// Keywords of the full language that this version does not compile yet.
const std::set<std::string> kNotYetKeywords = {"divide", "combine", "expand", "collapse",
                                               "divert", "converge"};

class Compiler {
 public:
  explicit Compiler(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& rule) const {
    std::ostringstream msg;
    msg << source_;
    if (at.IsDefined() && at.Mark().line >= 0) msg << ":" << at.Mark().line + 1;
    if (!pipeline_.empty()) msg << ": pipeline " << pipeline_;
    msg << ": " << rule;
    throw DefinitionError(msg.str());
  }

  std::string step_name(const YAML::Node& node, const std::string& keyword) const {
    if (!node.IsScalar() || node.as<std::string>().empty()) {
      fail(node, "'" + keyword + "' takes one step name");
    }
    std::string name = node.as<std::string>();
    bool ok = std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == ':' || c == '-';
    });
    if (!ok) fail(node, "step name '" + name + "' may only contain letters, digits, '_', ':' and '-'");
    return name;
  }

  Definition compile(const YAML::Node& root) {
    if (!root.IsMap()) fail(root, "a definition file must be a map with 'pipeline' and 'steps'");
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (key == "on_halt") fail(kv.first, "'on_halt' is not supported yet");
      if (key != "pipeline" && key != "steps") {
        fail(kv.first, "unknown key '" + key + "' (expected 'pipeline' and 'steps')");
      }
    }
    if (!root["pipeline"] || !root["pipeline"].IsScalar() || root["pipeline"].as<std::string>().empty()) {
      fail(root, "'pipeline' must name the pipeline");
    }
    pipeline_ = root["pipeline"].as<std::string>();
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0) {
      fail(steps ? steps : root, "'steps' must be a non-empty list starting with '- start: StepName'");
    }

    Definition def;
    def.pipeline = pipeline_;
    std::vector<std::string> classes;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const YAML::Node entry = steps[i];
      if (!entry.IsMap() || entry.size() != 1) {
        fail(entry, "each entry of 'steps' is one 'keyword: StepName' pair");
      }
      std::string keyword = entry.begin()->first.as<std::string>();
      const YAML::Node value = entry.begin()->second;
      if (keyword == "start") {
        if (i != 0) fail(entry, "exactly one 'start', and it comes first");
      } else if (i == 0) {
        fail(entry, "the first entry must be 'start' (exactly one 'start', and it comes first)");
      } else if (keyword == "chain") {
      } else if (kNotYetKeywords.count(keyword)) {
        fail(entry, "'" + keyword + "' is not supported yet");
      } else {
        fail(entry, "unknown keyword '" + keyword + "' (expected start or chain)");
      }
      classes.push_back(step_name(value, keyword));
    }
    for (std::size_t i = 0; i < classes.size(); ++i) def.nodes.push_back(make_node_name(pipeline_, i, classes[i]));
    for (std::size_t i = 0; i < classes.size(); ++i) {
      Edge edge;
      edge.klass = classes[i];
      if (i + 1 < classes.size()) {
        edge.type = "chain";
        edge.to = {def.nodes[i + 1]};
      }
      def.edges.emplace(def.nodes[i], std::move(edge));
    }
    return def;
  }

 private:
  std::string source_;
  std::string pipeline_;
};

}  // namespace

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

Definition compile_definition_text(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw DefinitionError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML/JSON: " + e.msg);
  }
  return Compiler(source).compile(root);
}

DefinitionSet load_definition_directory(const std::string& directory) {
  DefinitionSet set;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return set;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) {
    auto ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yml" || ext == ".yaml" || ext == ".json")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) throw DefinitionError(file.string() + ": cannot read the definition file");
    std::stringstream text;
    text << in.rdbuf();
    set.add(compile_definition_text(text.str(), file.string()), file.string());
  }
  return set;
}

}  // namespace ductwork
