#include "engine/run_context.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace ductwork {
namespace {

std::string no_such_run(const std::string& pipeline_id, int64_t number, size_t runs) {
  return "pipeline " + pipeline_id + " has no run " + std::to_string(number) + " (its runs are numbered 1 to " +
         std::to_string(runs) + ", oldest first)";
}

}  // namespace

std::optional<int64_t> parse_run_number(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n < 1) return std::nullopt;
  return n;
}

std::optional<RunRef> parse_run_ref(const std::string& text) {
  if (std::optional<int64_t> number = parse_run_number(text)) return RunRef{*number, ""};
  // A UUID: 8-4-4-4-12 hexadecimal digits.
  if (text.size() != 36) return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return RunRef{0, text};
}

std::optional<std::string> context_source_run(const std::string& pipeline_id, const std::vector<RunContextCount>& runs,
                                              const ContextSource& source) {
  switch (source.kind) {
    case ContextSource::Kind::kNone:
      return std::nullopt;
    case ContextSource::Kind::kNewestWithContext:
      // A revive without the copy leaves an empty newest run, and a run's
      // on_halt may be all that wrote to it: "the context" an operator
      // means is the newest that has any.
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->values > 0) return it->run_id;
      }
      return std::nullopt;
    case ContextSource::Kind::kRunNumber:
      if (source.run_number < 1 || static_cast<uint64_t>(source.run_number) > runs.size()) {
        throw UnknownRun(no_such_run(pipeline_id, source.run_number, runs.size()));
      }
      return runs[static_cast<size_t>(source.run_number - 1)].run_id;
  }
  return std::nullopt;
}

std::optional<Json> context_document(Store& store, const std::string& pipeline_id,
                                     const std::optional<RunRef>& run_ref) {
  std::optional<PipelineRecord> header = store.reads().pipeline_header(pipeline_id);
  if (!header) return std::nullopt;
  std::vector<RunContextCount> runs = store.reads().run_context_counts(pipeline_id);
  if (runs.empty()) throw UnknownRun("pipeline " + pipeline_id + " has no run");
  int64_t number = static_cast<int64_t>(runs.size());
  if (run_ref && !run_ref->id.empty()) {
    auto it = std::find_if(runs.begin(), runs.end(), [&](const RunContextCount& r) { return r.run_id == run_ref->id; });
    if (it == runs.end()) throw UnknownRun("pipeline " + pipeline_id + " has no run '" + run_ref->id + "'");
    number = static_cast<int64_t>(it - runs.begin()) + 1;
  } else if (run_ref) {
    number = run_ref->number;
  }
  if (number < 1 || static_cast<uint64_t>(number) > runs.size()) {
    throw UnknownRun(no_such_run(pipeline_id, number, runs.size()));
  }
  const RunContextCount& run = runs[static_cast<size_t>(number - 1)];
  Json context = Json::object();
  for (const ContextRecord& value : store.reads().context_values(run.run_id, std::numeric_limits<int>::max())) {
    std::optional<Json> parsed = try_parse_json(value.value_json);
    context[value.key] = parsed ? std::move(*parsed) : Json();
  }
  Json list = Json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    list.push_back(Json::object({{"run", static_cast<int64_t>(i + 1)},
                                 {"id", runs[i].run_id},
                                 {"status", runs[i].status},
                                 {"values", runs[i].values}}));
  }
  return Json::object({{"id", header->id},
                       {"pipeline", header->klass},
                       {"run", number},
                       {"run_id", run.run_id},
                       {"run_status", run.status},
                       {"context", std::move(context)},
                       {"runs", std::move(list)}});
}

}  // namespace ductwork
