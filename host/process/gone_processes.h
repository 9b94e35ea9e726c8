#pragma once

#include <string>

#include "engine/reaper.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// At a host's start (a supervisor, or a threaded host that reaps): every
// process row of this machine whose process no longer exists is reaped
// now, with force, so the claims of a host that died without removing its
// rows (SIGKILL to the whole tree, SIGXFSZ, the OOM killer) run again at
// once instead of after supervisor.reaper_timeout (300 s by default), the
// same way `health` already calls such a row "process is gone". A row with
// this process's own pid is a dead process whose pid was reused. Returns
// how many rows were reaped.
int reap_gone_processes(Store& store, Reaper& reaper, const std::string& machine, Logger& logger);

// Whether a live process with this pid exists on this machine (kill(pid, 0),
// and not a zombie).
bool process_exists(long pid);

}  // namespace ductwork
