#pragma once

// The dashboard (SPEC §12): server-rendered HTML under /ui that works
// without JavaScript (then it reloads itself); with it, a page that follows
// running work refreshes its live parts in place (/ui/live.js). Pages: overview, pipelines (filters, paging), one
// pipeline (its definition drawn and coloured by status, steps, errors with
// backtraces, context, runs, actions), errors grouped by class, processes.
// Actions are HTML forms carrying a CSRF token; they go through the JSON
// API's own handlers, so every rule of the API holds for them too.
#include <string>

#include "http/api_v1.h"
#include "http/dashboard_parts.h"
#include "http/http_message.h"

namespace ductwork::http {

class Dashboard {
 public:
  // `csrf_token`: what every form carries and every POST must send back.
  Dashboard(ApiContext context, ApiV1& api, std::string csrf_token)
      : context_(context), api_(api), csrf_token_(std::move(csrf_token)) {}

  // A request whose first path segment is "ui" (but not /ui/login, which
  // the server handles). HttpError for a malformed request.
  Response handle(const Request& request);

 private:
  Response overview(const Request& request);
  Response pipelines(const Request& request);
  Response pipeline(const std::string& id, const Request& request);
  Response errors(const Request& request);
  Response processes(const Request& request);
  Response action(const std::string& id, const std::string& verb, const Request& request);
  // The Delete form of a finished pipeline (DELETE /api/v1/pipelines/{id}).
  Response remove(const std::string& id, std::map<std::string, std::string>& fields);
  Response trigger(const Request& request);
  // The overview's Pause / Unpause buttons (issue 38).
  Response pause(const Request& request, bool paused);
  // The button that pauses `name` or, when `paused`, unpauses it.
  std::string pause_form(const std::string& name, bool paused) const;
  // /ui/live.js (dashboard_script.cpp).
  Response live_script() const;

  // The page around `body`, with the navigation; `refresh_seconds` > 0
  // refreshes its live parts that often (a running pipeline's page). For
  // `request` with ?live=1, those parts alone as JSON: {"title", "refresh"
  // (seconds, 0: stop), "parts": {name: HTML}}.
  Response page(const std::string& title, const parts::Body& body, const Request& request,
                int refresh_seconds = 0) const;
  std::string csrf_field() const;

  ApiContext context_;
  ApiV1& api_;
  std::string csrf_token_;
};

// The fields of an application/x-www-form-urlencoded body or query.
std::map<std::string, std::string> parse_form(const std::string& body);

}  // namespace ductwork::http
