// ductwork — the command-line face of the host. Parses the command and hands
// off to cli/cmd_*.cpp; maps failures to the documented exit codes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "cli/cli.h"
#include "cli/server_shell.h"
#include "config/config.h"
#include "engine/definition.h"
#include "plugin/plugin_probe.h"
#include "store/store_error.h"

namespace {

const char* kUsage =
    "usage: ductwork <command> [-c CONFIG] [options]\n"
    "\n"
    "commands:\n"
    "  migrate [--vacuum]                   apply pending schema migrations; --vacuum (SQLite, hosts stopped)\n"
    "                                       rewrites the file so pruned space goes back to the file system\n"
    "  start [--drain] [--pidfile PATH]    run the host; --drain exits 0 once no run is in progress; with\n"
    "                                       http.listen set it serves the HTTP API too\n"
    "  serve [--pidfile PATH]               serve the HTTP API alone on http.listen (default 127.0.0.1:7420)\n"
    "  trigger PIPELINE [ARG_JSON ...] [--idempotency-key KEY] [--priority P]   start a pipeline; prints its\n"
    "                                       id (with KEY: the first pipeline's id when KEY was given before,\n"
    "                                       nothing new); P from 0 (claimed first) to 9\n"
    "  trigger PIPELINE --from FILE [--priority P]   one pipeline per line of FILE (- = stdin), each a JSON array of\n"
    "                                       arguments; prints the ids in input order\n"
    "  status PIPELINE_ID [--json]          show a pipeline, its runs, branches and steps\n"
    "  status PIPELINE_ID --summary [--json]  its runs and the latest run's counts, however wide\n"
    "  status PIPELINE_ID --archive DIR [--json]   a pruned pipeline, as archived in DIR\n"
    "  list [--json] [--status S] [--pipeline P] [--limit N]   newest first, at most N (default 1000)\n"
    "  plugins [--json]                     list loaded plugins and their steps\n"
    "  validate [--json]                    check every definition against the loaded steps\n"
    "  revive PIPELINE_ID [--duplicate-context | --context-from RUN]   re-run a halted or cancelled pipeline as a\n"
    "                                       new run; prints the run id. --duplicate-context copies the context\n"
    "                                       of the newest run that has any, --context-from that of run RUN\n"
    "  context PIPELINE_ID [--run N] [--json]   the run context of run N (1 = first; default the newest)\n"
    "  cancel PIPELINE_ID                   stop a pipeline: withdraw its queued jobs, advance nothing more\n"
    "  resume PIPELINE_ID [VALUE_JSON] [--node NODE]   run the step after each dampened branch with\n"
    "                                       [previous output, VALUE_JSON]\n"
    "  signal NAME [--key KEY_JSON] [--idempotency-key K] [--json] [VALUE_JSON]   deliver an event: each\n"
    "                                       branch awaiting NAME whose match equals KEY_JSON runs its next step\n"
    "                                       with [previous output, VALUE_JSON]; kept for a later await if none\n"
    "  pause PIPELINE / unpause PIPELINE  stop / restart new attempts of a pipeline's jobs on every host\n"
    "                                       (running ones finish; triggers are still accepted)\n"
    "  schedules [--json]                   the pipelines' cron schedules with their next and last ticks\n"
    "  prune [--older-than SECONDS] [--status S] [--pipeline P] [--dry-run] [--archive DIR]   delete\n"
    "                                       finished pipelines, every row of each (S: completed, halted or\n"
    "                                       cancelled), archived first in DIR (or retention.archive)\n"
    "  health [-p PID] [-V]                 exit 0 when the supervisor(s) heartbeat, 1 with a report if not\n"
    "  new-plugin NAME [DIR] [--python]     write a buildable step plugin folder (default ./NAME);\n"
    "                                       --python: Python process steps instead of C++\n"
    "\n"
    "CONFIG defaults to $DUCTWORK_CONFIG, then ./ductwork.yml, else built-in defaults.\n"
    "exit codes: 0 ok, 1 runtime failure, 2 bad input (nothing written)\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ductwork::cli;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return kExitBadInput;
  }
  std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  // Internal: the process that loads plugins for a command (plugin_probe.h).
  if (command == "__probe-plugins" && argc == 6) {
    return ductwork::run_plugin_probe(argv[2], std::atoi(argv[3]), std::atol(argv[4]), std::atof(argv[5]));
  }
  try {
    if (command == "migrate") return cmd_migrate(parse_args(argc, argv, {"vacuum"}, {}));
    if (command == "start") {
      return run_server_command(argc, argv, {{"drain"}, {"child", "crash-folder", "plugins-checked"}, [](const Args& args, auto&) {
                                               return cmd_start(args);
                                             }});
    }
    if (command == "trigger") return cmd_trigger(parse_args(argc, argv, {}, {"from", "idempotency-key", "priority"}));
    if (command == "status") return cmd_status(parse_args(argc, argv, {"json", "summary"}, {"archive"}));
    if (command == "list") return cmd_list(parse_args(argc, argv, {"json"}, {"status", "pipeline", "limit"}));
    if (command == "plugins") return cmd_plugins(parse_args(argc, argv, {"json"}, {}));
    if (command == "validate") return cmd_validate(parse_args(argc, argv, {"json"}, {}));
    if (command == "revive") return cmd_revive(parse_args(argc, argv, {"duplicate-context"}, {"context-from"}));
    if (command == "prune") return cmd_prune(parse_args(argc, argv, {"dry-run"}, {"older-than", "status", "pipeline", "archive"}));
    if (command == "context") return cmd_context(parse_args(argc, argv, {"json"}, {"run"}));
    if (command == "cancel") return cmd_cancel(parse_args(argc, argv, {}, {}));
    if (command == "resume") return cmd_resume(parse_args(argc, argv, {}, {"node"}));
    if (command == "signal") return cmd_signal(parse_args(argc, argv, {"json"}, {"key", "idempotency-key"}));
    if (command == "schedules") return cmd_schedules(parse_args(argc, argv, {"json"}, {}));
    if (command == "pause" || command == "unpause") return cmd_pause(parse_args(argc, argv, {}, {}), command == "pause");
    if (command == "serve") {
      return run_server_command(argc, argv, {{"child"}, {"metrics-folder"}, [](const Args& args, auto& wait) {
                                               return cmd_serve(args, wait);
                                             }});
    }
    if (command == "new-plugin") return cmd_new_plugin(parse_args(argc, argv, {"python"}, {}));
    if (command == "health") return cmd_health(parse_args(argc, argv, {"verbose"}, {"pid"}));
    std::fprintf(stderr, "ductwork: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return kExitBadInput;
  } catch (const BadInput& e) {
    std::fprintf(stderr, "ductwork %s: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const ductwork::ConfigError& e) {
    std::fprintf(stderr, "ductwork %s: bad configuration: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const ductwork::PluginLoadError& e) {
    std::fprintf(stderr, "ductwork %s: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const ductwork::DefinitionError& e) {
    std::fprintf(stderr, "ductwork %s: bad pipeline definition: %s\n", command.c_str(), e.what());
    return kExitBadInput;
  } catch (const ductwork::StoreError& e) {
    std::fprintf(stderr, "ductwork %s: %s\n", command.c_str(), e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ductwork %s: %s\n", command.c_str(), e.what());
    return kExitFailure;
  }
}
