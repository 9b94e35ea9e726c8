#pragma once

#include <stdexcept>

namespace ductwork {

// Raised at a checkpoint by DUCTWORK_FAULT=<checkpoint>:raise.
class InjectedFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Fault injection for durability tests (SPEC §6). When DUCTWORK_FAULT is
// "<checkpoint>:<action>" and `checkpoint` matches, performs the action:
// kill (SIGKILL self), exit (_exit(1) without cleanup), raise (throws
// InjectedFault), sleep (blocks for DUCTWORK_FAULT_SLEEP seconds, default 3600).
// An optional third field ":N" fires only on the N-th time the checkpoint is
// reached in this process; DUCTWORK_FAULT_MARKER=<path> makes it fire in
// one process only (the first to create that file). Unset: one load.
void fault_point(const char* checkpoint);

}  // namespace ductwork
