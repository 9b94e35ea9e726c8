#include "plugin/process_steps.h"

#include <chrono>

#include "engine/error_info.h"
#include "util/clock.h"

namespace ductwork {

ProcessSteps::~ProcessSteps() {
  // Every process is told at once (stdin closed), then each gets what is
  // left of the one shutdown timeout.
  const Clock& clock = Clock::system();  // real waits, as StepProcess's
  const Clock::Instant deadline = clock.after(shutdown_seconds_);
  for (auto& [path, process] : processes_) process->close_stdin();
  for (auto& [path, process] : processes_) {
    const double left = std::chrono::duration<double>(deadline - clock.monotonic()).count();
    process->stop(left > 0 ? left : 0);
  }
}

StepOutcome ProcessSteps::run(const std::shared_ptr<const ProcessManifest>& manifest, const ClaimedJob& job,
                              StepCallScope& scope, std::atomic<int>* pid_slot) {
  std::unique_ptr<StepProcess>& process = processes_[manifest->path];
  if (!process) process = std::make_unique<StepProcess>(manifest, logger_);
  if (!process->running()) {
    try {
      process->start(handshake_seconds_);
      logger_.info("Step process started", Json::object({{"plugin", manifest->name},
                                                         {"step_pid", static_cast<int64_t>(process->pid())},
                                                         {"pipeline", job.pipeline},
                                                         {"step", job.klass}}));
    } catch (const StepProcessError& e) {
      StepOutcome outcome;
      outcome.crashed = true;
      outcome.error = make_error_info("ductwork::StepProcessFailedToStart",
                                      "step process " + manifest->name + " (" + manifest->command.front() + ") " +
                                          e.what());
      return outcome;
    }
  }
  return process->execute(job, scope, pid_slot);
}

}  // namespace ductwork
