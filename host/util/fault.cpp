#include "util/fault.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace ductwork {
namespace {

struct FaultSpec {
  bool armed = false;
  std::string checkpoint;
  std::string action;
  long nth = 1;
};

const FaultSpec& spec() {
  static const FaultSpec parsed = [] {
    FaultSpec s;
    const char* env = std::getenv("DUCTWORK_FAULT");
    if (!env || !*env) return s;
    std::string text = env;
    auto colon = text.find(':');
    if (colon == std::string::npos) return s;
    s.checkpoint = text.substr(0, colon);
    s.action = text.substr(colon + 1);
    auto second = s.action.find(':');
    if (second != std::string::npos) {
      s.nth = std::strtol(s.action.c_str() + second + 1, nullptr, 10);
      s.action.resize(second);
    }
    s.armed = true;
    return s;
  }();
  return parsed;
}

std::atomic<long> hits{0};

// With DUCTWORK_FAULT_MARKER=<path>, the fault fires in one process only:
// the one that creates the marker file first. A supervisor restarts crashed
// children with the same environment; without the marker every restarted
// child would crash again at the same point.
bool claim_marker() {
  const char* marker = std::getenv("DUCTWORK_FAULT_MARKER");
  if (!marker || !*marker) return true;
  int fd = ::open(marker, O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

void fault_point(const char* checkpoint) {
  const FaultSpec& s = spec();
  if (!s.armed || s.checkpoint != checkpoint) return;
  if (hits.fetch_add(1) + 1 != s.nth) return;
  if (!claim_marker()) return;
  if (s.action == "kill") {
    ::kill(::getpid(), SIGKILL);
  } else if (s.action == "exit") {
    ::_exit(1);
  } else if (s.action == "raise") {
    throw InjectedFault(std::string("fault injected at ") + checkpoint);
  } else if (s.action == "sleep") {
    const char* secs = std::getenv("DUCTWORK_FAULT_SLEEP");
    std::this_thread::sleep_for(std::chrono::duration<double>(secs ? std::atof(secs) : 3600.0));
  }
}

}  // namespace ductwork
