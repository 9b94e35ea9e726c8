#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace ductwork {

// Backtraces of worker children that die of a fatal signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT), for the crashed execution's
// error_backtrace. The child's handler writes "<execution id>\n" and the
// crashing thread's frames to <folder>/<pid>.crash, then dies of the same
// signal as it would have (the wait status still names it). The supervisor
// takes the report when it reaps the child.

// In a worker child, once: installs the handler. `folder` is the
// supervisor's (0700) crash folder.
void install_crash_report(const std::string& folder);

// The execution this thread is running ("" once it returned): what the
// handler names as the crashed one.
void set_running_execution(const std::string& execution_id);

struct CrashReport {
  std::string execution_id;
  std::string backtrace;  // frames, nearest the crash first, plugin frames named
};

// Supervisor: the report child `pid` left in `folder` (removed once read);
// nullopt when it left none. Frames in a plugin's private copy are shown
// against the installed file in `plugins_directory` and named from its
// symbols (FrameSymbols).
std::optional<CrashReport> take_crash_report(const std::string& folder, pid_t pid,
                                             const std::string& plugins_directory);

}  // namespace ductwork
