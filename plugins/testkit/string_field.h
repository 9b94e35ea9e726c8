// The string fields of a testkit step's object argument.
#pragma once

#include <string>

#include <ductwork/step.hpp>

namespace ductwork::testkit {

// The string `name` of the object `arg`; ArgumentError "<expects>, got
// <arg>" when `arg` is not an object or has no such string (`expects` says
// what the step takes: "Gate expects {\"file\": PATH, ...}").
inline const std::string& string_field(const Json& arg, const char* name, const char* expects) {
  const Json* field = arg.is_object() ? arg.find(name) : nullptr;
  if (field == nullptr || !field->is_string()) throw ArgumentError(std::string(expects) + ", got " + arg.dump());
  return field->as_string();
}

}  // namespace ductwork::testkit
