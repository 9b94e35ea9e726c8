// What compiling a definition file's text says: the DefinitionError's
// message, or "(no error)". The file is named defs/p.yml in messages.
#pragma once

#include <string>

#include "engine/definition_loader.h"

namespace ductwork {

inline std::string definition_error_of(const std::string& text) {
  try {
    compile_definition_text(text, "defs/p.yml");
  } catch (const DefinitionError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ductwork
