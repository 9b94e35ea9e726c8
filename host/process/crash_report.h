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
// handler names as the crashed one. A lifecycle hook's thread names the
// hook instead ("hook on_worker_start open_pool (plugin pools)").
void set_running_execution(const std::string& execution_id);

struct CrashReport {
  std::string execution_id;
  std::string backtrace;  // frames, nearest the crash first, plugin frames named
};

// Supervisor: the report child `pid` left in `folder` (removed once read);
// nullopt when it left none. Frames in a plugin's private copy are shown
// against the installed file in `plugins_directory` and named from its
// symbols (FrameSymbols).
// A child that ends on purpose says why in one line of
// <folder>/<pid>.exit (no-op without a folder); its supervisor takes it
// (removed once read), nullopt when there is none.
void write_exit_note(const std::string& folder, const std::string& text);
std::optional<std::string> take_exit_note(const std::string& folder, pid_t pid);

// True when a crash report's first line names a hook, not an execution.
bool crashed_in_hook(const CrashReport& report);

std::optional<CrashReport> take_crash_report(const std::string& folder, pid_t pid,
                                             const std::string& plugins_directory);

}  // namespace ductwork
