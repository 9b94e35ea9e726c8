#pragma once

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <string>

namespace ductwork {

// "SIGSEGV" (or "signal N" for a number without a name).
inline std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// How a process ended, from waitpid's status: "killed by SIGSEGV",
// "exited with status 3".
inline std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "killed by " + signal_name(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped";
}

}  // namespace ductwork
