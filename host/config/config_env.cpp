#include "config/config.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "config/config_internal.h"
#include "util/bounded_read.h"
#include "util/suggest.h"

extern char** environ;

// Where the configuration comes from: which file (load_config), which part
// of it (a file of Rails-style environment sections, as the Ruby gem
// Ductwork writes them, is read at the section the environment chooses;
// YAML merge keys are resolved), and the environment variables that
// override it (apply_environment).
namespace ductwork::config_internal {

const char* const kEnvironmentVariables[3] = {"DUCTWORK_ENV", "RAILS_ENV", "RACK_ENV"};
const char* const kDefaultEnvironment = "development";

namespace {

std::string where(const std::string& source, const YAML::Node& node) {
  if (node.IsDefined() && node.Mark().line >= 0) return source + ":" + std::to_string(node.Mark().line + 1);
  return source;
}

std::string kind(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return "\"" + node.Scalar() + "\"";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// An unquoted `<<` (or one tagged !!merge); a quoted "<<" is an ordinary key.
bool is_merge_key(const YAML::Node& key) {
  return key.IsScalar() && key.Scalar() == "<<" && (key.Tag() == "?" || key.Tag() == "tag:yaml.org,2002:merge");
}

class MergeResolver {
 public:
  explicit MergeResolver(std::string source) : source_(std::move(source)) {}

  YAML::Node resolve(const YAML::Node& node) {
    if (!node.IsMap()) return node;  // no configuration key holds maps inside lists
    // An alias is the very node it names, so its position identifies it:
    // each map is resolved once, however often it is merged or aliased (no
    // exponential work on nested aliases), and an alias of a map inside
    // itself is left as written instead of recursing forever.
    const int pos = node.Mark().pos;
    if (pos >= 0) {
      if (auto it = done_.find(pos); it != done_.end()) return it->second;
      if (!busy_.insert(pos).second) return node;
    }
    YAML::Node out(YAML::NodeType::Map);
    bool changed = false;
    std::vector<YAML::Node> merged;
    std::set<std::string> own;
    for (const auto& kv : node) {
      if (is_merge_key(kv.first)) {
        changed = true;
        collect(kv.first, kv.second, &merged);
        continue;
      }
      YAML::Node value = resolve(kv.second);
      changed = changed || !value.is(kv.second);
      out.force_insert(kv.first, value);
      if (kv.first.IsScalar()) own.insert(kv.first.Scalar());
    }
    for (const YAML::Node& source : merged) {
      for (const auto& kv : source) {
        if (is_merge_key(kv.first) || !kv.first.IsScalar()) continue;
        if (own.insert(kv.first.Scalar()).second) out.force_insert(kv.first, kv.second);
      }
    }
    YAML::Node result = changed ? out : node;
    if (pos >= 0) {
      busy_.erase(pos);
      done_.emplace(pos, result);
    }
    return result;
  }

 private:
  void collect(const YAML::Node& key, const YAML::Node& value, std::vector<YAML::Node>* merged) {
    const std::string shape = "expected a map to merge (an alias such as *default) or a list of them, got ";
    if (value.IsMap()) {
      merged->push_back(resolve(value));
    } else if (value.IsSequence() && value.size() > 0) {
      for (const auto& item : value) {
        if (!item.IsMap()) throw ConfigError(where(source_, item) + ": <<: " + shape + "a list holding " + kind(item));
        merged->push_back(resolve(item));
      }
    } else {
      throw ConfigError(where(source_, key) + ": <<: " + shape + (value.IsSequence() ? "an empty list" : kind(value)));
    }
  }

  std::string source_;
  std::map<int, YAML::Node> done_;
  std::set<int> busy_;
};

bool is_one_of(const std::string& name, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n == name) return true;
  }
  return false;
}

// Every top-level key a name that is not a configuration key, every value
// a map or empty: the Ruby gem's `default:` / `production:` ... layout.
bool is_sectioned(const YAML::Node& root, const std::vector<std::string>& config_keys) {
  if (!root.IsMap() || root.size() == 0) return false;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar() || is_merge_key(kv.first) || is_one_of(kv.first.Scalar(), config_keys)) return false;
    if (!kv.second.IsMap() && !kv.second.IsNull()) return false;
  }
  return true;
}

}  // namespace

YAML::Node resolve_merge_keys(const YAML::Node& node, const std::string& source) {
  return MergeResolver(source).resolve(node);
}

Document choose_document(const YAML::Node& file_root, const std::string& source, const Environment& env,
                         const std::vector<std::string>& config_keys) {
  Document doc;
  if (!is_sectioned(file_root, config_keys)) {
    doc.root = resolve_merge_keys(file_root, source);
    return doc;
  }
  std::string variable;
  std::string name = kDefaultEnvironment;
  for (const char* v : kEnvironmentVariables) {
    auto it = env.find(v);
    if (it != env.end() && !it->second.empty()) {
      variable = v;
      name = it->second;
      break;
    }
  }
  // doc.root is assigned at most once: assigning a YAML::Node again would
  // overwrite the node it already names (a second section of the same name
  // is an error before that).
  std::vector<std::string> sections;
  int line = 0;
  for (const auto& kv : file_root) {
    const std::string& section_name = kv.first.Scalar();
    if (section_name == name) {
      if (line > 0) {
        throw ConfigError(where(source, kv.first) + ": " + name + ": environment section given twice (first on line " +
                          std::to_string(line) + ")");
      }
      line = kv.first.Mark().line + 1;
      doc.root = resolve_merge_keys(kv.second, source);
    }
    if (!is_one_of(section_name, sections)) sections.push_back(section_name);
  }
  if (line == 0) {
    std::string chosen_by = variable.empty() ? "the default: DUCTWORK_ENV, RAILS_ENV and RACK_ENV are unset"
                                             : "from " + variable;
    throw ConfigError(source + ": environment section \"" + name + "\" (" + chosen_by + ") not found" +
                      did_you_mean(name, sections) + "; the file's sections: " + joined(sections) +
                      " (set DUCTWORK_ENV to one of them; a file whose top-level keys are maps and none a "
                      "configuration key is read as environment sections)");
  }
  doc.environment = name;
  doc.section_line = line;
  return doc;
}

}  // namespace ductwork::config_internal

namespace ductwork {
namespace fs = std::filesystem;
using config_internal::kLogLevelShape;
using config_internal::kRoles;
namespace {

const std::string* variable(const Environment& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

// The key each variable overrides, so an error names both.
const std::map<std::string, std::string> kVariableKeys = {
    {"DUCTWORK_ROLE", "role"},
    {"DUCTWORK_DATABASE_URL", "database"},
    {"DUCTWORK_PLUGINS_DIRECTORY", "plugins.directory"},
    {"DUCTWORK_DEFINITIONS_DIRECTORY", "definitions.directory"},
    {"DUCTWORK_PIPELINES", "pipelines"},
    {"DUCTWORK_FORKING", "forking"},
    {"DUCTWORK_LOG_LEVEL", "logger.level"},
    {"DUCTWORK_LOG_FORMAT", "logger.format"},
};

// "DUCTWORK_LOG_LEVEL (logger.level)"
std::string variable_label(const std::string& name) {
  auto it = kVariableKeys.find(name);
  return it == kVariableKeys.end() ? name : name + " (" + it->second + ")";
}

[[noreturn]] void bad_variable(const std::string& name, const std::string& shape, const std::string& value,
                               const std::vector<std::string>& suggestions = {}) {
  throw ConfigError(variable_label(name) + ": expected " + shape + ", got \"" + value + "\"" +
                    did_you_mean(value, suggestions));
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// DUCTWORK_DATABASE_URL: a path, sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH.
std::string database_path_from_url(const std::string& url) {
  const char* name = "DUCTWORK_DATABASE_URL";
  const std::string shape = "a SQLite file: a path, sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH";
  std::string scheme;
  if (size_t colon = url.find(':'); colon != std::string::npos && colon > 0) {
    scheme = url.substr(0, colon);
    bool is_scheme = std::isalpha(static_cast<unsigned char>(scheme[0])) &&
                     scheme.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
                         std::string::npos;
    // "data:1.db" is a file name; "postgresql:..." and "x://..." are URLs.
    if (!is_scheme || (url.compare(colon, 3, "://") != 0 && scheme != "sqlite" && scheme != "postgresql" &&
                       scheme != "postgres")) {
      scheme.clear();
    }
  }
  if (scheme.empty()) return url;
  if (scheme != "sqlite") {
    throw ConfigError(variable_label(name) + ": adapter " + scheme + " is not supported by this build (sqlite: " +
                      "a path, sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH; postgresql: " +
                      "postgresql://USER:PASSWORD@HOST:PORT/DATABASE)");
  }
  std::string rest = url.substr(std::string("sqlite:").size());
  if (starts_with(rest, "//")) {
    rest = rest.substr(2);  // sqlite:///abs -> /abs; sqlite://host/x has a host, which a file has not
    if (rest.size() < 2 || rest[0] != '/') bad_variable(name, shape, url);
  }
  if (rest.empty()) bad_variable(name, shape, url);
  return rest;
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r\n\f\v") == std::string::npos; }

std::vector<std::string> split_pipelines(const std::string& value) {
  const std::string shape = "a comma-separated list of pipeline names, or * for every loaded pipeline";
  std::vector<std::string> names;
  std::stringstream in(value);
  for (std::string item; std::getline(in, item, ',');) {
    size_t first = item.find_first_not_of(" \t");
    size_t last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.empty()) bad_variable("DUCTWORK_PIPELINES", shape + " (an empty name)", value);
    for (const auto& n : names) {
      if (n == item) bad_variable("DUCTWORK_PIPELINES", shape + " ('" + item + "' is listed twice)", value);
    }
    names.push_back(item);
  }
  if (!value.empty() && value.back() == ',') bad_variable("DUCTWORK_PIPELINES", shape + " (an empty name)", value);
  if (names.size() > 1) {
    for (const auto& n : names) {
      if (n == "*") bad_variable("DUCTWORK_PIPELINES", shape + " (* cannot be listed with names)", value);
    }
  }
  return names;
}

}  // namespace

namespace config_internal {

std::string database_path_problem(const std::string& raw) {
  if (blank(raw)) return "expected the path of a SQLite database file, not a blank name";
  if (raw == ":memory:" || raw.rfind("file::memory:", 0) == 0) {
    return "expected the path of a SQLite database file: \":memory:\" is SQLite's in-memory database, which "
           "ductwork cannot use (every process would have its own, gone when it exits)";
  }
  return "";
}

}  // namespace config_internal

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (starts_with(name, "DUCTWORK_") || name == "RAILS_ENV" || name == "RACK_ENV") {
      env.emplace(name, entry.substr(eq + 1));
    }
  }
  return env;
}

void apply_environment(const Environment& env, Config* config) {
  static const std::vector<std::string> kKnown = {
      "DUCTWORK_CONFIG",      "DUCTWORK_ROLE",   "DUCTWORK_DATABASE_URL", "DUCTWORK_PLUGINS_DIRECTORY",
      "DUCTWORK_DEFINITIONS_DIRECTORY", "DUCTWORK_PIPELINES", "DUCTWORK_FORKING", "DUCTWORK_LOG_LEVEL",
      "DUCTWORK_LOG_FORMAT", "DUCTWORK_MACHINE_ID", "DUCTWORK_HTTP_LISTEN", "DUCTWORK_HTTP_TOKEN",
      // chooses the section of a file of environment sections (parse_config)
      "DUCTWORK_ENV",
      // fault injection for durability tests (util/fault.h)
      "DUCTWORK_FAULT", "DUCTWORK_FAULT_MARKER", "DUCTWORK_FAULT_SLEEP"};
  auto absolute = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };

  if (const std::string* v = variable(env, "DUCTWORK_ROLE")) {
    bool known = false;
    for (const auto& r : kRoles) known = known || r == *v;
    if (!known) bad_variable("DUCTWORK_ROLE", "one of: all, advancer, worker", *v, kRoles);
    config->role = *v;
  }
  if (const std::string* v = variable(env, "DUCTWORK_DATABASE_URL")) {
    if (starts_with(*v, "postgresql:") || starts_with(*v, "postgres:")) {
      config->database.adapter = "postgresql";
      config->database.url = *v;
    } else {
      const std::string file = database_path_from_url(*v);
      if (std::string problem = config_internal::database_path_problem(file); !problem.empty()) {
        throw ConfigError(variable_label("DUCTWORK_DATABASE_URL") + ": " + problem + ", got \"" + *v + "\"");
      }
      config->database.adapter = "sqlite";
      config->database.url.clear();
      config->database.path = absolute(file);
    }
  }
  if (config->database.adapter == "postgresql" && blank(config->database.url)) {
    throw ConfigError("database.url: required with database.adapter postgresql (or set DUCTWORK_DATABASE_URL to "
                      "postgresql://USER:PASSWORD@HOST:PORT/DATABASE)");
  }
  if (const std::string* v = variable(env, "DUCTWORK_PLUGINS_DIRECTORY")) config->plugins_directory = absolute(*v);
  if (const std::string* v = variable(env, "DUCTWORK_DEFINITIONS_DIRECTORY")) {
    config->definitions_directory = absolute(*v);
  }
  if (const std::string* v = variable(env, "DUCTWORK_PIPELINES")) {
    std::vector<std::string> names = split_pipelines(*v);
    config->all_pipelines = names.size() == 1 && names[0] == "*";
    config->pipelines = config->all_pipelines ? std::vector<std::string>{} : names;
    config->pipelines_origin = "DUCTWORK_PIPELINES";
  }
  if (const std::string* v = variable(env, "DUCTWORK_FORKING"); v && !parse_forking(*v, &config->forking)) {
    bad_variable("DUCTWORK_FORKING", "fork or none", *v, {"fork", "none"});
  }
  if (const std::string* v = variable(env, "DUCTWORK_LOG_LEVEL"); v && !parse_config_log_level(*v, &config->log_level)) {
    bad_variable("DUCTWORK_LOG_LEVEL", kLogLevelShape, *v, {"debug", "info", "warn", "error"});
  }
  if (const std::string* v = variable(env, "DUCTWORK_LOG_FORMAT"); v && !parse_log_format(*v, &config->log_format)) {
    bad_variable("DUCTWORK_LOG_FORMAT", "one of: json, text", *v, {"json", "text"});
  }
  config_internal::apply_http_environment(env, config);
  for (const auto& [name, _] : env) {
    bool known = false;
    for (const auto& k : kKnown) known = known || k == name;
    if (!known && starts_with(name, "DUCTWORK_")) {
      config->warnings.push_back("unknown environment variable " + name + " ignored" + did_you_mean(name, kKnown));
    }
  }
}

Config load_config(const std::string& explicit_path) { return load_config(explicit_path, process_environment()); }

Config load_config(const std::string& explicit_path, const Environment& env) {
  std::string path = explicit_path;
  if (path.empty()) {
    if (const std::string* v = variable(env, "DUCTWORK_CONFIG")) path = *v;
  }
  Config config;
  if (path.empty() && !fs::exists("ductwork.yml")) {
    // No file: everything default, every loaded pipeline, paths from the
    // current directory.
    config.database.path = fs::absolute("ductwork.sqlite3").string();
    config.plugins_directory = fs::absolute("plugins").string();
    config.definitions_directory = fs::absolute("pipelines").string();
    config.pipelines_origin = "pipelines";
  } else {
    if (path.empty()) path = "ductwork.yml";
    BoundedFile file = read_bounded_file(path, kMaxConfigFileBytes);
    if (file.error != 0) {
      throw ConfigError(path + ": cannot read the configuration file (" + std::strerror(file.error) + ")");
    }
    if (file.too_large) {
      throw ConfigError(path + ": cannot read the configuration file: it is more than " +
                        std::to_string(kMaxConfigFileBytes) + " bytes (reading stopped there)");
    }
    std::string base = fs::absolute(path).parent_path().string();
    // DUCTWORK_PIPELINES stands in for a file's missing `pipelines`.
    config = config_internal::parse_document(file.text, path, base, variable(env, "DUCTWORK_PIPELINES") == nullptr, env);
  }
  apply_environment(env, &config);
  return config;
}

}  // namespace ductwork
