#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/definition.h"

namespace ductwork {

class CompiledDefinitionCache;

// The pipelines a host knows, by name, with where each was defined.
struct DefinitionSet {
  std::map<std::string, Definition> pipelines;
  std::map<std::string, std::string> sources;  // pipeline name -> file (or "plugin X")

  const Definition* find(const std::string& name) const;
  // Adds one; throws DefinitionError if the name is already defined.
  void add(Definition definition, const std::string& source);
};

// Compiles one definition file's text (YAML, or JSON which is YAML too) in
// the grammar of SPEC §3 (docs/definitions.md), through the SDK's builder:
//   pipeline: Name
//   on_halt: StepName            # optional
//   priority: 3                  # optional: 0 (claimed first) to 9
//   steps:
//     - start: A
//     - chain: B
//     - divide: [C, [D, E]]      # a branch: a name, or a list starting with one
//     - combine: F
//     - expand: G
//     - collapse: H
//     - divert: {premium: P, otherwise: [S, Audit]}
//     - converge: I
// Throws DefinitionError "<source>:<line>: pipeline <P>: <rule>".
Definition compile_definition_text(const std::string& text, const std::string& source);

// Loads every *.yml, *.yaml and *.json file of `directory` (sorted by name).
// A missing directory yields an empty set. A broken file (or a name defined
// twice) throws; with `problems`, it is appended there instead and skipped,
// so `validate` can report every broken file at once. With `cache`, a file
// whose text was compiled before is read back from it instead.
DefinitionSet load_definition_directory(const std::string& directory,
                                        std::vector<std::string>* problems = nullptr,
                                        const CompiledDefinitionCache* cache = nullptr);

}  // namespace ductwork
