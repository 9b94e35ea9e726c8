#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "plugin/step_process.h"

namespace ductwork {

// The step processes of one worker thread (SPEC §19): one per manifest,
// started at its first execution and kept alive between executions. One
// that died, broke the protocol or was killed is replaced at the next
// execution. Destroying it stops them all: stdin closed, then each is
// waited for up to the shutdown timeout and killed past it.
class ProcessSteps {
 public:
  ProcessSteps(Logger& logger, double handshake_seconds, double shutdown_seconds)
      : logger_(logger), handshake_seconds_(handshake_seconds), shutdown_seconds_(shutdown_seconds) {}
  ~ProcessSteps();
  ProcessSteps(const ProcessSteps&) = delete;
  ProcessSteps& operator=(const ProcessSteps&) = delete;

  // Runs `job` in the manifest's process. A command that cannot be started
  // or does not answer its handshake is a crash of the execution
  // (ductwork::StepProcessFailedToStart), counted against its crash budget.
  StepOutcome run(const std::shared_ptr<const ProcessManifest>& manifest, const ClaimedJob& job,
                  StepCallScope& scope, std::atomic<int>* pid_slot);

 private:
  Logger& logger_;
  double handshake_seconds_;
  double shutdown_seconds_;
  std::map<std::string, std::unique_ptr<StepProcess>> processes_;  // by manifest path
};

}  // namespace ductwork
