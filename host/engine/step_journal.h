#pragma once

#include <string>

namespace ductwork {

// What a job worker tells the process it runs in about its steps, for what
// must outlive the process's death: which claims had started (a claim that
// never started costs no crash) and which step a fatal signal interrupted.
// The engine calls it; the process layer implements it
// (process/step_journal.h). A worker without one records nothing.
class StepJournal {
 public:
  virtual ~StepJournal() = default;
  // A claimed step is taken off the worker's queue: from now on the
  // process's death is a crash of it.
  virtual void step_started(const std::string& execution_id) = 0;
  // The thread is in the step's user code (`execution_id`), or has left it
  // (""): what a crash report names.
  virtual void running(const std::string& execution_id) = 0;
  // Every step this thread started has its result committed.
  virtual void steps_settled() = 0;
};

}  // namespace ductwork
