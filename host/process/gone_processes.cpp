#include "process/gone_processes.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace ductwork {

bool process_exists(long pid) {
  if (pid <= 0) return false;
  // EPERM: it exists, it is someone else's.
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  // A zombie has ended; it only waits for a parent to reap it (an orphaned
  // child of a killed supervisor waits for pid 1, which in a container may
  // never do it).
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: trust kill()
  const size_t name_end = line.rfind(')');  // the name may hold spaces and ')'
  if (name_end == std::string::npos || name_end + 2 >= line.size()) return true;
  const char state = line[name_end + 2];
  return state != 'Z' && state != 'X';
}

int reap_gone_processes(Store& store, Reaper& reaper, const std::string& machine, Logger& logger) {
  int reaped = 0;
  for (const ProcessInfo& row : store.reads().processes()) {
    if (row.machine != machine) continue;
    const bool own_pid = row.pid == static_cast<int64_t>(::getpid());
    if (!own_pid && process_exists(static_cast<long>(row.pid))) continue;
    const std::string how = row.role + " pid " + std::to_string(row.pid) +
                            (own_pid ? " is gone (its pid is this new process's)" : " is gone (found at a host's start)");
    if (reaper.reap(row.id, /*force=*/true, Death(how))) {
      logger.warn("Process of a host that ended without stopping reaped at start",
                  Json::object({{"reaped_process_id", row.id}, {"pid", row.pid}, {"role", row.role}}));
      ++reaped;
    }
  }
  return reaped;
}

}  // namespace ductwork
