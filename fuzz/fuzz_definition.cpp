// fuzz_definition: a definition file's text (YAML, or JSON as YAML) through
// the whole compiler. A broken file is a DefinitionError naming it; any
// other exception, crash, leak, hang or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/definition_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ductwork::Definition definition = ductwork::compile_definition_text(text, "fuzz.yml");
    // What compiled must round-trip through its canonical JSON.
    ductwork::Definition again = ductwork::Definition::from_json(definition.to_json(), definition.pipeline, "again");
    if (again.to_json() != definition.to_json()) __builtin_trap();
  } catch (const ductwork::DefinitionError&) {
  }
  return 0;
}
