// fuzz_definition_json: hand-written canonical definition JSON (what a
// plugin exports, or a run's stored snapshot) through strict validation.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/definition.h"
#include "util/json_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (ductwork::json_nesting_depth(text) > ductwork::kMaxJsonDepth) return 0;  // refused at every door
  std::optional<ductwork::Json> parsed = ductwork::try_parse_json(text);
  if (!parsed) return 0;
  const ductwork::Json& doc = *parsed;
  const ductwork::Json* pipeline = doc.find("pipeline");
  std::string name = pipeline && pipeline->is_string() ? pipeline->as_string() : "P";
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
