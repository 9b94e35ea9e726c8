// `ductwork serve`: the HTTP API and dashboard alone, with no workers
// (SPEC §12). Listens on http.listen (default 127.0.0.1:7420) until
// SIGINT/SIGTERM/SIGQUIT. Plugins are only probed (their steps never run here).
// `--child` is how a threaded `ductwork start` runs its HTTP server: a
// process of its own, ended with its parent, reading the host's metrics
// from `--metrics-folder`.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli/bootstrap.h"
#include "http/http_server.h"
#include "plugin/plugin_probe.h"

namespace ductwork::cli {

int cmd_serve(const Args& args, const std::function<void()>& wait_for_termination) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork serve [-c CONFIG]");
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGQUIT);
  sigaddset(&signals, SIGHUP);  // taken by no one: a terminal hang-up does not end the server
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (args.flag("child")) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) return kExitFailure;
  }
  Bootstrap boot(args, stdout, LogLevel::kDebug);
  boot.logger().set_role("http");
  boot.set_stop_check([] {
    sigset_t pending;
    sigpending(&pending);
    return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1;
  });
  try {
    boot.definitions();
  } catch (const PluginProbeInterrupted&) {
    return kExitOk;
  }
  // A threaded host's HTTP process reads the host's metric table from the
  // folder it was given.
  const std::string* folder = args.option("metrics-folder");
  metrics::Collector collector(folder ? *folder : std::string());
  http::HttpServer server(boot.config(), boot.stores(), boot.definitions(), boot.plugins(), boot.logger(),
                          &collector);
  const std::string& listen = boot.config().http.listen;
  server.start(listen.empty() ? HttpConfig::kDefaultListen : listen);
  wait_for_termination();
  boot.logger().info("Shutdown requested");
  server.stop();
  return kExitOk;
}

}  // namespace ductwork::cli
