#include "process/step_journal.h"

#include "process/crash_report.h"
#include "process/started_log.h"

namespace ductwork {

void ProcessStepJournal::step_started(const std::string& execution_id) { log_step_started(execution_id); }
void ProcessStepJournal::running(const std::string& execution_id) { set_running_execution(execution_id); }
void ProcessStepJournal::steps_settled() { log_steps_settled(); }

}  // namespace ductwork
