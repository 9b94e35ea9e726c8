#include "http/dashboard.h"

#include <Poco/Net/HTMLForm.h>
#include <Poco/URI.h>

#include <chrono>
#include <ctime>
#include <map>
#include <set>

#include "engine/api_documents.h"
#include "engine/definition.h"
#include "engine/schedule_list.h"
#include "http/dashboard_graph.h"
#include "http/dashboard_parts.h"
#include "http/html.h"

namespace ductwork::http {
using namespace parts;
namespace {

const char* kStyle =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}"
    "header{background:#1d2330;color:#fff;padding:10px 20px;display:flex;gap:20px;align-items:center}"
    "header a{color:#cfd6e4;text-decoration:none}header a:hover{color:#fff}header b{color:#fff}"
    "main{padding:16px 20px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:22px 0 8px}"
    "table{border-collapse:collapse;background:#fff;margin-bottom:8px}"
    "th,td{border:1px solid #dde1e8;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#eef0f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".badge{display:inline-block;padding:1px 8px;border-radius:9px;font-size:12px;color:#fff;background:#8a93a6}"
    ".completed{background:#2e8b57}.failed,.halted{background:#c0392b}.cancelled{background:#5a6170}"
    ".running,.in_progress,.pending,.advancing,.waiting{background:#2f6fd0}.dampened,.paused{background:#c98a12}"
    "pre{white-space:pre-wrap;margin:4px 0;font-size:12px;background:#fafbfc;padding:6px;border:1px solid #e3e6ec}"
    "code{font-size:12px}td code,summary code{word-break:break-all}td.json{max-width:420px}.notice{padding:8px 12px;background:#e6f4ea;border:1px solid #9ccfab;margin-bottom:12px}"
    ".error{padding:8px 12px;background:#fdecea;border:1px solid #f0a8a0;margin-bottom:12px}"
    "form.inline{display:inline-block;margin:0 8px 8px 0}button{cursor:pointer}"
    "svg.graph{background:#fff;border:1px solid #dde1e8;max-width:100%;height:auto}"
    "svg .edge{fill:none;stroke:#667;stroke-width:1.5}svg .edge-label{font-size:11px;fill:#556}"
    "svg .node rect{stroke:#1d2330;stroke-width:1}svg .node text{fill:#fff}"
    "svg .node-title{font-size:13px;font-weight:600}svg .node-detail{font-size:11px}"
    "svg .node.completed rect{fill:#2e8b57}svg .node.failed rect{fill:#c0392b}svg .node.running rect{fill:#2f6fd0}"
    "svg .node.dampened rect{fill:#c98a12}svg .node.cancelled rect{fill:#5a6170}"
    "svg .node.idle rect{fill:#fff}svg .node.idle text{fill:#667}"
    "svg .node.parked rect{stroke:#8a5a00;stroke-width:3;stroke-dasharray:7 3}"
    ".notice.parked{background:#fdf3e1;border-color:#e7c27d}";

}  // namespace

std::map<std::string, std::string> parse_form(const std::string& body) {
  Poco::Net::HTMLForm form;
  try {
    form.read(body);
  } catch (const Poco::Exception& e) {
    throw HttpError(400, "bad_request", "the form cannot be read: " + e.displayText());
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : form) out[name] = value;  // the last of a repeated field
  return out;
}

Response Dashboard::page(const std::string& title, const Body& body, const Request& request,
                         int refresh_seconds) const {
  Response r;
  if (request.query.count("live")) {
    Json live = Json::object();
    for (const auto& [name, html] : body.live_parts()) live[name] = html;
    r = json_response(200, Json::object({{"title", title + " · ductwork"},
                                         {"refresh", refresh_seconds},
                                         {"parts", std::move(live)}}));
  } else {
    const std::string refresh = std::to_string(refresh_seconds);
    r.content_type = "text/html; charset=utf-8";
    r.body = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) +
             " · ductwork</title>" +
             // Without JavaScript the page reloads itself; with it, live.js
             // refreshes the live parts and leaves the rest alone.
             (refresh_seconds > 0 ? "<noscript><meta http-equiv=\"refresh\" content=\"" + refresh +
                                        "\"></noscript><script src=\"/ui/live.js\" defer></script>"
                                  : std::string()) +
             "<style>" + kStyle + "</style></head><body" +
             (refresh_seconds > 0 ? " data-refresh=\"" + refresh + "\"" : std::string()) +
             "><header><b>ductwork</b><a href=\"/ui\">Overview</a>"
             "<a href=\"/ui/pipelines\">Pipelines</a><a href=\"/ui/errors\">Errors</a>"
             "<a href=\"/ui/processes\">Processes</a></header><main>" +
             body.html() + "</main></body></html>\n";
  }
  // The page embeds the CSRF token: never from a shared cache, never framed.
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  return r;
}

std::string Dashboard::csrf_field() const {
  return "<input type=\"hidden\" name=\"csrf\" value=\"" + escape_html(csrf_token_) + "\">";
}

Response Dashboard::handle(const Request& request) {
  const auto& s = request.segments;
  if (request.method == "POST") {
    if (request.content_type != "application/x-www-form-urlencoded") {
      throw HttpError(415, "unsupported_media_type", "a dashboard form posts application/x-www-form-urlencoded");
    }
    auto fields = parse_form(request.body);
    const std::string* csrf = param(fields, "csrf");
    if (!csrf || *csrf != csrf_token_) {
      throw HttpError(403, "forbidden", "the form's CSRF token is missing or stale; reload the page");
    }
    if (s.size() == 2 && s[1] == "trigger") return trigger(request);
    if (s.size() == 2 && (s[1] == "pause" || s[1] == "unpause")) return pause(request, s[1] == "pause");
    if (s.size() == 4 && s[1] == "pipelines") return action(s[2], s[3], request);
    throw HttpError(404, "not_found", "no such form");
  }
  if (request.method != "GET") throw HttpError(405, "method_not_allowed", "use GET or a form");
  if (s.size() == 1) return overview(request);
  if (s.size() == 2 && s[1] == "live.js") return live_script();
  if (s.size() == 2 && s[1] == "pipelines") return pipelines(request);
  if (s.size() == 3 && s[1] == "pipelines") return pipeline(s[2], request);
  if (s.size() == 2 && s[1] == "errors") return errors(request);
  if (s.size() == 2 && s[1] == "processes") return processes(request);
  throw HttpError(404, "not_found", "no such page");
}

std::string Dashboard::pause_form(const std::string& name, bool paused) const {
  // A paused name's jobs wait (issue 38): the badge says so, the button undoes it.
  return (paused ? badge("paused") + " " : std::string()) + "<form class=\"inline\" method=\"post\" action=\"/ui/" +
         (paused ? "unpause" : "pause") + "\">" + csrf_field() + "<input type=\"hidden\" name=\"pipeline\" value=\"" +
         escape_html(name) + "\"><button type=\"submit\">" + (paused ? "Unpause" : "Pause") + "</button></form>";
}

namespace {

// Flow control (issue 38): per step, executions holding a slot of a
// concurrency limit and the queued jobs held back, by reason (a rate
// limit's full window among them).
std::string flow_section(const FlowCounts& flow) {
  const std::vector<std::string> reasons = {"concurrency", "rate_limit", "paused", "delay"};
  std::map<std::pair<std::string, std::string>, std::map<std::string, int64_t>> rows;
  for (const auto& [key, n] : flow.in_progress) rows[key]["in_progress"] = n;
  for (const auto& [key, n] : flow.waiting) rows[{std::get<0>(key), std::get<1>(key)}][std::get<2>(key)] = n;
  std::string out = "<h2>Flow control</h2>";
  if (rows.empty()) return out + "<p>No step is limited or held back.</p>";
  out += "<table id=\"flow\"><tr><th>pipeline</th><th>step</th><th>holding a slot</th>";
  for (const auto& r : reasons) out += "<th>waiting: " + r + "</th>";
  out += "</tr>";
  for (const auto& row : rows) {
    const std::map<std::string, int64_t>& counts = row.second;
    auto count = [&counts](const std::string& what) {
      auto it = counts.find(what);
      return it == counts.end() ? std::string("0") : grouped(it->second);
    };
    out += "<tr><td>" + escape_html(row.first.first) + "</td><td>" + escape_html(row.first.second) +
           "</td><td class=\"n\">" + count("in_progress") + "</td>";
    for (const auto& r : reasons) out += "<td class=\"n\">" + count(r) + "</td>";
    out += "</tr>";
  }
  return out + "</table>";
}

// Cron schedules (issue 39): per schedule its expression and zone, its next
// tick and its last one acted on, linked to the pipeline it triggered.
std::string schedules_section(const Json& doc) {
  const Json::Array& list = doc["schedules"].as_array();
  std::string out = "<h2>Schedules</h2>";
  if (list.empty()) return out + "<p>No pipeline has a schedule.</p>";
  auto text = [](const Json& v) { return v.is_string() ? escape_html(v.as_string()) : std::string("-"); };
  out += "<table id=\"schedules\"><tr><th>pipeline</th><th>schedule</th><th>cron</th><th>time zone</th>"
         "<th>next tick (UTC)</th><th>last tick (UTC)</th><th>last outcome</th></tr>";
  for (const Json& s : list) {
    std::string outcome = text(s["last_outcome"]);
    if (s["last_pipeline_id"].is_string()) {
      outcome = "<a href=\"/ui/pipelines/" + url_encoded(s["last_pipeline_id"].as_string()) + "\">" + outcome + "</a>";
    }
    if (s["paused"].as_bool()) outcome += " " + badge("paused");
    out += "<tr><td>" + text(s["pipeline"]) + "</td><td>" + text(s["name"]) + "</td><td>" + text(s["cron"]) +
           "</td><td>" + text(s["timezone"]) + "</td><td>" + text(s["next_tick"]) + "</td><td>" + text(s["last_tick"]) +
           "</td><td>" + outcome + "</td></tr>";
  }
  return out + "</table>";
}

}  // namespace

Response Dashboard::overview(const Request& request) {
  auto store = context_.stores.take();
  std::vector<StatusCount> counts = store->reads().pipeline_status_counts();
  const std::vector<std::string> columns = {"in_progress", "pending", "waiting", "dampened",
                                            "halted",      "cancelled", "completed"};
  std::map<std::string, std::map<std::string, int64_t>> by_pipeline;
  for (const auto& c : counts) by_pipeline[c.pipeline][c.status] += c.count;
  for (const auto& [name, _] : context_.definitions.pipelines) by_pipeline[name];
  Body page_body;
  page_body += flash(request) + "<h1>Overview</h1>";
  const std::map<std::string, std::string> paused = store->reads().paused_pipelines();
  std::string body = "<table><tr><th>pipeline</th>";
  for (const auto& c : columns) body += "<th>" + badge(c) + "</th>";
  body += "<th>total</th><th>new attempts</th></tr>";
  for (const auto& [name, statuses] : by_pipeline) {
    int64_t total = 0;
    for (const auto& [_, n] : statuses) total += n;
    body += "<tr><td><a href=\"/ui/pipelines?pipeline=" + url_encoded(name) + "\">" + escape_html(name) + "</a></td>";
    for (const auto& c : columns) {
      auto it = statuses.find(c);
      const int64_t n = it == statuses.end() ? 0 : it->second;
      body += "<td class=\"n\">" +
              (n ? "<a href=\"/ui/pipelines?pipeline=" + url_encoded(name) + "&amp;status=" + c + "\">" + grouped(n) + "</a>"
                 : std::string("0")) +
              "</td>";
    }
    body += "<td class=\"n\">" + grouped(total) + "</td><td>" + pause_form(name, paused.count(name) > 0) + "</td></tr>";
  }
  body += "</table>";
  body += flow_section(store->reads().flow_counts());
  body += schedules_section(schedules_document(
      *store, context_.definitions, std::chrono::time_point_cast<std::chrono::seconds>(store->clock().wall())));

  body += "<h2>Step results, last 15 minutes</h2>";
  std::vector<MinuteCount> minutes = store->reads().results_per_minute(15);
  if (minutes.empty()) {
    body += "<p>No step finished in the last 15 minutes.</p>";
  } else {
    body += "<table><tr><th>minute (UTC)</th><th>succeeded</th><th>failed</th></tr>";
    for (const auto& m : minutes) {
      body += "<tr><td>" + escape_html(m.minute) + "</td><td class=\"n\">" + grouped(m.succeeded) +
              "</td><td class=\"n\">" + grouped(m.failed) + "</td></tr>";
    }
    body += "</table>";
  }
  body += "<h2>Recent failures</h2>";
  std::vector<ErrorRecord> recent = store->reads().recent_errors("", 5);
  if (recent.empty()) body += "<p>None.</p>";
  for (const auto& e : recent) {
    body += "<p>" + escape_html(e.at) + " <a href=\"/ui/pipelines/" + url_encoded(e.pipeline_id) + "\">" +
            escape_html(e.pipeline) + "</a> " + escape_html(e.klass) + ": <b>" + or_dash(e.error_klass) + "</b> " +
            escape_html(truncated(e.error_message.value_or(""), 200)) + "</p>";
  }
  // The figures refresh in place; the trigger form is left as typed.
  page_body.live("overview", body);
  page_body += "<h2>Trigger</h2><form method=\"post\" action=\"/ui/trigger\">" + csrf_field() +
               "<select name=\"pipeline\">";
  for (const auto& [name, _] : context_.definitions.pipelines) {
    page_body += "<option>" + escape_html(name) + "</option>";
  }
  page_body += "</select> arguments (a JSON array) <input name=\"args\" value=\"[]\" size=\"40\"> "
               "<button type=\"submit\">Trigger</button></form>";
  return page("Overview", page_body, request, 10);
}

}  // namespace ductwork::http
