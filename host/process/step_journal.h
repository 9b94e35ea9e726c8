#pragma once

#include "engine/step_journal.h"

namespace ductwork {

// The engine's StepJournal in a host process: the started log a supervisor
// reads after a worker child died (started_log.h) and the execution a
// crash report names (crash_report.h). Both are no-ops where they were
// never opened (a threaded host, a test).
class ProcessStepJournal final : public StepJournal {
 public:
  void step_started(const std::string& execution_id) override;
  void running(const std::string& execution_id) override;
  void steps_settled() override;
};

}  // namespace ductwork
