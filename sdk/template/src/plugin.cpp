// The plugin's entry points: exactly once per .so.
#include <ductwork/step.hpp>

DUCTWORK_PLUGIN("@NAME@", "0.1.0");
