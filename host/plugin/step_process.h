#pragma once

#include <sys/types.h>

#include <atomic>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin/step_outcome.h"
#include "plugin/host_api.h"
#include "plugin/process_manifest.h"
#include "store/store_types.h"
#include "util/logger.h"

namespace ductwork {

// The process-step protocol's version (docs/process-steps.md): the hello
// of a step process must state it.
constexpr int kProcessStepProtocol = 1;

// A step process that could not be started or did not answer its
// handshake; what() says which and why.
class StepProcessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One running step process of a manifest (SPEC §19): the command, started
// in its own process group with only descriptors 0-2 (stdin a socket the
// host writes requests to, stdout a pipe of replies, stderr a pipe whose
// lines go to the host's log), killed with this thread's death
// (PR_SET_PDEATHSIG) so a worker process that dies leaves none behind.
// Messages are JSON objects, one per line. Not thread-safe: each worker
// thread has its own (ProcessSteps).
class StepProcess {
 public:
  StepProcess(std::shared_ptr<const ProcessManifest> manifest, Logger& logger);
  ~StepProcess();
  StepProcess(const StepProcess&) = delete;
  StepProcess& operator=(const StepProcess&) = delete;

  // Starts the command and reads its hello within `seconds`: the protocol
  // version and the steps served, every one of the manifest's among them.
  // Throws StepProcessError (the process is gone by then).
  void start(double seconds);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // What the hello said it serves.
  const std::vector<std::string>& served() const { return served_; }

  // Runs one execution of `job` and serves the process's requests meanwhile
  // (log, context get/set, cancelled) through the host functions a `.so`
  // step is given, with `scope`. The step process dying meanwhile is a
  // crash of the execution (outcome.crashed), as is a protocol violation,
  // after which the process is killed; the next execution starts a new one.
  // `pid_slot`, when given, holds the process's pid while it runs (what
  // ends a step that outlives its timeout).
  StepOutcome execute(const ClaimedJob& job, StepCallScope& scope, std::atomic<int>* pid_slot);

  // Closes stdin: the process's cue to exit.
  void close_stdin();
  // close_stdin, then waits up to `seconds` for the process to exit, then
  // kills its process group.
  void stop(double seconds);

 private:
  enum class Read { kLine, kTimeout, kClosed, kTooLong };
  // The next line of stdout (without its newline), waiting at most
  // `wait_ms` (-1: until one comes or stdout closes); stderr is drained and
  // logged meanwhile.
  Read read_line(std::string* line, int wait_ms, size_t max_bytes);
  // Logs each complete line of the stderr buffer (`all`: the rest too).
  void log_stderr(bool all);
  bool send(const std::string& message);
  // Kills the process group and waits for it; how it ended ("exited with
  // status 1", "was killed by SIGKILL"). `grace_ms`: how long it may take
  // to exit on its own first.
  std::string end(int grace_ms);
  void close_fds();
  // The error a broken process leaves: kills it, and names what happened
  // with the last lines it wrote on stderr as the backtrace.
  StepOutcome died(const ClaimedJob& job, const std::string& klass, const std::string& what, bool crashed);

  std::shared_ptr<const ProcessManifest> manifest_;
  Logger& logger_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
  std::deque<std::string> err_tail_;  // the last stderr lines, for a crash's report
  std::vector<std::string> served_;
  const ClaimedJob* current_ = nullptr;  // the job whose step runs (stderr attribution)
};

}  // namespace ductwork
