// `ductwork signal NAME [--key KEY_JSON] [--idempotency-key K] [--json]
// [VALUE_JSON]` (SPEC §18): delivers an event to every branch waiting for
// it (engine/events.h).
#include <cstdio>

#include "cli/bootstrap.h"
#include "cli/json_argument.h"
#include "engine/events.h"

namespace ductwork::cli {

int cmd_signal(const Args& args) {
  const char* usage = "usage: ductwork signal NAME [--key KEY_JSON] [--idempotency-key KEY] [--json] [VALUE_JSON]";
  if (args.positionals.empty() || args.positionals.size() > 2) throw BadInput(usage);
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  const auto max_bytes = static_cast<size_t>(boot.config().job_worker.max_output_bytes);
  EventSignal signal;
  signal.name = args.positionals[0];
  signal.value = args.positionals.size() == 2 ? parse_json_argument(args.positionals[1], "VALUE_JSON", max_bytes)
                                              : Json(nullptr);
  if (const std::string* key = args.option("key")) signal.key = parse_json_argument(*key, "--key", max_bytes);
  if (const std::string* key = args.option("idempotency-key")) {
    if (key->empty()) throw BadInput("--idempotency-key needs a value");
    signal.idempotency_key = *key;
  }
  auto store = boot.open_store();
  SignalOutcome outcome;
  try {
    outcome = signal_event(*store, signal, boot.config().events.retention);
  } catch (const EventRefused& e) {
    throw BadInput(std::string("cannot signal: ") + e.what());
  }
  if (args.flag("json")) {
    Json::Array pipelines;
    for (const std::string& id : outcome.pipeline_ids) pipelines.emplace_back(id);
    Json doc = Json::object({{"event_id", outcome.event_id},
                             {"delivered", outcome.delivered},
                             {"kept", outcome.kept},
                             {"repeated", outcome.repeated},
                             {"pipeline_ids", Json(std::move(pipelines))}});
    std::printf("%s\n", doc.dump().c_str());
    return kExitOk;
  }
  if (outcome.repeated) {
    std::printf("event %s was delivered before under this idempotency key (%lld branch%s%s); nothing was sent again\n",
                signal.name.c_str(), static_cast<long long>(outcome.delivered), outcome.delivered == 1 ? "" : "es",
                outcome.kept ? ", kept for a later await" : "");
  } else if (outcome.kept) {
    std::printf("no branch waits for event %s: kept %g s for a later await (event %s)\n", signal.name.c_str(),
                boot.config().events.retention, outcome.event_id.c_str());
  } else {
    std::printf("delivered event %s to %lld branch%s of %zu pipeline%s (event %s)\n", signal.name.c_str(),
                static_cast<long long>(outcome.delivered), outcome.delivered == 1 ? "" : "es",
                outcome.pipeline_ids.size(), outcome.pipeline_ids.size() == 1 ? "" : "s", outcome.event_id.c_str());
  }
  return kExitOk;
}

}  // namespace ductwork::cli
