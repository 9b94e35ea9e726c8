#include "browser.h"

#include <Poco/Base64Decoder.h>
#include <Poco/Buffer.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/WebSocket.h>
#include <Poco/URI.h>

#include <fstream>
#include <sstream>

namespace ductwork::it {
namespace {

using Clock = std::chrono::steady_clock;

// GET http://127.0.0.1:port/path: the body ("" when it failed).
std::string devtools_get(int port, const std::string& path) {
  try {
    Poco::Net::HTTPClientSession session("127.0.0.1", static_cast<Poco::UInt16>(port));
    session.setTimeout(Poco::Timespan(10, 0));
    Poco::Net::HTTPRequest request(Poco::Net::HTTPRequest::HTTP_GET, path, Poco::Net::HTTPMessage::HTTP_1_1);
    session.sendRequest(request);
    Poco::Net::HTTPResponse response;
    std::istream& in = session.receiveResponse(response);
    std::stringstream body;
    body << in.rdbuf();
    return body.str();
  } catch (const Poco::Exception&) {
    return "";
  }
}

}  // namespace

Browser::Browser() {
  const std::string chromium = find_on_path("chromium");
  if (chromium.empty()) {
    ADD_FAILURE() << "chromium is not installed (packaging/install-deps.sh installs it)";
    return;
  }
  // Port 0: chromium picks a free one and writes it to DevToolsActivePort
  // in the profile.
  process_ = std::make_unique<testsupport::Subprocess>(
      std::vector<std::string>{chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                               "--no-first-run", "--window-size=1400,1100", "--remote-debugging-port=0",
                               "--remote-allow-origins=*", "--user-data-dir=" + profile_.path(), "about:blank"},
      testsupport::ProcessOptions{"", {}, {}, 600});
  int port = 0;
  const bool listening = eventually(30, [&] {
    std::ifstream file(profile_.file("DevToolsActivePort"));
    return static_cast<bool>(file >> port) && port > 0;
  });
  if (!listening) {
    ADD_FAILURE() << "chromium did not open its DevTools port: " << process_->stderr_so_far();
    return;
  }
  // The page chromium opened.
  std::string target;
  eventually(30, [&] {
    json list = json::parse(devtools_get(port, "/json/list"), nullptr, false);
    if (!list.is_array()) return false;
    for (const auto& t : list) {
      if (t.value("type", "") == "page" && t.contains("webSocketDebuggerUrl")) target = t["webSocketDebuggerUrl"];
    }
    return !target.empty();
  });
  if (target.empty()) {
    ADD_FAILURE() << "chromium shows no page to attach to";
    return;
  }
  try {
    session_ = std::make_unique<Poco::Net::HTTPClientSession>("127.0.0.1", static_cast<Poco::UInt16>(port));
    Poco::Net::HTTPRequest request(Poco::Net::HTTPRequest::HTTP_GET, Poco::URI(target).getPathAndQuery(),
                                   Poco::Net::HTTPMessage::HTTP_1_1);
    Poco::Net::HTTPResponse response;
    socket_ = std::make_unique<Poco::Net::WebSocket>(*session_, request, response);
    socket_->setReceiveTimeout(Poco::Timespan(1, 0));
    socket_->setMaxPayloadSize(64 * 1024 * 1024);
  } catch (const Poco::Exception& e) {
    ADD_FAILURE() << "cannot attach to chromium's page: " << e.displayText();
    socket_.reset();
  }
}

Browser::~Browser() {
  if (socket_) {
    try {
      call("Browser.close", json::object(), 5);
    } catch (...) {
    }
    socket_.reset();
  }
  if (process_) process_->wait(10);  // then SIGKILL
}

json Browser::call(const std::string& method, const json& params, double seconds) {
  if (!socket_) return nullptr;
  const int id = ++next_id_;
  const std::string message = json{{"id", id}, {"method", method}, {"params", params}}.dump();
  socket_->sendFrame(message.data(), static_cast<int>(message.size()), Poco::Net::WebSocket::FRAME_TEXT);
  // Events arrive in between; the answer is the message with our id.
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  std::string text;
  while (Clock::now() < deadline) {
    Poco::Buffer<char> buffer(0);
    int flags = 0;
    try {
      socket_->receiveFrame(buffer, flags);
    } catch (const Poco::TimeoutException&) {
      continue;
    }
    text.append(buffer.begin(), buffer.size());
    if ((flags & Poco::Net::WebSocket::FRAME_FLAG_FIN) == 0) continue;  // more fragments follow
    json reply = json::parse(text, nullptr, false);
    text.clear();
    if (!reply.is_object() || reply.value("id", -1) != id) continue;
    if (reply.contains("error")) {
      ADD_FAILURE() << method << ": " << reply["error"].dump();
      return nullptr;
    }
    return reply["result"];
  }
  ADD_FAILURE() << method << ": no answer within " << seconds << " s";
  return nullptr;
}

void Browser::open(const std::string& url) {
  call("Page.navigate", {{"url", url}});
  EXPECT_TRUE(wait_for("document.readyState === 'complete' && location.href === " + json(url).dump(), 30))
      << "the page did not load: " << url;
}

json Browser::eval(const std::string& expression) {
  json result = call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (result.is_null()) return nullptr;
  if (result.contains("exceptionDetails")) {
    ADD_FAILURE() << expression << ": " << result["exceptionDetails"].dump();
    return nullptr;
  }
  return result["result"].value("value", json());
}

bool Browser::wait_for(const std::string& expression, double seconds) {
  return eventually(seconds, [&] {
    json value = call("Runtime.evaluate", {{"expression", "Boolean(" + expression + ")"}, {"returnByValue", true}});
    if (value.is_null() || !value.contains("result")) return false;
    return value["result"].value("value", false);
  });
}

void Browser::type(const std::string& text) { call("Input.insertText", {{"text", text}}); }

void Browser::screenshot(const std::string& path) {
  json shot = call("Page.captureScreenshot", {{"format", "png"}, {"captureBeyondViewport", true}});
  if (!shot.is_object() || !shot.contains("data")) return;
  std::istringstream encoded(shot["data"].get<std::string>());
  Poco::Base64Decoder decoder(encoded);
  std::ofstream out(path, std::ios::binary);
  out << decoder.rdbuf();
}

}  // namespace ductwork::it
