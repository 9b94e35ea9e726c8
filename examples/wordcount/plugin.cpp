// The wordcount plugin's entry points. Steps, in pipeline order:
//   file_steps.cpp    ListFiles    directory -> its files
//   count_steps.cpp   CountWords   one file  -> {word: count}
//                     MergeCounts  many {word: count} -> one
//   report_steps.cpp  TopWords     {word: count} -> [[word, count], ...]
//                     FormatReport [[word, count], ...] -> text
#include <ductwork/step.hpp>

DUCTWORK_PLUGIN("wordcount", "1.0.0");
