// fuzz_definition_json: hand-written canonical definition JSON (what a
// plugin exports, or a run's stored snapshot) through strict validation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/definition.h"
#include "util/json_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (ductwork::json_nesting_depth(text) > ductwork::kMaxJsonDepth) return 0;  // refused at every door
  ductwork::json doc = ductwork::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  std::string name = doc.is_object() && doc.contains("pipeline") && doc["pipeline"].is_string()
                         ? doc["pipeline"].get<std::string>()
                         : "P";
  for (bool strict : {true, false}) {
    try {
      ductwork::Definition definition = ductwork::Definition::from_json(doc, name, "fuzz.json", strict);
      (void)definition.to_json().dump();
      (void)definition.step_classes();
    } catch (const ductwork::DefinitionError&) {
    }
  }
  return 0;
}
