#pragma once

// Pieces the dashboard's pages share (dashboard.cpp, dashboard_pages.cpp).
#include <Poco/URI.h>

#include <map>
#include <optional>
#include <string>

#include "http/html.h"
#include "http/http_message.h"

namespace ductwork::http::parts {

// Bytes of a JSON input/output shown before "…" (the rest one click away).
constexpr std::size_t kShownJson = 120;

inline std::string badge(const std::string& status) {
  return "<span class=\"badge " + escape_html(status) + "\">" + escape_html(status) + "</span>";
}

// For a path segment or a query value.
inline std::string url_encoded(const std::string& text) {
  std::string out;
  Poco::URI::encode(text, "&=?#+/ %\"'<>", out);
  return out;
}

inline std::string or_dash(const std::optional<std::string>& text) { return text ? escape_html(*text) : "–"; }

// A JSON value in a cell: short ones whole, long ones cut with the whole
// text (up to 64 KiB) in a <details>.
inline std::string json_cell(const std::optional<std::string>& text) {
  if (!text) return "–";
  if (text->size() <= kShownJson) return "<code>" + escape_html(*text) + "</code>";
  return "<details><summary><code>" + escape_html(truncated(*text, kShownJson)) + "</code></summary><pre>" +
         escape_html(truncated(*text, 64 * 1024)) + "</pre></details>";
}

inline Response redirect(const std::string& location) {
  Response r;
  r.status = 303;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "see " + location + "\n";
  r.headers.emplace_back("Location", location);
  return r;
}

// The ?notice= / ?error= an action redirected with, as a banner.
inline std::string flash(const Request& request) {
  std::string out;
  if (auto it = request.query.find("notice"); it != request.query.end()) {
    out += "<div class=\"notice\">" + escape_html(it->second) + "</div>";
  }
  if (auto it = request.query.find("error"); it != request.query.end()) {
    out += "<div class=\"error\">" + escape_html(it->second) + "</div>";
  }
  return out;
}

// A non-empty value of a form or query, or null.
inline const std::string* param(const std::map<std::string, std::string>& values, const std::string& name) {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace ductwork::http::parts
