#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace ductwork {

// The systemd notification protocol (sd_notify(3)), spoken directly: one
// datagram per message to the AF_UNIX socket named by $NOTIFY_SOCKET. The
// host is a `Type=notify` service (packaging/debian/ductwork.service): it
// says READY=1 once its loops run, STOPPING=1 when it begins to stop,
// RELOADING=1 around a SIGHUP restart, and WATCHDOG=1 from its main loop at
// half the interval systemd asks for ($WATCHDOG_USEC), so a wedged main loop
// is killed and restarted by systemd. Without $NOTIFY_SOCKET (not under
// systemd) every call does nothing.
class SystemdNotifier {
 public:
  // Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID, then removes
  // them from the environment so child processes never speak for the service.
  SystemdNotifier();

  bool enabled() const { return !socket_path_.empty(); }
  // Sends `state` (e.g. "READY=1\nSTATUS=..."); false when it could not be
  // delivered (or notifications are off). Never throws.
  bool notify(std::string_view state) const;

  // WATCHDOG=1 when half the watchdog interval has passed since the last
  // ping; call it from the loop whose health it vouches for.
  void watchdog_tick();
  bool watchdog_enabled() const { return watchdog_interval_.count() > 0; }

  // Puts the variables back, for a host that execs itself again (a threaded
  // host's SIGHUP restart keeps its pid, so systemd still listens to it).
  void restore_environment() const;

 private:
  std::string socket_path_;
  std::string watchdog_usec_;  // as read, for restore_environment
  std::chrono::microseconds watchdog_interval_{0};
  std::chrono::steady_clock::time_point next_ping_{};
};

}  // namespace ductwork
