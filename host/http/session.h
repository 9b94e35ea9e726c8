#pragma once

// Who may use the HTTP server (SPEC §12): API clients send the bearer
// token; a browser gives it once on /ui/login and then carries a session
// cookie (HttpOnly, SameSite=Strict) derived from it, and every dashboard
// form carries a CSRF token. Neither cookie nor CSRF token reveals the
// token: both are HMACs of it. Without a token (loopback only) everyone is
// let in, and the CSRF token is an HMAC of a random secret of this process.
#include <string>

#include "http/http_message.h"

namespace ductwork::http {

class Sessions {
 public:
  explicit Sessions(std::string token);

  bool token_required() const { return !token_.empty(); }
  // `Authorization: Bearer <token>`.
  bool bearer_ok(const std::string& authorization) const;
  // A `Cookie:` header holding this server's session cookie.
  bool cookie_ok(const std::string& cookie_header) const;
  // The token a person typed into the login form.
  bool token_ok(const std::string& given) const;
  // The Set-Cookie value that starts a browser session.
  std::string session_cookie() const;
  const std::string& csrf_token() const { return csrf_; }

  // /ui/login: GET shows the form; POST (a form: token, next) checks the
  // token and, when right, sets the cookie and sends the browser on to
  // `next` (a path on this server).
  Response login(const Request& request) const;

 private:
  std::string token_;
  std::string session_;  // the cookie's value
  std::string csrf_;
};

}  // namespace ductwork::http
