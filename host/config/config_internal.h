#pragma once

// What the configuration's two source files share: config.cpp (the parser)
// and config_env.cpp (which file; the layout of a ductwork.yml written for
// the Ruby gem Ductwork, i.e. Rails-style environment sections and YAML
// merge keys; the environment variables). Not for use outside host/config;
// docs/configuration.md describes the rules.

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/config.h"

namespace ductwork::config_internal {

// The values of `role` / DUCTWORK_ROLE.
extern const std::vector<std::string> kRoles;
// What logger.level / DUCTWORK_LOG_LEVEL expect, for errors.
extern const char* const kLogLevelShape;

// Parses a whole file (`yaml_text`, named `source` in errors): the section
// `env` chooses, if it is made of environment sections (choose_document).
// `pipelines_required` is false when DUCTWORK_PIPELINES stands in for it.
Config parse_document(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                      bool pipelines_required, const Environment& env);

// --- config_env.cpp: environment sections and merge keys -------------------

// The variables that choose the section, in order of precedence; the first
// one set and non-empty wins, else kDefaultEnvironment.
extern const char* const kEnvironmentVariables[3];  // DUCTWORK_ENV, RAILS_ENV, RACK_ENV
extern const char* const kDefaultEnvironment;       // "development", as Rails.env

// What the parser reads of a file.
struct Document {
  YAML::Node root;          // the whole file, or the chosen section, merge keys resolved
  std::string environment;  // the chosen section; empty for a plain file
  int section_line = 0;     // 1-based line of the chosen section's key; 0 for a plain file
};

// A file is read as environment sections when its top level is a map none
// of whose keys is one of `config_keys` and whose values are all maps (or
// empty): then the section named by the environment is chosen. Anything
// else is a plain file, read whole (and checked key by key as always).
// Throws ConfigError naming the file, the variable and the sections present
// when the chosen section does not exist.
Document choose_document(const YAML::Node& file_root, const std::string& source, const Environment& env,
                         const std::vector<std::string>& config_keys);

// Resolves YAML merge keys, which yaml-cpp 0.7 leaves as an ordinary key
// "<<": in every map, `<<: *anchor` (or `<<: [*a, *b]`) adds the keys of the
// merged map(s) that the map does not give itself (an earlier map of a list
// wins over a later one), shallowly, as YAML 1.1 and Ruby's Psych do. Keys
// and values keep their marks (so errors keep their lines); a map whose
// keys repeat keeps the repetition (the parser reports it). Maps without a
// merge key anywhere below them are returned as they are. Throws
// ConfigError when a merge key's value is not a map or a list of maps.
YAML::Node resolve_merge_keys(const YAML::Node& node, const std::string& source);

// Why `raw` (database.path, or the file DUCTWORK_DATABASE_URL names)
// cannot name a SQLite database file, "" when it can: blank (a file named
// " " was created), or ":memory:" (SQLite's in-memory database, which a
// durable engine cannot use: each process would have its own, and it would
// be gone at exit; a file of that name was created instead).
std::string database_path_problem(const std::string& raw);

// --- config_http.cpp: the http section ---------------------------------------

// "host:port" with a port 0-65535; the host may be empty (every interface),
// a name, an IPv4 address or a bracketed IPv6 address.
bool valid_listen_address(const std::string& text);
// Why `token` cannot be an HTTP bearer token ("" when it can). Never
// includes the token.
std::string http_token_problem(const std::string& token);
// DUCTWORK_HTTP_LISTEN and DUCTWORK_HTTP_TOKEN, then the rule that a
// non-loopback http.listen needs a token (ConfigError naming http.listen).
void apply_http_environment(const Environment& env, Config* config);

}  // namespace ductwork::config_internal
