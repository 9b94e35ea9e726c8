#pragma once

#include <atomic>
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
};

// The table of host functions handed to every plugin at init.
const dw_host_api* host_api();

}  // namespace ductwork
