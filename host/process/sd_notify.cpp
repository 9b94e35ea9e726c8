#include "process/sd_notify.h"

#include "util/clock.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ductwork {

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket != nullptr && (socket[0] == '/' || socket[0] == '@') && std::strlen(socket) < sizeof(sockaddr_un::sun_path)) {
    socket_path_ = socket;
  }
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  // WATCHDOG_PID names the process systemd expects the pings from.
  bool for_us = pid == nullptr || std::strtol(pid, nullptr, 10) == static_cast<long>(::getpid());
  if (usec != nullptr && for_us && enabled()) {
    long long value = std::strtoll(usec, nullptr, 10);
    if (value > 0) {
      watchdog_interval_ = std::chrono::microseconds(value);
      watchdog_usec_ = usec;
    }
  }
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
}

void SystemdNotifier::restore_environment() const {
  if (!enabled()) return;
  ::setenv("NOTIFY_SOCKET", socket_path_.c_str(), 1);
  if (!watchdog_usec_.empty()) {
    ::setenv("WATCHDOG_USEC", watchdog_usec_.c_str(), 1);
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  }
}

bool SystemdNotifier::notify(std::string_view state) const {
  if (!enabled()) return false;
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  if (address.sun_path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address),
                          length);
  ::close(fd);
  return sent == static_cast<ssize_t>(state.size());
}

void SystemdNotifier::watchdog_tick() {
  if (!watchdog_enabled()) return;
  const auto now = Clock::system().monotonic();
  if (now < next_ping_) return;
  notify("WATCHDOG=1");
  next_ping_ = now + watchdog_interval_ / 2;
}

}  // namespace ductwork
