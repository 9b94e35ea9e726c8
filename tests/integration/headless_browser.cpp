#include "headless_browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Poco/Base64Decoder.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ductwork::it {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point in_seconds(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

HeadlessBrowser::HeadlessBrowser() {
  const std::string chromium = find_on_path("chromium");
  if (chromium.empty()) {
    problem_ = "chromium is not installed (packaging/install-deps.sh installs it)";
    return;
  }
  int requests[2], answers[2];
  if (::pipe2(requests, O_CLOEXEC) != 0 || ::pipe2(answers, O_CLOEXEC) != 0) {
    problem_ = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  const std::vector<std::string> args = {chromium,
                                         "--headless",
                                         "--no-sandbox",
                                         "--disable-gpu",
                                         "--disable-dev-shm-usage",
                                         "--no-first-run",
                                         "--window-size=1400,1100",
                                         "--remote-debugging-pipe",
                                         "--user-data-dir=" + profile_.path(),
                                         "about:blank"};
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    // The browser reads requests on 3 and writes answers on 4; its own
    // output goes nowhere (it is chatty about GPU and D-Bus).
    ::setpgid(0, 0);
    ::dup2(requests[0], 3);
    ::dup2(answers[1], 4);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(requests[0]);
  ::close(answers[1]);
  to_browser_ = requests[1];
  from_browser_ = answers[0];
  if (pid_ < 0) {
    problem_ = std::string("fork: ") + std::strerror(errno);
    return;
  }
  json target = call("Target.createTarget", {{"url", "about:blank"}}, true);
  if (!target.contains("targetId")) {
    problem_ = "chromium did not open a tab: " + target.dump();
    return;
  }
  json attached = call("Target.attachToTarget", {{"targetId", target["targetId"]}, {"flatten", true}}, true);
  session_ = attached.value("sessionId", "");
  if (session_.empty()) {
    problem_ = "cannot attach to the tab: " + attached.dump();
    return;
  }
  call("Page.enable");
  call("Network.enable");
  call("Runtime.enable");
  json tree = call("Page.getFrameTree");
  main_frame_ = tree.is_object() ? tree["frameTree"]["frame"].value("id", "") : "";
}

HeadlessBrowser::~HeadlessBrowser() {
  if (pid_ > 0) {
    if (problem_.empty()) {
      try {
        send({{"id", next_id_++}, {"method", "Browser.close"}});
      } catch (const std::exception&) {
        // Killed below.
      }
    }
    ::close(to_browser_);
    // Browser.close ends it within a second; a stuck one is killed.
    const auto deadline = in_seconds(10);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      ::usleep(20000);
    }
    ::kill(-pid_, SIGKILL);  // its helpers (renderer, zygote), if any outlived it
  }
  if (from_browser_ >= 0) ::close(from_browser_);
}

void HeadlessBrowser::send(const json& message) {
  std::string text = message.dump();
  text.push_back('\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(to_browser_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("writing to chromium: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

json HeadlessBrowser::receive(Clock::time_point deadline) {
  for (;;) {
    if (size_t end = buffer_.find('\0'); end != std::string::npos) {
      json message = json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      if (message.is_object() && message.contains("method")) note_event(message);
      return message;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return nullptr;
    pollfd p{from_browser_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return nullptr;
    char chunk[65536];
    ssize_t n = ::read(from_browser_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;  // the browser is gone
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void HeadlessBrowser::note_event(const json& event) {
  const std::string method = event.value("method", "");
  const json& params = event.contains("params") ? event["params"] : json::object();
  if (method == "Network.responseReceived" && params.value("type", "") == "Document" &&
      params.value("frameId", "") == main_frame_) {
    document_ = params["response"];
  } else if (method == "Page.frameNavigated" && params["frame"].value("id", "") == main_frame_) {
    frame_url_ = params["frame"].value("url", "");
  } else if (method == "Page.loadEventFired") {
    loads_.push_back(frame_url_);
  }
}

json HeadlessBrowser::call(const std::string& method, const json& params, bool browser) {
  if (pid_ <= 0) return nullptr;
  const int id = next_id_++;
  json message = {{"id", id}, {"method", method}, {"params", params}};
  if (!browser) message["sessionId"] = session_;
  try {
    send(message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << method << ": " << e.what();
    return nullptr;
  }
  const auto deadline = in_seconds(30);
  for (;;) {
    json answer = receive(deadline);
    if (answer.is_null()) {
      ADD_FAILURE() << method << ": no answer from chromium within 30 s";
      return nullptr;
    }
    if (answer.value("id", 0) != id) continue;  // an event, or another answer
    if (answer.contains("error")) {
      ADD_FAILURE() << method << " " << params.dump() << ": " << answer["error"].dump();
      return nullptr;
    }
    return answer["result"];
  }
}

bool HeadlessBrowser::open(const std::string& url) {
  loads_.clear();
  document_ = nullptr;
  json navigated = call("Page.navigate", {{"url", url}});
  if (navigated.is_null()) return false;
  if (navigated.contains("errorText")) {
    ADD_FAILURE() << url << ": " << navigated["errorText"];
    return false;
  }
  return wait_for_load(url);
}

bool HeadlessBrowser::wait_for_load(const std::string& url_part, double seconds) {
  const auto deadline = in_seconds(seconds);
  for (;;) {
    while (!loads_.empty()) {
      const std::string loaded = loads_.front();
      loads_.pop_front();
      if (loaded.find(url_part) != std::string::npos) return true;
    }
    if (receive(deadline).is_null()) {
      ADD_FAILURE() << "no page at a URL containing '" << url_part << "' loaded within " << seconds
                    << " s; the tab shows " << frame_url_;
      return false;
    }
  }
}

std::string HeadlessBrowser::url() {
  json href = evaluate("location.href");
  return href.is_string() ? href.get<std::string>() : "";
}

json HeadlessBrowser::evaluate(const std::string& expression) {
  json result = call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (result.is_null()) return nullptr;
  if (result.contains("exceptionDetails")) {
    ADD_FAILURE() << expression << " threw: " << result["exceptionDetails"].dump();
    return nullptr;
  }
  return result["result"].value("value", json());
}

bool HeadlessBrowser::wait_for(const std::string& expression, double seconds) {
  return eventually(seconds, [&] {
    json value = call("Runtime.evaluate", {{"expression", "Boolean(" + expression + ")"}, {"returnByValue", true}});
    if (!value.is_object() || value.contains("exceptionDetails") || !value.contains("result")) return false;
    return value["result"].value("value", false);
  });
}

std::string HeadlessBrowser::dom() {
  json html = evaluate("document.documentElement.outerHTML");
  return html.is_string() ? html.get<std::string>() : "";
}

bool HeadlessBrowser::screenshot(const std::string& path) {
  json shot = call("Page.captureScreenshot", {{"format", "png"}, {"captureBeyondViewport", true}});
  if (!shot.is_object() || !shot["data"].is_string()) {
    ADD_FAILURE() << "no screenshot of " << frame_url_ << ": " << shot.dump();
    return false;
  }
  std::istringstream encoded(shot["data"].get<std::string>());
  Poco::Base64Decoder decoder(encoded);
  std::ofstream out(path, std::ios::binary);
  out << decoder.rdbuf();
  out.close();
  if (!out) {
    ADD_FAILURE() << "cannot write the screenshot to " << path;
    return false;
  }
  return true;
}

bool HeadlessBrowser::click(const std::string& selector) {
  // Where a person would click: the middle of the element, scrolled into view.
  json at = evaluate("(() => { const e = document.querySelector(" + json(selector).dump() +
                     "); if (!e) return null; e.scrollIntoView({block: 'center'});"
                     " const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  if (!at.is_object()) {
    ADD_FAILURE() << "nothing on " << frame_url_ << " matches " << selector;
    return false;
  }
  const json where = {{"x", at["x"]}, {"y", at["y"]}};
  json move = where, press = where, release = where;
  move["type"] = "mouseMoved";
  press["type"] = "mousePressed";
  release["type"] = "mouseReleased";
  for (json* e : {&press, &release}) {
    (*e)["button"] = "left";
    (*e)["clickCount"] = 1;
  }
  return !call("Input.dispatchMouseEvent", move).is_null() && !call("Input.dispatchMouseEvent", press).is_null() &&
         !call("Input.dispatchMouseEvent", release).is_null();
}

bool HeadlessBrowser::type(const std::string& selector, const std::string& text) {
  if (!click(selector)) return false;
  // Select what the field holds, so the typing replaces it.
  json selected = evaluate("(() => { const e = document.querySelector(" + json(selector).dump() +
                           "); e.select(); return document.activeElement === e; })()");
  if (selected != true) {
    ADD_FAILURE() << selector << " did not take the focus";
    return false;
  }
  return !call("Input.insertText", {{"text", text}}).is_null();
}

void keep_screenshot(HeadlessBrowser& browser, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(DUCTWORK_TEST_ARTIFACTS_DIR) / "dashboard";
  fs::create_directories(dir);
  const fs::path png = dir / (std::string(testsupport::on_postgresql() ? "pg-" : "") + name + ".png");
  fs::remove(png);  // a check of this run's file, never of the last run's
  EXPECT_TRUE(browser.screenshot(png.string()));
  EXPECT_TRUE(fs::exists(png) && fs::file_size(png) > 10000) << "no screenshot at " << png;
}

std::string table_rows(HeadlessBrowser& browser, const std::string& id) {
  return browser.evaluate("Array.from(document.querySelectorAll('#" + id +
                          " tr')).slice(1).map(r => Array.from(r.cells).map(c => c.innerText).join('|')).join('\\n')");
}

}  // namespace ductwork::it
