#pragma once
// Runs a program as a child process (posix_spawn) and collects its exit
// status, stdout and stderr. Output goes to anonymous in-memory files rather
// than pipes, so a chatty child never blocks on a full pipe and the parent
// needs no reader threads; the output can be read while the child runs.
#include <sys/types.h>

#include <chrono>
#include <string>

#include "temp_dir.h"
#include <utility>
#include <vector>

namespace ductwork::testsupport {

struct ProcessResult {
  int exit_code = -1;     // the exit status when the child exited, else -1
  int term_signal = 0;    // the signal that ended the child, else 0
  bool timed_out = false; // the child outlived its timeout and was SIGKILLed
  std::string out;        // everything written to stdout
  std::string err;        // everything written to stderr
  double seconds = 0;     // wall time from spawn to reaping
  long max_rss_kb = 0;    // the child's peak resident memory (its own, not its children's), in KiB

  bool exited() const { return exit_code >= 0; }
  // "exit 2" / "signal 9" / "timed out", for assertion messages.
  std::string describe() const;
};

struct ProcessOptions {
  std::string cwd;                                         // empty: the parent's
  // Set (or override) in the child. DUCTWORK_* variables of the parent's
  // own environment never reach the child; only those listed here do.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> unset_env;                      // removed from the child's environment
  double timeout_seconds = 60;                             // then SIGKILL (whole process group)
};

// A running child. The child is the leader of its own process group, stdin
// is /dev/null.
class Subprocess {
 public:
  Subprocess(const std::vector<std::string>& argv, const ProcessOptions& options = {});
  ~Subprocess();  // kills (SIGKILL) and reaps a child still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();                    // reaps it if it has exited
  void signal(int sig);              // to the child only (not its group)
  // Output written so far (the child may still be running).
  std::string stdout_so_far() const;
  std::string stderr_so_far() const;
  // Waits until the child exits or `timeout_seconds` pass (then SIGKILL and
  // timed_out = true), and returns everything collected.
  ProcessResult wait(double timeout_seconds);
  ProcessResult wait() { return wait(timeout_seconds_); }

 private:
  bool reap(bool block);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  long max_rss_kb_ = 0;
  double timeout_seconds_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point ended_;
};

// Spawns, waits (with the options' timeout) and returns the result.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

}  // namespace ductwork::testsupport
