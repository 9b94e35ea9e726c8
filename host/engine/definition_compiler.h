#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/definition.h"

namespace ductwork {

// Compiles one parsed definition file (YAML or JSON) by replaying its
// entries on the SDK's builder (pipeline.hpp), so a file and the same
// pipeline written in C++ give the same graph and node names. Throws
// DefinitionError "<source>:<line>: pipeline <P>: <rule>".
Definition compile_definition_yaml(const YAML::Node& root, const std::string& source);

}  // namespace ductwork
