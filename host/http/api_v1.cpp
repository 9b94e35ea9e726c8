#include "http/api_v1.h"

#include <charconv>
#include <string>
#include <vector>

#include "engine/api_documents.h"
#include "engine/catalog.h"
#include "engine/control.h"
#include "engine/events.h"
#include "engine/flow_control.h"
#include "engine/run_context.h"
#include "engine/pipeline_summary.h"
#include "engine/retention.h"
#include "engine/run_policy.h"
#include "engine/schedule_list.h"
#include "engine/status_document.h"
#include "engine/trigger.h"
#include "metrics/exposition.h"
#include "store/store_error.h"
#include "util/json_limits.h"

namespace ductwork::http {
namespace {

[[noreturn]] void bad_request(const std::string& message) { throw HttpError(400, "bad_request", message); }
[[noreturn]] void unprocessable(const std::string& message) { throw HttpError(422, "unprocessable", message); }

// The request body as a JSON object ({} when empty), its members checked
// against `allowed`. Nested at most as deep as an argument may be, inside
// an object and a list.
Json body_object(const Request& request, std::initializer_list<const char*> allowed) {
  if (request.body.find_first_not_of(" \t\r\n") == std::string::npos) return Json::object();
  if (json_nesting_depth(request.body, kMaxJsonDepth + 3) > kMaxJsonDepth + 2) {
    unprocessable("the body nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels inside its values");
  }
  Json body;
  try {
    body = parse_exact_json(request.body);
  } catch (const JsonError& e) {
    bad_request(std::string("the body is not valid JSON: ") + e.what());
  } catch (const InexactNumber& e) {
    unprocessable(std::string("the body: ") + e.what());
  }
  if (!body.is_object()) bad_request(std::string("the body must be a JSON object, not a ") + json_kind(body));
  for (const auto& [key, _] : body.as_object()) {
    bool known = false;
    std::string list;
    for (const char* a : allowed) {
      known = known || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!known) unprocessable("unknown member '" + key + "' in the body (expected " + (list.empty() ? "none" : list) + ")");
  }
  return body;
}

void need_method(const Request& request, const char* method) {
  if (request.method != method) {
    throw HttpError(405, "method_not_allowed", request.method + " is not allowed here; use " + method);
  }
}

const std::string* query(const Request& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? nullptr : &it->second;
}

// A page cursor: the last entry's (time, id) — a pipeline's triggered_at,
// a step's started_at — hex-encoded so it is opaque and URL-safe.
std::string encode_cursor(const std::string& at, const std::string& id) {
  static const char* kHex = "0123456789abcdef";
  std::string plain = at + "|" + id, out;
  for (unsigned char c : plain) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::pair<std::string, std::string> decode_cursor(const std::string& cursor, const std::string& name = "cursor") {
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  std::string plain;
  const std::string refusal = name + ": not a cursor this API returned";
  if (cursor.size() % 2 != 0 || cursor.size() > 512) bad_request(refusal);
  for (size_t i = 0; i < cursor.size(); i += 2) {
    int hi = nibble(cursor[i]), lo = nibble(cursor[i + 1]);
    if (hi < 0 || lo < 0) bad_request(refusal);
    plain += static_cast<char>(hi * 16 + lo);
  }
  size_t bar = plain.find('|');
  if (bar == std::string::npos || !database_time_from_iso(plain.substr(0, bar))) bad_request(refusal);
  return {plain.substr(0, bar), plain.substr(bar + 1)};
}

// Every query parameter is one of `allowed`.
void only_parameters(const Request& request, std::initializer_list<const char*> allowed) {
  for (const auto& [name, _] : request.query) {
    bool known = false;
    std::string list;
    for (const char* a : allowed) {
      known = known || name == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!known) bad_request("unknown query parameter '" + name + "' (expected " + (list.empty() ? "none" : list) + ")");
  }
}

// The whole number `name` from 1 to `max`, else `fallback` when absent.
int page_limit(const Request& request, const char* name, int fallback, int max) {
  const std::string* text = query(request, name);
  if (!text) return fallback;
  int limit = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), limit);
  if (ec != std::errc() || end != text->data() + text->size() || limit < 1 || limit > max) {
    bad_request(std::string(name) + " '" + *text + "' is not a whole number from 1 to " + std::to_string(max));
  }
  return limit;
}

// A refusal of revive / cancel / resume: 404 for an unknown id, else 409.
template <class Refused>
[[noreturn]] void refused(const Refused& e, const std::string& action) {
  if (e.unknown()) throw HttpError(404, "not_found", e.what());
  throw HttpError(409, "conflict", "cannot " + action + ": " + e.what());
}

}  // namespace

Response ApiV1::handle(const Request& request) {
  const auto& s = request.segments;
  if (s.size() == 1 && s[0] == "healthz") {
    need_method(request, "GET");
    return json_response(200, Json::object({{"status", "ok"}}));
  }
  if (s.size() == 1 && s[0] == "readyz") {
    need_method(request, "GET");
    return readiness();
  }
  if (s.size() == 1 && s[0] == "metrics") {
    need_method(request, "GET");
    return metrics_text();
  }
  if (s.size() >= 3 && s[0] == "api" && s[1] == "v1") {
    const std::string& what = s[2];
    if (what == "pipelines" && s.size() == 3) {
      need_method(request, "GET");
      return list_pipelines(request);
    }
    if (what == "pipelines" && s.size() == 4) {
      if (request.method == "DELETE") return remove(s[3]);
      need_method(request, "GET");
      return pipeline(s[3]);
    }
    if (what == "pipelines" && s.size() == 5 && s[4] == "context") {
      need_method(request, "GET");
      return context(s[3], request);
    }
    if (what == "pipelines" && s.size() == 5 && (s[4] == "summary" || s[4] == "steps")) {
      need_method(request, "GET");
      return s[4] == "summary" ? summary(s[3], request) : steps(s[3], request);
    }
    if (what == "pipelines" && s.size() == 5) {
      need_method(request, "POST");
      if (s[4] == "trigger") return trigger(s[3], request);
      if (s[4] == "revive") return revive(s[3], request);
      if (s[4] == "cancel") return cancel(s[3], request);
      if (s[4] == "resume") return resume(s[3], request);
      if (s[4] == "pause" || s[4] == "unpause") return pause(s[3], request, s[4] == "pause");
    }
    if (s.size() == 3 && what == "definitions") {
      need_method(request, "GET");
      return json_response(200, Json::object({{"definitions", definitions_document(context_.definitions)}}));
    }
    if (s.size() == 3 && what == "processes") {
      need_method(request, "GET");
      return processes();
    }
    if (s.size() == 3 && what == "events") {
      need_method(request, "POST");
      return signal(request);
    }
    if (s.size() == 3 && what == "schedules") {
      need_method(request, "GET");
      return schedules();
    }
    if (s.size() == 3 && what == "plugins") {
      need_method(request, "GET");
      return json_response(200, plugins_document(context_.config.plugins_directory, context_.plugins));
    }
  }
  std::string path;
  for (const auto& part : s) path += "/" + part;
  throw HttpError(404, "not_found", "no such endpoint: " + (path.empty() ? "/" : path));
}

Response ApiV1::readiness() {
  std::vector<std::string> pending;
  try {
    auto store = context_.stores.take();
    pending = store->pending_migrations();
  } catch (const std::exception& e) {
    return json_response(503, Json::object({{"status", "unavailable"}, {"reason", std::string("database: ") + e.what()}}));
  }
  if (!pending.empty()) {
    return json_response(503, Json::object({{"status", "unavailable"},
                                            {"reason", "migrations not applied: " + std::to_string(pending.size())},
                                            {"pending_migrations", json_strings(pending)}}));
  }
  return json_response(200, Json::object({{"status", "ready"}}));
}

Response ApiV1::list_pipelines(const Request& request) {
  only_parameters(request, {"status", "pipeline", "since", "error_class", "q", "limit", "cursor"});
  ListFilter filter;
  if (const std::string* status = query(request, "status")) {
    if (!kPipelineStatuses.count(*status)) {
      bad_request("status '" + *status + "' is not a status (expected one of " + pipeline_statuses_text() + ")");
    }
    filter.status = *status;
  }
  if (const std::string* name = query(request, "pipeline")) filter.pipeline = *name;
  if (const std::string* klass = query(request, "error_class")) filter.error_class = *klass;
  if (const std::string* text = query(request, "q")) filter.args_text = *text;
  if (const std::string* since = query(request, "since")) {
    filter.since = database_time_from_iso(*since);
    if (!filter.since) bad_request("since '" + *since + "' is not a UTC time such as 2026-12-01T16:55:24Z");
  }
  const int limit = page_limit(request, "limit", kDefaultPageSize, kMaxPageSize);
  if (const std::string* cursor = query(request, "cursor")) filter.after = decode_cursor(*cursor);
  filter.limit = limit + 1;  // one more tells whether a next page exists
  std::vector<PipelineSummary> rows = context_.stores.take()->reads().list_pipelines(filter);
  Json out = Json::object({{"pipelines", Json::array()}, {"next_cursor", nullptr}});
  for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(limit); ++i) {
    out["pipelines"].push_back(summary_document(rows[i]));
  }
  if (rows.size() > static_cast<size_t>(limit)) {
    out["next_cursor"] = encode_cursor(rows[limit - 1].triggered_at, rows[limit - 1].id);
  }
  return json_response(200, out);
}

Response ApiV1::pipeline(const std::string& id) {
  auto report = pipeline_report(*context_.stores.take(), id);
  if (!report) throw HttpError(404, "not_found", "unknown pipeline id '" + id + "'");
  return json_response(200, *report);
}

Response ApiV1::summary(const std::string& id, const Request& request) {
  only_parameters(request, {"run"});
  const std::string* run = query(request, "run");
  try {
    auto document = pipeline_summary(*context_.stores.take(), id, run ? std::optional<std::string>(*run) : std::nullopt);
    if (!document) throw HttpError(404, "not_found", "unknown pipeline id '" + id + "'");
    return json_response(200, *document);
  } catch (const UnknownRun& e) {
    throw HttpError(404, "not_found", e.what());
  }
}

Response ApiV1::steps(const std::string& id, const Request& request) {
  only_parameters(request, {"run", "after", "limit"});
  const int limit = page_limit(request, "limit", kDefaultStepsPage, kMaxStepsPage);
  std::optional<std::pair<std::string, std::string>> after;
  if (const std::string* cursor = query(request, "after")) after = decode_cursor(*cursor, "after");
  const std::string* run = query(request, "run");
  try {
    auto page = pipeline_steps(*context_.stores.take(), id, run ? std::optional<std::string>(*run) : std::nullopt,
                               after, limit);
    if (!page) throw HttpError(404, "not_found", "unknown pipeline id '" + id + "'");
    page->document["next_cursor"] = page->next ? Json(encode_cursor(page->next->first, page->next->second)) : Json();
    return json_response(200, page->document);
  } catch (const UnknownRun& e) {
    throw HttpError(404, "not_found", e.what());
  }
}

Response ApiV1::trigger(const std::string& name, const Request& request) {
  Json body = body_object(request, {"args", "idempotency_key", "priority"});
  TriggerTarget target = find_triggerable(context_.definitions, context_.plugins, name);
  if (!target.definition) {
    if (target.unknown) throw HttpError(404, "not_found", target.problem);
    unprocessable(target.problem);
  }
  Json args = Json::array();
  if (body.contains("args")) {
    args = body["args"];
    if (!args.is_array()) unprocessable(std::string("args must be a JSON array, not a ") + json_kind(args));
  }
  const auto max_bytes = static_cast<size_t>(context_.config.job_worker.max_output_bytes);
  if (std::string text = args.dump(); text.size() > max_bytes) {
    unprocessable("args are " + std::to_string(text.size()) + " bytes of JSON, more than the limit of " +
                  std::to_string(max_bytes) + " (job_worker.max_output_bytes)");
  }
  std::optional<std::string> key;
  if (body.contains("idempotency_key")) {
    if (!body["idempotency_key"].is_string()) unprocessable("idempotency_key must be a string");
    key = body["idempotency_key"].as_string();
    if (std::string problem = idempotency_key_problem(*key); !problem.empty()) unprocessable(problem);
  }
  std::optional<int> priority;
  if (body.contains("priority")) {
    const Json& p = body["priority"];
    if (!p.is_int64() || p.as_int() < 0 || p.as_int() > kMaxPriority) {
      unprocessable("priority must be a whole number from 0 (claimed first) to " + std::to_string(kMaxPriority));
    }
    priority = static_cast<int>(p.as_int());
  }
  TriggeredPipeline triggered = trigger_pipeline(*context_.stores.take(), *target.definition, args, key, priority);
  if (!triggered.created && triggered.pipeline != name) {
    throw HttpError(409, "conflict",
                    "idempotency_key was given before to trigger " + triggered.pipeline + " (pipeline " +
                        triggered.pipeline_id + "), not " + name);
  }
  return json_response(triggered.created ? 201 : 200,
                       Json::object({{"id", triggered.pipeline_id}, {"pipeline", name}, {"created", triggered.created}}));
}

Response ApiV1::context(const std::string& id, const Request& request) {
  for (const auto& [name, _] : request.query) {
    if (name != "run") bad_request("unknown query parameter '" + name + "' (expected run)");
  }
  std::optional<RunRef> run;
  if (const std::string* text = query(request, "run")) {
    run = parse_run_ref(*text);
    if (!run) bad_request("run '" + *text + "' is neither a run number (1 is the pipeline's first run) nor a run id");
  }
  std::optional<Json> doc;
  try {
    doc = context_document(*context_.stores.take(), id, run);
  } catch (const UnknownRun& e) {
    throw HttpError(404, "not_found", e.what());
  }
  if (!doc) throw HttpError(404, "not_found", "unknown pipeline id '" + id + "'");
  return json_response(200, *doc);
}

Response ApiV1::revive(const std::string& id, const Request& request) {
  Json body = body_object(request, {"duplicate_context", "context_from"});
  ContextSource source;
  if (body.contains("duplicate_context")) {
    if (!body["duplicate_context"].is_bool()) unprocessable("duplicate_context must be true or false");
    if (body["duplicate_context"].as_bool()) source.kind = ContextSource::Kind::kNewestWithContext;
  }
  if (body.contains("context_from")) {
    const Json& from = body["context_from"];
    if (!from.is_int64() || from.as_int() < 1) {
      unprocessable("context_from must be a run number (1 is the pipeline's first run)");
    }
    source.kind = ContextSource::Kind::kRunNumber;
    source.run_number = from.as_int();
  }
  try {
    std::string run_id = revive_pipeline(*context_.stores.take(), id, source);
    return json_response(201, Json::object({{"id", id}, {"run_id", run_id}}));
  } catch (const ReviveRefused& e) {
    refused(e, "revive");
  } catch (const UnknownRun& e) {
    unprocessable(std::string("context_from: ") + e.what());
  }
}

Response ApiV1::cancel(const std::string& id, const Request& request) {
  body_object(request, {});
  try {
    CancelResult result = cancel_pipeline(*context_.stores.take(), id);
    return json_response(200, Json::object({{"id", id},
                                            {"run_id", result.run_id},
                                            {"branches_cancelled", result.branches},
                                            {"jobs_withdrawn", result.withdrawn},
                                            {"children_cancelled", json_strings(result.children)}}));
  } catch (const ControlRefused& e) {
    refused(e, "cancel");
  }
}

Response ApiV1::remove(const std::string& id) {
  // Archived first when ductwork.yml names an archive (retention.archive).
  std::unique_ptr<PruneArchive> archive;
  try {
    if (context_.config.retention.archive) archive = std::make_unique<PruneArchive>(*context_.config.retention.archive);
    const int64_t rows = delete_pipeline(*context_.stores.take(), id, archive.get());
    return json_response(200, Json::object({{"id", id}, {"deleted", true}, {"rows", rows},
                                            {"archived", archive ? Json(archive->directory()) : Json()}}));
  } catch (const ControlRefused& e) {
    refused(e, "delete");
  } catch (const ArchiveError& e) {
    throw HttpError(500, "archive_failed", std::string("nothing was deleted: ") + e.what());
  }
}

Response ApiV1::resume(const std::string& id, const Request& request) {
  Json body = body_object(request, {"value", "node"});
  std::string value = body.contains("value") ? body["value"].dump() : "null";
  const auto max_bytes = static_cast<size_t>(context_.config.job_worker.max_output_bytes);
  if (value.size() > max_bytes) {
    unprocessable("value is " + std::to_string(value.size()) + " bytes of JSON, more than the limit of " +
                  std::to_string(max_bytes) + " (job_worker.max_output_bytes)");
  }
  std::optional<std::string> node;
  if (body.contains("node")) {
    if (!body["node"].is_string() || body["node"].as_string().empty()) {
      unprocessable("node must be a node name or a step class");
    }
    node = body["node"].as_string();
  }
  try {
    ResumeResult result = resume_pipeline(*context_.stores.take(), id, value, node);
    return json_response(200, Json::object({{"id", id}, {"branches_resumed", result.resumed}}));
  } catch (const ControlRefused& e) {
    refused(e, "resume");
  }
}

Response ApiV1::signal(const Request& request) {
  Json body = body_object(request, {"name", "key", "value", "idempotency_key"});
  if (!body.contains("name") || !body["name"].is_string()) unprocessable("name must be the event's name, a string");
  EventSignal event;
  event.name = body["name"].as_string();
  if (body.contains("key")) event.key = body["key"];
  event.value = body.contains("value") ? body["value"] : Json(nullptr);
  const auto max_bytes = static_cast<size_t>(context_.config.job_worker.max_output_bytes);
  const size_t value_bytes = event.value.dump().size();
  if (value_bytes > max_bytes) {
    unprocessable("value is " + std::to_string(value_bytes) + " bytes of JSON, more than the limit of " +
                  std::to_string(max_bytes) + " (job_worker.max_output_bytes)");
  }
  if (body.contains("idempotency_key")) {
    if (!body["idempotency_key"].is_string() || body["idempotency_key"].as_string().empty()) {
      unprocessable("idempotency_key must be a non-empty string");
    }
    event.idempotency_key = body["idempotency_key"].as_string();
  }
  try {
    const SignalOutcome outcome = signal_event(*context_.stores.take(), event, context_.config.events.retention);
    Json::Array pipelines;
    for (const std::string& id : outcome.pipeline_ids) pipelines.emplace_back(id);
    return json_response(200, Json::object({{"event_id", outcome.event_id},
                                            {"delivered", outcome.delivered},
                                            {"kept", outcome.kept},
                                            {"repeated", outcome.repeated},
                                            {"pipeline_ids", Json(std::move(pipelines))}}));
  } catch (const EventRefused& e) {
    unprocessable(e.what());
  }
}

Response ApiV1::pause(const std::string& name, const Request& request, bool paused) {
  body_object(request, {});
  try {
    const bool changed = set_pipeline_paused(*context_.stores.take(), context_.definitions, name, paused);
    return json_response(200, Json::object({{"pipeline", name}, {"paused", paused}, {"changed", changed}}));
  } catch (const ControlRefused& e) {
    refused(e, paused ? "pause" : "unpause");
  }
}

Response ApiV1::processes() {
  Json out = Json::array();
  for (const ProcessInfo& p : context_.stores.take()->reads().processes()) out.push_back(process_document(p));
  return json_response(200, Json::object({{"processes", out}}));
}

Response ApiV1::schedules() {
  auto store = context_.stores.take();
  const SysSeconds now = std::chrono::time_point_cast<std::chrono::seconds>(store->clock().wall());
  return json_response(200, schedules_document(*store, context_.definitions, now));
}

Response ApiV1::metrics_text() {
  // The database's figures first: a scrape that cannot read them fails
  // whole (503) rather than show counters without gauges.
  MetricGauges gauges = context_.stores.take()->reads().metric_gauges();
  Response r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::set<std::string> defined;
  for (const auto& [name, _] : context_.definitions.pipelines) defined.insert(name);
  r.body = metrics::exposition(context_.collector.collect(), gauges, defined);
  return r;
}

}  // namespace ductwork::http
