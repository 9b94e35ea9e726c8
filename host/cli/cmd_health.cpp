// `ductwork health [-p PID] [-V]`: is the supervisor (or the threaded host)
// of this database alive and heartbeating?
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "cli/bootstrap.h"
#include "process/gone_processes.h"
#include "process/machine.h"

namespace ductwork::cli {
namespace {

// A supervisor heartbeats every supervisor.polling_timeout; missing several
// beats in a row means it is dead or wedged.
double stale_after(const Config& config) { return std::max(5 * config.supervisor.polling_timeout, 3.0); }

bool supervising(const ProcessInfo& p) { return p.role == "supervisor" || p.role == "all"; }

}  // namespace

int cmd_health(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork health [-p PID] [-V] [-c CONFIG]");
  long want_pid = 0;
  if (const std::string* p = args.option("pid")) {
    try {
      want_pid = std::stol(*p);
    } catch (const std::exception&) {
      throw BadInput("-p '" + *p + "' is not a process id");
    }
  }
  bool verbose = args.flag("verbose");
  Bootstrap boot(args, stderr, LogLevel::kError);
  std::vector<ProcessInfo> rows;
  try {
    if (!boot.database_exists()) {
      std::printf("unhealthy: no database at %s (no host has run)\n", database_name(boot.config().database).c_str());
      return kExitFailure;
    }
    rows = boot.open_store_for_reading()->reads().processes();
  } catch (const BadInput& e) {
    // A database server that does not answer: that is the answer.
    std::printf("unhealthy: database unreachable: %s\n", e.what());
    return kExitFailure;
  }
  const std::string machine = machine_identifier();
  double limit = stale_after(boot.config());
  std::vector<std::string> problems;
  // What live processes report while they work (refused definitions):
  // printed as warnings, never a failure — the host serves the rest.
  std::set<std::string> warnings;
  for (const auto& p : rows) {
    bool live = p.heartbeat_age_seconds <= limit && (p.machine != machine || process_exists(static_cast<long>(p.pid)));
    if (!live) continue;
    std::istringstream lines(p.notice);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) warnings.insert(line);
    }
  }
  int healthy = 0, considered = 0;
  for (const auto& p : rows) {
    if (want_pid ? p.pid != want_pid || p.machine != machine : !supervising(p)) continue;
    ++considered;
    bool fresh = p.heartbeat_age_seconds <= limit;
    bool alive = p.machine != machine || process_exists(static_cast<long>(p.pid));
    if (fresh && alive && !p.problem.empty()) {
      // Alive, but it says its host cannot work (supervisor.cpp).
      problems.push_back(p.role + " pid " + std::to_string(p.pid) + ": " + p.problem);
    } else if (fresh && alive) {
      ++healthy;
    } else {
      char line[256];
      std::snprintf(line, sizeof line, "%s pid %lld: %s", p.role.c_str(), static_cast<long long>(p.pid),
                    !alive ? "process is gone" : "heartbeat is stale");
      problems.push_back(line);
    }
  }
  if (considered == 0) {
    problems.push_back(want_pid ? "no process row for pid " + std::to_string(want_pid) + " on this machine"
                                : "no supervisor is running");
  }
  if (verbose) {
    std::printf("%-10s %-8s %-12s %s\n", "role", "pid", "heartbeat", "machine");
    for (const auto& p : rows) {
      std::printf("%-10s %-8lld %8.1fs ago %s\n", p.role.c_str(), static_cast<long long>(p.pid),
                  p.heartbeat_age_seconds, p.machine.c_str());
    }
  }
  auto print_warnings = [&] {
    for (const auto& w : warnings) std::printf("warning: %s\n", w.c_str());
  };
  if (problems.empty()) {
    std::printf("healthy: %d supervisor%s heartbeating (stale after %.1fs)\n", healthy, healthy == 1 ? "" : "s",
                limit);
    print_warnings();
    return kExitOk;
  }
  std::printf("unhealthy:\n");
  for (const auto& p : problems) std::printf("  %s\n", p.c_str());
  print_warnings();
  return kExitFailure;
}

}  // namespace ductwork::cli
