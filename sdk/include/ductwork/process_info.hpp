// ductwork/process_info.hpp — what a lifecycle hook sees (SPEC §15): which
// process is starting or stopping, the pipelines it serves, and a logger.
// A C++ view over one dw_process_info.
//
//   void open_pool(const ductwork::ProcessInfo& p) {
//     pool = make_pool(/*connections=*/4);
//     p.log(ductwork::LogLevel::kInfo, "pool open in " + p.role());
//   }
//   DUCTWORK_HOOK(on_worker_start, open_pool);
#ifndef DUCTWORK_PROCESS_INFO_HPP
#define DUCTWORK_PROCESS_INFO_HPP

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ductwork/abi.h"
#include "ductwork/step_context.hpp"  // LogLevel

namespace ductwork {

class ProcessInfo {
 public:
  // Wraps `raw` (and its host table), which must outlive this object.
  explicit ProcessInfo(const dw_process_info& raw) {
    // Append-only structs: copy the prefix the host filled in, leave the
    // rest zero ("not provided").
    std::memcpy(&raw_, &raw, std::min<std::size_t>(raw.struct_size, sizeof raw_));
    if (raw_.host != nullptr) {
      std::memcpy(&host_, raw_.host, std::min<std::size_t>(raw_.host->struct_size, sizeof host_));
    }
    if (raw_.role != nullptr) role_ = raw_.role;
    for (std::size_t i = 0; raw_.pipelines != nullptr && i < raw_.pipeline_count; ++i) {
      if (raw_.pipelines[i] != nullptr) pipelines_.emplace_back(raw_.pipelines[i]);
    }
  }
  ProcessInfo(const ProcessInfo&) = delete;
  ProcessInfo& operator=(const ProcessInfo&) = delete;

  // "supervisor", "advancer" or "worker".
  const std::string& role() const noexcept { return role_; }
  // The process whose start or stop this is. A supervisor's hooks run in a
  // short-lived child of their own: pid() is still the supervisor's.
  std::int64_t pid() const noexcept { return raw_.pid; }
  // The pipelines that process serves (a worker child: its one pipeline).
  const std::vector<std::string>& pipelines() const noexcept { return pipelines_; }

  // True once the hook's time is up (supervisor.shutdown_timeout): a hook
  // that waits on something should poll it and give up.
  bool cancelled() const noexcept { return detail::host_cancelled(host_, raw_.host_handle); }

  // One line in the host's log, attributed to this hook. Goes to stderr
  // when the host offers no logger.
  void log(LogLevel level, std::string_view message) const {
    detail::host_log(host_, raw_.host_handle, level, message, role_ + " hook");
  }

 private:
  dw_process_info raw_{};
  dw_host_api host_{};
  std::string role_;
  std::vector<std::string> pipelines_;
};

}  // namespace ductwork

#endif  // DUCTWORK_PROCESS_INFO_HPP
