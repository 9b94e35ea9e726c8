#include "process/plugin_load_watch.h"

#include "util/clock.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace ductwork {
namespace {

bool stop_signal_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1;
}

// The loading thread's progress, watched by another thread.
struct LoadProgress {
  std::mutex mutex;
  std::condition_variable changed;
  std::string loading;
  bool done = false;
};

[[noreturn]] void end_process(int code) {
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace

void load_checked_plugins(PluginRegistry& registry, const std::vector<CheckedPlugin>& checked, double timeout_seconds,
                          int timeout_exit_code, Logger& logger) {
  LoadProgress progress;
  const Clock& clock = Clock::system();  // before any store: plugins load first
  const auto deadline = clock.after(timeout_seconds);
  std::thread watcher([&] {
    std::unique_lock<std::mutex> lock(progress.mutex);
    while (!progress.done) {
      progress.changed.wait_for(lock, std::chrono::milliseconds(100));
      if (progress.done) return;
      if (stop_signal_pending()) {
        logger.info("Shutdown requested while loading plugins", Json::object({{"plugin_path", progress.loading}}));
        end_process(0);
      }
      if (clock.monotonic() >= deadline) {
        char shown[32];
        std::snprintf(shown, sizeof shown, "%g", timeout_seconds);
        logger.error("Plugin refused",
                     Json::object({{"plugin_path", progress.loading},
                                   {"reason", std::string("did not finish loading within ") + shown +
                                                  " s (plugins.load_timeout) in this process, although the plugin "
                                                  "probe loaded it: its initialisation hangs here"}}));
        logger.error("Plugins did not load in time; this process exits",
                     Json::object({{"plugin_path", progress.loading}, {"exit_code", timeout_exit_code}}));
        end_process(timeout_exit_code);
      }
    }
  });
  registry.load_checked(checked, logger, [&](const std::string& path) {
    std::lock_guard<std::mutex> lock(progress.mutex);
    progress.loading = path;
  });
  {
    std::lock_guard<std::mutex> lock(progress.mutex);
    progress.done = true;
  }
  progress.changed.notify_all();
  watcher.join();
}

}  // namespace ductwork
