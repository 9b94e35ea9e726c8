#pragma once

#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <string>

namespace ductwork {

// "SIGSEGV" (or "signal N" for a number without a name).
inline std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// The resource limit whose passing `sig` reports, for a person: "the file
// size limit (RLIMIT_FSIZE, `ulimit -f`) of 4096 bytes" for SIGXFSZ, "the
// CPU time limit (RLIMIT_CPU, `ulimit -t`) of 2 s" for SIGXCPU; "" for any
// other signal. Past the hard CPU limit the kernel sends SIGKILL instead
// (`ulimit -t N` sets both limits), so a SIGKILL is that limit's too when
// `usage` (the process's, from wait4) reached it. The values are this
// process's limits, which its children inherit.
inline std::string exceeded_limit(int sig, const rusage* usage = nullptr) {
  rlimit limit{};
  if (sig == SIGXFSZ) {
    std::string text = "the file size limit (RLIMIT_FSIZE, `ulimit -f`)";
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      text += " of " + std::to_string(static_cast<unsigned long long>(limit.rlim_cur)) + " bytes";
    }
    return text;
  }
  if (sig != SIGXCPU && sig != SIGKILL) return "";
  const bool known = ::getrlimit(RLIMIT_CPU, &limit) == 0;
  const rlim_t seconds = sig == SIGXCPU ? limit.rlim_cur : limit.rlim_max;
  if (sig == SIGKILL) {
    if (!known || seconds == RLIM_INFINITY || usage == nullptr) return "";
    // (rusage's split of the CPU time into user and system is sampled at
    // the scheduler's ticks: its sum may fall a little short of the time
    // the kernel measured against the limit.)
    const double used = static_cast<double>(usage->ru_utime.tv_sec + usage->ru_stime.tv_sec) +
                        static_cast<double>(usage->ru_utime.tv_usec + usage->ru_stime.tv_usec) / 1e6;
    if (used < 0.9 * static_cast<double>(seconds)) return "";
  }
  std::string text = "the CPU time limit (RLIMIT_CPU, `ulimit -t`)";
  if (known && seconds != RLIM_INFINITY) {
    text += " of " + std::to_string(static_cast<unsigned long long>(seconds)) + " s";
  }
  return text;
}

// How a process ended, from waitpid's status: "killed by SIGSEGV",
// "exited with status 3", "killed by SIGXFSZ: it passed the file size limit
// (RLIMIT_FSIZE, `ulimit -f`) of 4096 bytes".
inline std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const std::string limit = exceeded_limit(WTERMSIG(status));
    return "killed by " + signal_name(WTERMSIG(status)) + (limit.empty() ? "" : ": it passed " + limit);
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

}  // namespace ductwork
