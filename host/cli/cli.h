#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ductwork::cli {

// Exit codes of the `ductwork` binary (a contract for scripts):
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;   // a runtime failure (database error, ...)
constexpr int kExitBadInput = 2;  // bad usage, config, definition, argument or id; nothing written

// Bad input from the command line or the files it names; becomes exit 2.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The command line after the command name: flags, options and positionals.
struct Args {
  std::string command;
  std::string config_path;  // -c / --config
  std::vector<std::string> positionals;
  std::vector<std::pair<std::string, std::string>> options;  // --name value
  std::vector<std::string> flags;                            // --name

  bool flag(const std::string& name) const;
  const std::string* option(const std::string& name) const;
};

// Parses argv. `flags` and `options` list what the command accepts; anything
// else is BadInput naming it.
Args parse_args(int argc, char** argv, const std::vector<std::string>& flags,
                const std::vector<std::string>& options);

int cmd_migrate(const Args& args);
int cmd_start(const Args& args);
int cmd_trigger(const Args& args);
int cmd_status(const Args& args);
int cmd_list(const Args& args);
int cmd_plugins(const Args& args);
int cmd_validate(const Args& args);
int cmd_health(const Args& args);
int cmd_revive(const Args& args);
int cmd_prune(const Args& args);
int cmd_context(const Args& args);
int cmd_cancel(const Args& args);
int cmd_resume(const Args& args);
int cmd_pause(const Args& args, bool paused);  // pause / unpause
int cmd_schedules(const Args& args);
int cmd_signal(const Args& args);
int cmd_new_plugin(const Args& args);
// `wait_for_termination` blocks until SIGINT, SIGTERM or SIGQUIT (server_shell.h).
int cmd_serve(const Args& args, const std::function<void()>& wait_for_termination);

}  // namespace ductwork::cli
