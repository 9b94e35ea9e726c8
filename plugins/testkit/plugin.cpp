// The testkit plugin's entry points. Its steps are registered in the other
// source files of this directory:
//   value_steps.cpp    Echo, Inc, Double, Sum, Range, Route
//   failure_steps.cpp  Fail, FailTimes, FailPermanently, CrashTimes, Segfault
//   sleep_step.cpp     Sleep, Gate, Pause
//   context_steps.cpp  ContextSet, ContextGet, RecordHalt
//   key_step.cpp       RecordKey
#include <ductwork/step.hpp>

DUCTWORK_PLUGIN("testkit", "1.0.0");
