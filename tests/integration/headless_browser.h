#pragma once
// Headless Chromium driven as a person drives it: pages loaded, fields
// typed into and buttons clicked with the mouse, through the DevTools
// protocol over a pipe (`--remote-debugging-pipe`: requests on the
// browser's fd 3, answers and events on its fd 4, each message a JSON
// object ended by a NUL byte). No WebDriver, no script in the page.
// Also what a test needs to look again over time: waiting for a condition
// in the page (a live refresh), its DOM, and screenshots.
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <string>

#include "harness.h"

namespace ductwork::it {

class HeadlessBrowser {
 public:
  // Starts chromium with one blank tab; problem() says why when it could
  // not (chromium missing, no answer).
  HeadlessBrowser();
  ~HeadlessBrowser();
  HeadlessBrowser(const HeadlessBrowser&) = delete;
  HeadlessBrowser& operator=(const HeadlessBrowser&) = delete;

  const std::string& problem() const { return problem_; }

  // Loads `url` in the tab and waits for its load event; the main
  // document's response (status, headers) is kept for document().
  // False (with a test failure) when it did not load within 30 s.
  bool open(const std::string& url);
  // The last main-frame document response: Network.Response (`url`,
  // `status`, `headers`, …), null before any.
  const json& document() const { return document_; }
  // The page's URL now.
  std::string url();
  // Runs `expression` in the page (awaiting a promise) and returns its
  // value; null with a test failure when it threw.
  json evaluate(const std::string& expression);
  // Evaluates `expression` every 20 ms until it is truthy; false when it
  // was not within `seconds`. An exception in the page (an element not
  // there yet) counts as not yet, not as a failure.
  bool wait_for(const std::string& expression, double seconds);
  // The page's DOM as HTML ("" with a test failure when it cannot be read).
  std::string dom();
  // The whole page (beyond the viewport) as a PNG at `path`; false (with a
  // test failure) when chromium took none.
  bool screenshot(const std::string& path);
  // Clicks the first element `selector` (CSS) finds: a real left-button
  // press and release at its centre (mouse events the page cannot tell
  // from a person's). False (with a test failure) when there is none.
  bool click(const std::string& selector);
  // Focuses the first `selector`, selects its text and types `text` over it
  // (Input.insertText, as an input method does).
  bool type(const std::string& selector, const std::string& text);
  // Waits up to `seconds` for a load event in the tab (a form's answer, a
  // redirect's target) that ends on a URL containing `url_part`.
  bool wait_for_load(const std::string& url_part, double seconds = 30);

  // A DevTools command on the tab's session (browser-wide when `browser`);
  // its `result`, or null with a test failure on an error or no answer.
  json call(const std::string& method, const json& params = json::object(), bool browser = false);

 private:
  void send(const json& message);
  // The next message (answer or event) within the deadline; null if none.
  json receive(std::chrono::steady_clock::time_point deadline);
  // Keeps what an event tells (the document response, load events).
  void note_event(const json& event);

  pid_t pid_ = -1;
  int to_browser_ = -1;    // the browser's fd 3
  int from_browser_ = -1;  // the browser's fd 4
  std::string buffer_;
  int next_id_ = 1;
  std::string session_;
  std::string problem_;
  testsupport::TempDir profile_;
  json document_;
  std::string main_frame_;
  std::deque<std::string> loads_;  // URLs of the main frame's load events, oldest first
  std::string frame_url_;
};

// A screenshot kept as a test artefact: test-artifacts/dashboard/NAME.png
// (pg-NAME.png on PostgreSQL), this run's, checked to be a real image.
void keep_screenshot(HeadlessBrowser& browser, const std::string& name);

// The rows of the page's table `#id` after its header row, one line each,
// the cells' text joined by '|'.
std::string table_rows(HeadlessBrowser& browser, const std::string& id);

}  // namespace ductwork::it
