// `ductwork start [--drain]`: run the host until SIGINT/SIGTERM, or with
// --drain until no run of its pipelines is in progress.
#include <signal.h>
#include <unistd.h>

#include <memory>

#include "cli/bootstrap.h"
#include "cli/progress_line.h"
#include "engine/catalog.h"
#include "process/host_runtime.h"

namespace ductwork::cli {

int cmd_start(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork start [--drain] [-c CONFIG]");
  // Signals are taken synchronously by this thread, from the very start so a
  // SIGTERM during start-up still ends in a clean exit 0. Every loop thread
  // inherits the blocked mask, so none of them is interrupted by them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Bootstrap boot(args, stdout, LogLevel::kDebug);
  boot.logger().set_role("host");
  std::vector<std::string> pipelines = boot.hosted_pipelines();
  auto problems = check_steps_resolve(boot.definitions(), boot.plugins(), &pipelines);
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    throw BadInput("definitions name steps that no plugin exports:" + all);
  }
  if (pipelines.empty()) {
    throw BadInput("no pipelines to run: no definition in " + boot.config().definitions_directory +
                   " and none exported by a plugin in " + boot.config().plugins_directory);
  }
  StoreFactory& stores = boot.stores();
  bool drain = args.flag("drain");
  bool terminal = ::isatty(STDOUT_FILENO) != 0;

  HostRuntime runtime(boot.config(), stores, boot.plugins(), boot.logger(), pipelines);
  runtime.start();
  std::unique_ptr<ProgressLine> progress;
  if (terminal) progress = std::make_unique<ProgressLine>(boot.logger());
  auto store = stores.open();
  while (true) {
    timespec wait{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      boot.logger().info("Shutdown requested", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
      break;
    }
    if (!drain && !progress) continue;
    Progress totals;
    try {
      totals = store->progress(pipelines);
    } catch (const std::exception& e) {
      boot.logger().error("Progress query failed", {{"error_message", e.what()}});
      continue;
    }
    if (progress) {
      progress->update(totals.pipelines_total - totals.pipelines_open, totals.pipelines_total,
                       runtime.stats().steps_succeeded.load());
    }
    if (drain && totals.pipelines_open == 0) {
      boot.logger().info("Drained: no run in progress", {{"pipelines_total", totals.pipelines_total}});
      break;
    }
  }
  progress.reset();
  runtime.stop();
  return kExitOk;
}

}  // namespace ductwork::cli
