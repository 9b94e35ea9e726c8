#pragma once
// A headless Chromium driven over the DevTools protocol (a WebSocket to
// one page), for dashboard tests that act as a person does over time:
// type into a form, open a backtrace, wait for the page to refresh itself,
// and look again. One browser per object, with a profile of its own.
#include <memory>
#include <string>

#include "harness.h"

namespace Poco::Net {
class HTTPClientSession;
class WebSocket;
}  // namespace Poco::Net

namespace ductwork::it {

class Browser {
 public:
  // Starts `chromium --headless` with a remote-debugging port of its own
  // and attaches to its page. ok() is false (and a failure is added) when
  // chromium is missing or did not start.
  Browser();
  ~Browser();
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  bool ok() const { return socket_ != nullptr; }
  // Loads `url` and waits (up to 30 s) until the document has loaded.
  void open(const std::string& url);
  // The value of a JavaScript expression in the page (awaited when it is
  // a promise); null after an exception, which adds a failure.
  json eval(const std::string& expression);
  // Evaluates `expression` every 20 ms until it is true; false when it
  // was not within `seconds`.
  bool wait_for(const std::string& expression, double seconds);
  // Types `text` at the focused element, as a keyboard does.
  void type(const std::string& text);
  // The page as a PNG at `path`.
  void screenshot(const std::string& path);
  // The page's DOM as HTML.
  std::string dom() { return eval("document.documentElement.outerHTML").get<std::string>(); }

 private:
  json call(const std::string& method, const json& params, double seconds = 30);

  testsupport::TempDir profile_;
  std::unique_ptr<testsupport::Subprocess> process_;
  std::unique_ptr<Poco::Net::HTTPClientSession> session_;
  std::unique_ptr<Poco::Net::WebSocket> socket_;
  int next_id_ = 0;
};

}  // namespace ductwork::it
