#pragma once

// Typed values out of a ductwork.yml, with errors that name the file, the
// line and the key ("ductwork.yml:7: job_worker.count: expected an integer
// >= 1, got \"two\""): the readers config.cpp's section parsers are built
// on. Not for use outside host/config.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "util/suggest.h"
#include "util/text.h"

namespace ductwork::config_internal {

// Longer than any sane timeout, short enough that every duration converts to
// std::chrono nanoseconds without overflow.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

// How a value reads in "expected X, got Y": numbers as written, other
// scalars quoted, collections by kind.
inline std::string describe_value(const std::string& text) {
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  bool number = !text.empty() && end == text.c_str() + text.size();
  std::string shown = shortened(text, 60);
  return number ? shown : "\"" + shown + "\"";
}

inline std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return node.size() == 0 ? "an empty map" : "a map";
  if (node.IsSequence()) return node.size() == 0 ? "an empty list" : "a list";
  return describe_value(node.Scalar());
}

inline std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// "debug, info" from a list, for "expected one of: ...".
inline std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

class YamlReader {
 public:
  // `section_line`: for a file of environment sections, the line of the
  // chosen section, named by errors about the section as a whole.
  YamlReader(std::string source, std::string base_dir, int section_line = 0)
      : source_(std::move(source)), base_dir_(std::move(base_dir)), section_line_(section_line) {}

 protected:
  std::string where(const YAML::Node& node) const {
    if (node.IsDefined() && node.Mark().line >= 0) return source_ + ":" + std::to_string(node.Mark().line + 1);
    // A section whose merge keys were resolved is a new map, with no line.
    if (section_line_ > 0) return source_ + ":" + std::to_string(section_line_);
    return source_;
  }

  // A key only the Ruby gem reads: accepted, ignored, and said so.
  void ruby_only(const YAML::Node& at, const std::string& key, const std::string& why, Config* config) const {
    config->warnings.push_back(where(at) + ": " + key + ": a setting of the Ruby gem, ignored: it " + why);
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what, const YAML::Node& node) const {
    throw ConfigError(where(node) + ": " + key + ": " + what);
  }

  // "<file>:<line>: <key>: expected <shape>, got <value>[, did you mean 'x'?]"
  [[noreturn]] void expected(const std::string& key, const std::string& shape, const YAML::Node& node,
                             const std::vector<std::string>& suggestions = {}) const {
    std::string hint = node.IsScalar() ? did_you_mean(node.Scalar(), suggestions) : "";
    fail(key, "expected " + shape + ", got " + describe(node) + hint, node);
  }

  static bool is_one_of(const std::string& value, const std::vector<std::string>& allowed) {
    for (const auto& a : allowed) {
      if (a == value) return true;
    }
    return false;
  }

  std::string resolve(const std::string& value) const {
    std::filesystem::path p(value);
    if (p.is_relative()) p = std::filesystem::path(base_dir_.empty() ? "." : base_dir_) / p;
    return p.lexically_normal().string();
  }

  // A map key as a name; a list or map used as a key is an error.
  std::string key_name(const YAML::Node& key_node, const std::string& parent) const {
    if (!key_node.IsScalar()) {
      fail(parent.empty() ? "(top level)" : parent, "expected names as keys, got " + describe(key_node), key_node);
    }
    return key_node.Scalar();
  }

  // The entries of a map, in order, after checking every key is a name given
  // once (YAML parsers silently keep one of two equal keys; a second
  // `job_worker:` section is a mistake worth naming).
  std::vector<std::pair<YAML::Node, YAML::Node>> entries(const YAML::Node& node, const std::string& key,
                                                         const std::string& shape) const {
    if (!node.IsMap()) expected(key.empty() ? "(top level)" : key, shape, node);
    std::vector<std::pair<YAML::Node, YAML::Node>> out;
    std::map<std::string, int> seen;
    for (const auto& kv : node) {
      std::string name = key_name(kv.first, key);
      std::string full = key.empty() ? name : key + "." + name;
      int line = kv.first.Mark().line + 1;
      if (auto it = seen.find(name); it != seen.end()) {
        fail(full, "given twice (first on line " + std::to_string(it->second) + ")", kv.first);
      }
      seen.emplace(name, line);
      out.emplace_back(kv.first, kv.second);
    }
    return out;
  }

  // `tolerated`: keys let through unlisted (the Ruby gem's own, which the
  // caller warns about).
  void only_keys(const YAML::Node& node, const std::string& key, const std::vector<std::string>& allowed,
                 const std::vector<std::string>& tolerated = {}) const {
    std::vector<std::string> sorted = allowed;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [k, v] : entries(node, key, "a map with the keys " + joined(sorted))) {
      std::string name = k.Scalar();
      if (!is_one_of(name, allowed) && !is_one_of(name, tolerated)) {
        std::string match = closest_match(name, allowed);
        std::string hint = match.empty() ? "" : ", did you mean '" + (key.empty() ? match : key + "." + match) + "'?";
        fail(key.empty() ? name : key + "." + name, "unknown key" + hint + " (expected one of: " + joined(sorted) + ")",
             k);
      }
    }
  }

  std::string string(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) expected(key, "a string", node);
    return node.Scalar();
  }

  std::string path(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar() || node.Scalar().empty()) expected(key, "a non-empty path", node);
    return resolve(node.Scalar());
  }

  long long integer(const YAML::Node& node, const std::string& key, long long min, long long max = INT_MAX) const {
    std::string shape = max == INT_MAX ? "an integer >= " + std::to_string(min)
                                       : "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (!node.IsScalar()) expected(key, shape, node);
    const std::string& text = node.Scalar();
    long long value = 0;
    try {
      std::size_t used = 0;
      value = std::stoll(text, &used);
      if (used != text.size()) expected(key, shape, node);
    } catch (const std::logic_error&) {
      expected(key, shape, node);
    }
    if (value < min || value > max) expected(key, shape, node);
    return value;
  }

  // Durations are seconds and accept fractions ("0.05").
  // A duration from `min` (0 unless a smaller value would spin a loop or
  // restart processes in a tight cycle) to a year.
  double seconds(const YAML::Node& node, const std::string& key, double min = 0) const {
    const std::string shape =
        "a duration in seconds (a number from " + number_text(min) + " to 31536000, fractions allowed)";
    if (!node.IsScalar()) expected(key, shape, node);
    const std::string& text = node.Scalar();
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < min ||
        value > kMaxSeconds) {
      expected(key, shape, node);
    }
    return value;
  }

  void remember(Config* config, const YAML::Node& at, const std::string& key, const std::string& pipeline,
                const std::string& step = std::string()) const {
    config->scoped_names.push_back(ScopedName{where(at), at.Mark().line + 1, key, pipeline, step});
  }

  // Scoped integer: a number, or {default: n, Pipeline: n | {default: n, Step: n}}.
  // A Scoped value: `key: V`, `{default: V, Pipeline: V}`, and with
  // `per_step` also `{Pipeline: {default: V, StepClass: V}}`. `read` parses
  // one V at its key; `value` describes V in messages.
  template <class T, class Read>
  void scoped(const YAML::Node& node, const std::string& key, const std::string& value, bool per_step,
              Scoped<T>* out, Config* config, Read read) const {
    if (node.IsScalar()) {
      out->set_default(read(node, key));
      return;
    }
    std::string shape = per_step ? value + ", or a map of default/pipeline name to one or to a map of "
                                           "default/step class name to one"
                                 : value + ", or a map of default/pipeline name to one";
    auto pipelines = entries(node, key, shape);
    for (const auto& [k, v] : pipelines) {
      if (k.Scalar() == "default") out->set_default(read(v, key + ".default"));
    }
    for (const auto& [k, v] : pipelines) {
      const std::string& pipeline = k.Scalar();
      if (pipeline == "default") continue;
      std::string sub = key + "." + pipeline;
      remember(config, k, key, pipeline);
      if (v.IsScalar()) {
        out->set_pipeline(pipeline, read(v, sub));
      } else if (per_step && v.IsMap()) {
        auto steps = entries(v, sub, shape);
        out->set_pipeline(pipeline, out->default_value());
        for (const auto& [sk, sv] : steps) {
          if (sk.Scalar() == "default") out->set_pipeline(pipeline, read(sv, sub + ".default"));
        }
        for (const auto& [sk, sv] : steps) {
          const std::string& step = sk.Scalar();
          if (step == "default") continue;
          remember(config, sk, key, pipeline, step);
          out->set_step(pipeline, step, read(sv, sub + "." + step));
        }
      } else {
        expected(sub, per_step ? value + " or a map of default/step class name to one" : value, v);
      }
    }
  }

  void scoped_int(const YAML::Node& node, const std::string& key, long long min, long long max, bool per_step,
                  Scoped<int>* out, Config* config) const {
    std::string value = max == INT_MAX ? "an integer >= " + std::to_string(min)
                                       : "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    scoped(node, key, value, per_step, out, config,
           [&](const YAML::Node& n, const std::string& k) { return static_cast<int>(integer(n, k, min, max)); });
  }

  void scoped_seconds(const YAML::Node& node, const std::string& key, double min, Scoped<double>* out,
                      Config* config, bool per_step = false) const {
    scoped(node, key, "a duration in seconds", per_step, out, config,
           [&](const YAML::Node& n, const std::string& k) { return seconds(n, k, min); });
  }

 protected:
  std::string source_;
  std::string base_dir_;
  int section_line_;
};

}  // namespace ductwork::config_internal
