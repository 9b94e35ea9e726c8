// The dashboard's list, pipeline, errors and processes pages, and its
// actions (dashboard.h).
#include <Poco/URI.h>

#include <map>
#include <optional>

#include "engine/api_documents.h"
#include "engine/definition.h"
#include "http/dashboard.h"
#include "http/dashboard_graph.h"
#include "http/dashboard_on_halt.h"
#include "http/dashboard_parts.h"
#include "http/html.h"

namespace ductwork::http {
using namespace parts;
namespace {

constexpr int kStepsPerPage = 50;

// An error's class, message and (expandable) backtrace.
std::string error_text(const ErrorRecord& e) {
  std::string out = "<b>" + or_dash(e.error_klass) + "</b>: " + escape_html(truncated(e.error_message.value_or(""), 500));
  if (e.error_backtrace && !e.error_backtrace->empty()) {
    out += details_open_tag("backtrace " + e.step_id + " " + e.at) + "<summary>backtrace</summary><pre>" +
           escape_html(truncated(*e.error_backtrace, 32 * 1024)) + "</pre></details>";
  }
  return out;
}

// Why the run's branches stopped: each halt reason with the node its
// branches stopped at, and each node where branches are parked (dampened)
// until a resume.
std::string stopped_branches(const std::vector<BranchStatusCount>& branches) {
  std::string out;
  auto count = [](int64_t n) { return grouped(n) + (n == 1 ? " branch" : " branches"); };
  for (const auto& b : branches) {
    if (b.status == "halted") {
      out += "<div class=\"error halt\">Halted: <b>" + or_dash(b.halt_reason) + "</b> at <code>" + or_dash(b.node) +
             "</code> (" + count(b.count) + ")</div>";
    } else if (b.status == "dampened") {
      out += "<div class=\"notice parked\">Dampened: parked at <code>" + or_dash(b.node) + "</code> (" +
             count(b.count) + ") until a resume</div>";
    }
  }
  return out;
}

}  // namespace

Response Dashboard::pipelines(const Request& request) {
  // The list is the API's: same filters, same checks, same cursor.
  Request api;
  api.method = "GET";
  api.segments = {"api", "v1", "pipelines"};
  for (const char* name : {"pipeline", "status", "since", "error_class", "q", "cursor"}) {
    if (const std::string* v = param(request.query, name)) api.query[name] = *v;
  }
  api.query["limit"] = "50";
  Json doc = parse_json(api_.handle(api).body);
  std::string body = "<h1>Pipelines</h1><form method=\"get\" action=\"/ui/pipelines\">pipeline <select name=\"pipeline\">"
                     "<option value=\"\">any</option>";
  const std::string* chosen = param(request.query, "pipeline");
  for (const auto& [name, _] : context_.definitions.pipelines) {
    body += "<option" + std::string(chosen && *chosen == name ? " selected" : "") + ">" + escape_html(name) + "</option>";
  }
  body += "</select> status <select name=\"status\"><option value=\"\">any</option>";
  const std::string* status = param(request.query, "status");
  for (const auto& s : kPipelineStatuses) {
    body += "<option" + std::string(status && *status == s ? " selected" : "") + ">" + s + "</option>";
  }
  auto value_of = [&](const char* name) {
    const std::string* v = param(request.query, name);
    return escape_html(v ? *v : "");
  };
  body += "</select> since <input name=\"since\" placeholder=\"2026-12-01T00:00:00Z\" value=\"" + value_of("since") +
          "\"> error class <input name=\"error_class\" placeholder=\"MyError\" value=\"" + value_of("error_class") +
          "\"> arguments contain <input name=\"q\" value=\"" + value_of("q") +
          "\"> <button type=\"submit\">Filter</button></form><table>"
          "<tr><th>id</th><th>pipeline</th><th>status</th><th>triggered at (UTC)</th></tr>";
  for (const Json& p : doc["pipelines"].as_array()) {
    const std::string id = p["id"].as_string();
    body += "<tr><td><a href=\"/ui/pipelines/" + url_encoded(id) + "\"><code>" + escape_html(id) + "</code></a></td><td>" +
            escape_html(p["pipeline"].as_string()) + "</td><td>" + badge(p["status"].as_string()) +
            (p["paused"].is_bool() && p["paused"].as_bool() ? " " + badge("paused") : std::string()) + "</td><td>" +
            escape_html(p["triggered_at"].as_string()) + "</td></tr>";
  }
  body += "</table>";
  if (doc["pipelines"].empty()) body += "<p>No pipeline matches.</p>";
  if (doc["next_cursor"].is_string()) {
    std::string next = "/ui/pipelines?cursor=" + url_encoded(doc["next_cursor"].as_string());
    for (const char* name : {"pipeline", "status", "since", "error_class", "q"}) {
      if (const std::string* v = param(request.query, name)) next += std::string("&") + name + "=" + url_encoded(*v);
    }
    body += "<p><a href=\"" + escape_html(next) + "\">Older →</a></p>";
  }
  Body page_body;
  page_body += body;
  return page("Pipelines", page_body, request);
}

Response Dashboard::pipeline(const std::string& id, const Request& request) {
  auto store = context_.stores.take();
  std::optional<PipelineRecord> header = store->reads().pipeline_header(id);
  if (!header) throw HttpError(404, "not_found", "unknown pipeline id '" + id + "'");
  // The run shown: ?run=ID, else the latest (a revived pipeline's newest).
  const RunRecord* run = header->runs.empty() ? nullptr : &header->runs.back();
  if (const std::string* wanted = param(request.query, "run")) {
    for (const auto& r : header->runs) {
      if (r.id == *wanted) run = &r;
    }
  }
  const std::string self = "/ui/pipelines/" + url_encoded(id);
  Body page_body;
  page_body += flash(request);
  std::string body = "<h1>" + escape_html(header->klass) + " " + badge(header->status) +
                     (header->paused ? " " + badge("paused") : std::string()) + "</h1><p><code>" +
                     escape_html(id) + "</code> triggered " + escape_html(header->triggered_at) +
                     (header->completed_at ? ", completed " + escape_html(*header->completed_at) : "") +
                     (header->halted_at ? ", halted " + escape_html(*header->halted_at) : "") +
                     (header->cancelled_at ? ", cancelled " + escape_html(*header->cancelled_at) : "") + "</p>";
  // Parent and children (SPEC §18), linked both ways.
  if (header->invoked_by) {
    body += "<p>child of <a href=\"/ui/pipelines/" + url_encoded(header->invoked_by->parent_pipeline_id) +
            "\"><code>" + escape_html(header->invoked_by->parent_pipeline_id) + "</code></a> (depth " +
            std::to_string(header->invoked_by->depth) + ")</p>";
  }
  if (!header->children.empty()) {
    body += "<p>children:";
    for (const ChildRecord& c : header->children) {
      body += " <a href=\"/ui/pipelines/" + url_encoded(c.pipeline_id) + "\">" + escape_html(c.pipeline) +
              "</a> " + badge(c.status);
    }
    body += "</p>";
  }
  // Actions: what the state allows (the API refuses the rest anyway).
  const std::string& st = header->status;
  if (st == "halted" || st == "cancelled") {
    body += "<form class=\"inline\" method=\"post\" action=\"" + self + "/revive\">" + csrf_field() +
            "<label><input type=\"checkbox\" name=\"duplicate_context\" value=\"true\"> keep context</label> "
            "<button type=\"submit\">Revive</button></form>";
  }
  if (st != "completed" && st != "halted" && st != "cancelled") {
    body += "<form class=\"inline\" method=\"post\" action=\"" + self + "/cancel\">" + csrf_field() +
            "<button type=\"submit\">Cancel</button></form>";
  }
  if (st == "completed" || st == "halted" || st == "cancelled") {
    // Asked for twice: the box must be ticked (the browser refuses the
    // form without it, the server too).
    body += "<form class=\"inline\" method=\"post\" action=\"" + self + "/delete\">" + csrf_field() +
            "<label><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> delete for good</label> "
            "<button type=\"submit\">Delete</button></form>";
  }
  if (st == "dampened") {
    body += "<form class=\"inline\" method=\"post\" action=\"" + self + "/resume\">" + csrf_field() +
            "value (JSON) <input name=\"value\" value=\"null\"> node <input name=\"node\" placeholder=\"any\"> "
            "<button type=\"submit\">Resume</button></form>";
  }
  page_body.live("head", body);
  const bool open = st == "pending" || st == "in_progress" || st == "advancing" || st == "waiting";
  const int refresh_seconds = open ? 2 : 0;
  body.clear();
  if (header->runs.size() > 1) {
    body += "<h2>Runs</h2><table><tr><th>run</th><th>status</th><th>started</th></tr>";
    for (const auto& r : header->runs) {
      body += "<tr><td><a href=\"" + self + "?run=" + url_encoded(r.id) + "\"><code>" + escape_html(r.id) +
              "</code></a>" + (run && r.id == run->id ? " (shown)" : "") + "</td><td>" + badge(r.status) + "</td><td>" +
              or_dash(r.started_at) + "</td></tr>";
    }
    body += "</table>";
  }
  if (!run) {
    page_body.live("run", body + "<p>No run.</p>");
    return page(header->klass + " " + id, page_body, request, refresh_seconds);
  }

  std::vector<NodeStatusCount> counts = store->reads().node_counts(run->id, /*attempt_times=*/true);
  std::vector<BranchStatusCount> branches = store->reads().branch_counts(run->id);
  int64_t total_steps = 0;
  for (const auto& c : counts) total_steps += c.count;
  body += stopped_branches(branches);
  body += "<h2>Graph</h2>";
  try {
    Definition definition = Definition::from_json(parse_json(store->run_definition(run->id)), header->klass,
                                                  "run " + run->id, /*strict=*/false);
    body += definition_svg(definition, counts, branches);
  } catch (const std::exception& e) {
    body += "<p class=\"error\">The run's definition cannot be drawn: " + escape_html(e.what()) + "</p>";
  }
  // The times are this run's attempts' (Store::node_counts): a step a
  // revive copied, or one still queued, adds none.
  body += "<h2>Nodes</h2><table><tr><th>node</th><th>step</th><th>status</th><th>steps</th><th>first started</th>"
          "<th>last completed</th></tr>";
  for (const auto& c : counts) {
    body += "<tr><td><code>" + escape_html(c.node) + "</code></td><td>" + escape_html(c.klass) + "</td><td>" +
            badge(c.status) + "</td><td class=\"n\">" + grouped(c.count) + "</td><td>" + or_dash(c.first_started_at) +
            "</td><td>" + or_dash(c.last_completed_at) + "</td></tr>";
  }
  body += "</table>";

  body += on_halt_section(run->on_halt);
  std::vector<ErrorRecord> errors = store->reads().recent_errors(run->id, 20);
  if (!errors.empty()) {
    body += "<h2>Errors (newest 20)</h2><table><tr><th>at</th><th>step</th><th>result</th><th>retry / crash</th>"
            "<th>error</th></tr>";
    for (const auto& e : errors) {
      body += "<tr><td>" + escape_html(e.at) + "</td><td>" + escape_html(e.klass) + "</td><td>" +
              escape_html(e.result_type) + "</td><td class=\"n\">" + std::to_string(e.retry_count) + " / " +
              std::to_string(e.crash_count) + "</td><td>" + error_text(e) + "</td></tr>";
    }
    body += "</table>";
  }

  int64_t page_number = 0;
  if (const std::string* p = param(request.query, "page")) {
    try {
      page_number = std::max<int64_t>(0, std::stoll(*p));
    } catch (const std::exception&) {
      throw HttpError(400, "bad_request", "page '" + *p + "' is not a number");
    }
  }
  const int64_t first = page_number * kStepsPerPage;
  std::vector<StepRecord> steps = store->reads().step_page(run->id, first, kStepsPerPage);
  body += "<h2>Steps " + grouped(steps.empty() ? 0 : first + 1) + "–" + grouped(first + static_cast<int64_t>(steps.size())) +
          " of " + grouped(total_steps) + "</h2><table><tr><th>step</th><th>status</th><th>started</th>"
          "<th>completed</th><th>input</th><th>output</th></tr>";
  // "started": when a worker first took the step (its first attempt), not
  // when it was queued; "–" while it waits.
  for (const auto& step : steps) {
    body += "<tr data-step=\"" + escape_html(step.id) + "\"><td>" + escape_html(step.klass) + "</td><td>" +
            badge(step.status) + "</td><td>" + or_dash(step.first_attempt_at) + "</td><td>" +
            or_dash(step.completed_at) + "</td><td class=\"json\">" + json_cell(step.input_json, "input " + step.id) +
            "</td><td class=\"json\">" + json_cell(step.output_json, "output " + step.id) + "</td></tr>";
  }
  body += "</table><p>";
  const std::string run_query = "run=" + url_encoded(run->id);
  if (page_number > 0) {
    body += "<a href=\"" + self + "?" + run_query + "&amp;page=" + std::to_string(page_number - 1) + "\">← previous</a> ";
  }
  if (first + kStepsPerPage < total_steps) {
    body += "<a href=\"" + self + "?" + run_query + "&amp;page=" + std::to_string(page_number + 1) + "\">next →</a>";
  }
  body += "</p>";

  std::vector<ContextRecord> context = store->reads().context_values(run->id, 100);
  if (!context.empty()) {
    body += "<h2>Context</h2><table><tr><th>key</th><th>value</th><th>set at</th></tr>";
    for (const auto& c : context) {
      body += "<tr><td><code>" + escape_html(c.key) + "</code></td><td>" + json_cell(c.value_json, "context " + c.key) +
              "</td><td>" +
              escape_html(c.last_set_at) + "</td></tr>";
    }
    body += "</table>";
  }
  page_body.live("run", body);
  return page(header->klass + " " + id, page_body, request, refresh_seconds);
}

Response Dashboard::errors(const Request& request) {
  auto store = context_.stores.take();
  std::string body = "<h2>By step and error class</h2><table><tr><th>pipeline</th><th>step</th>"
                     "<th>error class</th><th>count</th><th>last seen</th><th>last message</th></tr>";
  std::vector<ErrorClassCount> groups = store->reads().error_classes(100);
  for (const auto& g : groups) {
    body += "<tr><td>" + escape_html(g.pipeline) + "</td><td>" + escape_html(g.klass) + "</td><td><b>" +
            escape_html(g.error_klass) + "</b></td><td class=\"n\">" + grouped(g.count) + "</td><td>" +
            escape_html(g.last_at) + "</td><td>" + escape_html(truncated(g.last_message, 200)) + "</td></tr>";
  }
  body += "</table>";
  if (groups.empty()) body += "<p>No step has failed.</p>";
  body += "<h2>Newest 50</h2><table><tr><th>at</th><th>pipeline</th><th>step</th><th>result</th><th>error</th></tr>";
  for (const auto& e : store->reads().recent_errors("", 50)) {
    body += "<tr><td>" + escape_html(e.at) + "</td><td><a href=\"/ui/pipelines/" + url_encoded(e.pipeline_id) + "\">" +
            escape_html(e.pipeline) + "</a></td><td>" + escape_html(e.klass) + "</td><td>" + escape_html(e.result_type) +
            "</td><td>" + error_text(e) + "</td></tr>";
  }
  body += "</table>";
  Body page_body;
  page_body += "<h1>Errors</h1>";
  page_body.live("errors", body);
  return page("Errors", page_body, request, 10);
}

Response Dashboard::processes(const Request& request) {
  std::string body = "<table><tr><th>machine</th><th>role</th><th>pid</th><th>heartbeat age</th>"
                     "<th>jobs running</th><th>branches advancing</th><th>id</th></tr>";
  std::vector<ProcessInfo> rows = context_.stores.take()->reads().processes();
  for (const auto& p : rows) {
    char age[32];
    std::snprintf(age, sizeof age, "%.1f s", p.heartbeat_age_seconds);
    body += "<tr><td><code>" + escape_html(p.machine) + "</code></td><td>" + escape_html(p.role) + "</td><td class=\"n\">" +
            std::to_string(p.pid) + "</td><td class=\"n\">" + age + "</td><td class=\"n\">" +
            grouped(p.jobs_running) + "</td><td class=\"n\">" + grouped(p.branches_advancing) + "</td><td><code>" +
            escape_html(p.id) +
            "</code></td></tr>";
  }
  body += "</table>";
  if (rows.empty()) body += "<p>No process is registered: no host is running.</p>";
  Body page_body;
  page_body += "<h1>Processes</h1>";
  page_body.live("processes", body);
  return page("Processes", page_body, request, 5);
}

Response Dashboard::action(const std::string& id, const std::string& verb, const Request& request) {
  if (verb != "revive" && verb != "cancel" && verb != "resume" && verb != "delete") {
    throw HttpError(404, "not_found", "no such action");
  }
  auto fields = parse_form(request.body);
  if (verb == "delete") return remove(id, fields);
  Json api_body = Json::object();
  if (verb == "revive" && fields.count("duplicate_context")) api_body["duplicate_context"] = true;
  const std::string self = "/ui/pipelines/" + url_encoded(id);
  if (verb == "resume") {
    if (const std::string* node = param(fields, "node")) api_body["node"] = *node;
    const std::string value = fields.count("value") && !fields["value"].empty() ? fields["value"] : "null";
    std::optional<Json> parsed = try_parse_json(value);
    if (!parsed) return redirect(self + "?error=" + url_encoded("the value is not valid JSON: " + value));
    api_body["value"] = *parsed;
  }
  Request api;
  api.method = "POST";
  api.segments = {"api", "v1", "pipelines", id, verb};
  api.content_type = "application/json";
  api.body = api_body.dump();
  try {
    api_.handle(api);
    return redirect(self + "?notice=" + url_encoded(verb == "revive" ? "revived: a new run started"
                                                    : verb == "cancel" ? "cancelled"
                                                                       : "resumed"));
  } catch (const HttpError& e) {
    if (e.status() == 404) throw;
    return redirect(self + "?error=" + url_encoded(e.message()));
  }
}

Response Dashboard::remove(const std::string& id, std::map<std::string, std::string>& fields) {
  const std::string self = "/ui/pipelines/" + url_encoded(id);
  if (!param(fields, "confirm")) return redirect(self + "?error=" + url_encoded("tick the box to delete for good"));
  Request api;
  api.method = "DELETE";
  api.segments = {"api", "v1", "pipelines", id};
  try {
    api_.handle(api);
    return redirect("/ui?notice=" + url_encoded("deleted pipeline " + id));
  } catch (const HttpError& e) {
    if (e.status() == 404) throw;
    return redirect(self + "?error=" + url_encoded(e.message()));
  }
}

Response Dashboard::trigger(const Request& request) {
  auto fields = parse_form(request.body);
  const std::string* name = param(fields, "pipeline");
  if (!name) return redirect("/ui?error=" + url_encoded("choose a pipeline"));
  std::optional<Json> args = try_parse_json(fields.count("args") && !fields["args"].empty() ? fields["args"] : "[]");
  if (!args) return redirect("/ui?error=" + url_encoded("the arguments are not valid JSON"));
  Request api;
  api.method = "POST";
  api.segments = {"api", "v1", "pipelines", *name, "trigger"};
  api.content_type = "application/json";
  api.body = Json::object({{"args", *args}}).dump();
  try {
    Json reply = parse_json(api_.handle(api).body);
    return redirect("/ui/pipelines/" + url_encoded(reply["id"].as_string()) + "?notice=triggered");
  } catch (const HttpError& e) {
    return redirect("/ui?error=" + url_encoded(e.message()));
  }
}

Response Dashboard::pause(const Request& request, bool paused) {
  auto fields = parse_form(request.body);
  const std::string* name = param(fields, "pipeline");
  if (!name) return redirect("/ui?error=" + url_encoded("choose a pipeline"));
  Request api;
  api.method = "POST";
  api.segments = {"api", "v1", "pipelines", *name, paused ? "pause" : "unpause"};
  api.content_type = "application/json";
  try {
    api_.handle(api);
    return redirect("/ui?notice=" + url_encoded((paused ? "paused " : "unpaused ") + *name));
  } catch (const HttpError& e) {
    return redirect("/ui?error=" + url_encoded(e.message()));
  }
}

}  // namespace ductwork::http
