#include "http/session.h"

#include <sys/random.h>

#include <Poco/HMACEngine.h>
#include <Poco/SHA1Engine.h>

#include "http/dashboard.h"
#include "http/dashboard_parts.h"
#include "http/html.h"

namespace ductwork::http {
namespace {

constexpr const char* kCookie = "dw_session";

std::string hmac_hex(const std::string& key, const std::string& text) {
  Poco::HMACEngine<Poco::SHA1Engine> engine(key);
  engine.update(text);
  return Poco::DigestEngine::digestToHex(engine.digest());
}

// Equal without telling, by its timing, how much of `given` was right.
bool same_secret(const std::string& given, const std::string& secret) {
  if (secret.empty()) return false;
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ secret[i % secret.size()]);
  return diff == 0;
}

std::string random_secret() {
  unsigned char bytes[32] = {};
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  return std::string(reinterpret_cast<const char*>(bytes), sizeof bytes);
}

// Where a login may send the browser: a path of this server, never
// another site ("//evil", "https://…").
std::string safe_next(const std::string& next) {
  if (next.empty() || next[0] != '/' || (next.size() > 1 && (next[1] == '/' || next[1] == '\\'))) return "/ui";
  return next;
}

}  // namespace

Sessions::Sessions(std::string token) : token_(std::move(token)) {
  const std::string secret = token_.empty() ? random_secret() : token_;
  session_ = hmac_hex(secret, "ductwork dashboard session v1");
  csrf_ = hmac_hex(secret, "ductwork dashboard csrf v1");
}

bool Sessions::bearer_ok(const std::string& authorization) const {
  const std::string scheme = "Bearer ";
  return authorization.compare(0, scheme.size(), scheme) == 0 &&
         same_secret(authorization.substr(scheme.size()), token_);
}

bool Sessions::cookie_ok(const std::string& cookie_header) const {
  // "a=1; dw_session=…; b=2"
  std::size_t at = 0;
  while (at < cookie_header.size()) {
    std::size_t end = cookie_header.find(';', at);
    if (end == std::string::npos) end = cookie_header.size();
    std::string pair = cookie_header.substr(at, end - at);
    pair.erase(0, pair.find_first_not_of(' '));
    const std::string prefix = std::string(kCookie) + "=";
    if (pair.compare(0, prefix.size(), prefix) == 0 && same_secret(pair.substr(prefix.size()), session_)) return true;
    at = end + 1;
  }
  return false;
}

bool Sessions::token_ok(const std::string& given) const { return same_secret(given, token_); }

std::string Sessions::session_cookie() const {
  return std::string(kCookie) + "=" + session_ + "; HttpOnly; SameSite=Strict; Path=/";
}

Response Sessions::login(const Request& request) const {
  if (!token_required()) return parts::redirect("/ui");
  std::string next = "/ui", error;
  if (request.method == "POST") {
    if (request.content_type != "application/x-www-form-urlencoded") {
      throw HttpError(415, "unsupported_media_type", "the login form posts application/x-www-form-urlencoded");
    }
    auto fields = parse_form(request.body);
    next = safe_next(fields["next"]);
    if (token_ok(fields["token"])) {
      Response r = parts::redirect(next);
      r.headers.emplace_back("Set-Cookie", session_cookie());
      return r;
    }
    error = "That is not the token.";
  } else if (request.method == "GET") {
    if (auto it = request.query.find("next"); it != request.query.end()) next = safe_next(it->second);
  } else {
    throw HttpError(405, "method_not_allowed", "use GET or the form");
  }
  Response r;
  r.status = error.empty() ? 200 : 401;
  r.content_type = "text/html; charset=utf-8";
  r.body = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sign in · ductwork</title>"
           "<style>body{font:15px system-ui,sans-serif;display:grid;place-items:center;height:90vh;background:#f6f7f9}"
           "form{background:#fff;padding:24px 28px;border:1px solid #dde1e8}p.error{color:#c0392b}</style></head>"
           "<body><form method=\"post\" action=\"/ui/login\"><h1>ductwork</h1>" +
           (error.empty() ? std::string() : "<p class=\"error\">" + error + "</p>") +
           "<p><label>HTTP token (http.token)<br><input type=\"password\" name=\"token\" size=\"40\" autofocus></label></p>"
           "<input type=\"hidden\" name=\"next\" value=\"" + escape_html(next) + "\"><button type=\"submit\">Sign in</button>"
           "</form></body></html>\n";
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Content-Security-Policy", parts::kContentSecurityPolicy);
  return r;
}

}  // namespace ductwork::http
