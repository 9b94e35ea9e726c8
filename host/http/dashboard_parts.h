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

// Every page's policy, the sign-in page's too: scripts only from this
// server's own files (no inline script), inline styles, images from here
// or data: URLs.
constexpr const char* kContentSecurityPolicy = "default-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:";

// A page's body: fixed parts, and live parts (each a named <div
// data-live>) that the page's script (/ui/live.js) refreshes in place from
// the page's ?live=1 JSON, so what a person typed or opened elsewhere on
// the page stays as it was.
class Body {
 public:
  Body& operator+=(const std::string& html) {
    html_ += html;
    return *this;
  }
  void live(const std::string& name, const std::string& html) {
    html_ += "<div data-live=\"" + name + "\">" + html + "</div>";
    live_[name] = html;
  }
  const std::string& html() const { return html_; }
  const std::map<std::string, std::string>& live_parts() const { return live_; }

 private:
  std::string html_;
  std::map<std::string, std::string> live_;
};

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

// A <details> that stays open across a live refresh: `key` names it
// among the refreshed HTML.
inline std::string details_open_tag(const std::string& key) {
  return "<details data-key=\"" + escape_html(key) + "\">";
}

// A JSON value in a cell: short ones whole, long ones cut with the whole
// text (up to 64 KiB) in a <details> (named `key`, see details_open_tag).
inline std::string json_cell(const std::optional<std::string>& text, const std::string& key = "") {
  if (!text) return "–";
  if (text->size() <= kShownJson) return "<code>" + escape_html(*text) + "</code>";
  return (key.empty() ? std::string("<details>") : details_open_tag(key)) + "<summary><code>" + escape_html(truncated(*text, kShownJson)) + "</code></summary><pre>" +
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
