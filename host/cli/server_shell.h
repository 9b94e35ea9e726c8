#pragma once

// The shell of the long-running commands, `ductwork start` and
// `ductwork serve`: a Poco::Util::ServerApplication that reads their options
// (Poco's OptionSet: `--name VALUE`, `--name=VALUE`, `-c CONFIG`, unambiguous
// prefixes), writes `--pidfile`, and hands the command its Args. What it
// leaves out, and why (--daemon, waitForTerminationRequest in `start`), is
// in docs/decisions.md.
#include <functional>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace ductwork::cli {

// Blocks until SIGINT, SIGTERM or SIGQUIT (ServerApplication's
// waitForTerminationRequest). The caller blocks those signals first, before
// any thread starts, so no other thread is ended by one.
using WaitForTermination = std::function<void()>;

struct ServerCommand {
  std::vector<std::string> flags;    // --name
  std::vector<std::string> options;  // --name VALUE
  std::function<int(const Args&, const WaitForTermination&)> body;
};

// Runs `body` with argv (argv[1] is the command's name) read against the
// command's flags and options plus -c/--config and --pidfile. A bad option
// is BadInput (exit 2) naming it; an exception from `body` reaches the
// caller unchanged, so main() maps it to its exit code as for any command.
int run_server_command(int argc, char** argv, const ServerCommand& command);

// Removes the pidfile now, for a process that ends with _Exit (which skips
// every destructor). Safe to call when there is none.
void remove_pidfile();

}  // namespace ductwork::cli
