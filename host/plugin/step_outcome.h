#pragma once

#include <string>

#include "plugin/plugin_registry.h"
#include "store/store_types.h"

namespace ductwork {

// How one call of a step's execute ended.
struct StepOutcome {
  bool ok = false;
  std::string output_json;  // when ok: the return value as JSON text
  ErrorInfo error;          // when !ok (already truncated)
  // When !ok: false when the step reported its error as permanent
  // (DW_ERROR_NOT_RETRYABLE through dw_host_api.set_error_flags), so no
  // retry may be spent on it. Errors the host finds itself (unknown step,
  // invalid output, ...) stay retryable.
  bool retryable = true;
  // The plugin whose step ran (null when the step class did not resolve).
  const LoadedPlugin* plugin = nullptr;
  // When !ok: the step's process died (or broke the process-step
  // protocol) during the call. A crash of the execution, not an error:
  // it costs a crash, not a retry (SPEC §19).
  bool crashed = false;
  // How long execute ran, in seconds, as the caller timed it (negative:
  // not timed); observed in /metrics once the result is committed.
  double ran_seconds = -1;
};

}  // namespace ductwork
