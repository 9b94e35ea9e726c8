#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ductwork/abi.h"

namespace ductwork {

class Store;
class Logger;

// What the host functions need to serve one running step; passed to the
// plugin as the opaque `host_handle` of its dw_step_context.
struct StepCallScope {
  Store* store = nullptr;  // the calling worker thread's own connection
  Logger* logger = nullptr;
  const std::atomic<bool>* cancelled = nullptr;
  std::string run_id;
  std::string pipeline;
  std::string step;
  std::string job_id;
  // job_worker.max_output_bytes: the largest output or context value the
  // step may hand back (JSON text).
  std::size_t max_value_bytes = 16u << 20;
  // Written by the plugin during the call: the DW_ERROR_* bits it set with
  // dw_host_api.set_error_flags for the error it is about to return (0: an
  // ordinary, retryable error). Cleared by invoke_step before each call.
  std::uint32_t error_flags = 0;
  // The step's own flag (SPEC §13): raised when its run is cancelled or its
  // timeout passed (engine/step_watch.h). `cancelled` is the host's
  // shutdown; ctx.cancelled() reads either.
  const std::atomic<bool>* step_cancelled = nullptr;
  // A process step's (SPEC §19): holds its step process's pid while it
  // runs, so that a step outliving its timeout is ended by killing that
  // process rather than the worker (engine/step_watch.h).
  std::atomic<int>* process_pid = nullptr;
  // Raised by invoke_step before a process step runs: what ends it past
  // its timeout is the kill of that process, never of the worker.
  std::atomic<bool>* process_step = nullptr;
};

// What the host functions need to serve one running hook (the
// `host_handle` of its dw_process_info).
struct HookCallScope {
  Logger* logger = nullptr;
  // Raised when the hook's time is up; is_cancelled reads it.
  const std::atomic<bool>* cancelled = nullptr;
  std::string event;   // "on_worker_start"
  std::string hook;    // the function's name
  std::string plugin;  // the plugin's name
};

// The table of host functions handed to every plugin at init.
const dw_host_api* host_api();
// The table a hook is given: log and is_cancelled; the run-context
// functions fail (a hook belongs to no run).
const dw_host_api* hook_host_api();

}  // namespace ductwork
