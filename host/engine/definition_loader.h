#pragma once

#include <map>
#include <string>

#include "engine/definition.h"

namespace ductwork {

// The pipelines a host knows, by name, with where each was defined.
struct DefinitionSet {
  std::map<std::string, Definition> pipelines;
  std::map<std::string, std::string> sources;  // pipeline name -> file (or "plugin X")

  const Definition* find(const std::string& name) const;
  // Adds one; throws DefinitionError if the name is already defined.
  void add(Definition definition, const std::string& source);
};

// Compiles one definition file's text (YAML, or JSON which is YAML too) in
// the grammar of SPEC §3:
//   pipeline: Name
//   steps:
//     - start: A
//     - chain: B
// Throws DefinitionError naming `source`, the line and the rule broken.
Definition compile_definition_text(const std::string& text, const std::string& source);

// Loads every *.yml, *.yaml and *.json file of `directory` (sorted by name).
// A missing directory yields an empty set. Any broken file throws: a broken
// definition is never skipped silently.
DefinitionSet load_definition_directory(const std::string& directory);

}  // namespace ductwork
