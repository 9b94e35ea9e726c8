#include "http_client.h"

#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>

#include <sstream>

namespace ductwork::it {

std::string Reply::error_code() const {
  json d = doc();
  return d.is_object() && d.contains("error") ? d["error"].value("code", "") : "";
}

Reply http(const std::string& address, const Call& call) {
  const size_t colon = address.rfind(':');
  Poco::Net::HTTPClientSession session(address.substr(0, colon),
                                       static_cast<Poco::UInt16>(std::stoi(address.substr(colon + 1))));
  session.setTimeout(Poco::Timespan(30, 0));
  Poco::Net::HTTPRequest request(call.method, call.path, Poco::Net::HTTPMessage::HTTP_1_1);
  if (!call.token.empty()) request.set("Authorization", std::string("Bearer ") + call.token);
  for (const auto& [name, value] : call.headers) request.set(name, value);
  if (call.method == "POST") {
    if (!call.content_type.empty()) request.setContentType(call.content_type);
    if (call.chunked) {
      request.setChunkedTransferEncoding(true);
    } else {
      request.setContentLength(static_cast<std::streamsize>(call.body.size()));
    }
  }
  std::ostream& out = session.sendRequest(request);
  out << call.body;
  Poco::Net::HTTPResponse response;
  std::istream& in = session.receiveResponse(response);
  Reply reply;
  reply.status = response.getStatus();
  std::ostringstream text;
  text << in.rdbuf();
  reply.body = text.str();
  for (const auto& [name, value] : response) reply.headers[name] = value;
  return reply;
}

Reply get(const std::string& address, const std::string& path, const std::string& token) {
  Call call;
  call.path = path;
  call.token = token;
  return http(address, call);
}

Reply post(const std::string& address, const std::string& path, const std::string& body) {
  Call call;
  call.method = "POST";
  call.path = path;
  call.body = body;
  return http(address, call);
}

namespace {

testsupport::ProcessOptions with_env(testsupport::ProcessOptions options,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& e : env) options.env.push_back(e);
  return options;
}

}  // namespace

Served::Served(const Workspace& ws, const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, std::string>>& env)
    : process_(ws.command(args), with_env(ws.process_options(120), env)) {
  eventually(30, [&] {
    std::string out = process_.stdout_so_far();
    size_t at = out.find("\"HTTP server listening\"");
    if (at == std::string::npos) return !process_.running();
    size_t start = out.rfind('\n', at);
    start = start == std::string::npos ? 0 : start + 1;
    json line = json::parse(out.substr(start, out.find('\n', at) - start), nullptr, false);
    if (line.is_object()) address_ = line.value("address", "");
    return true;
  });
}

ProcessResult Served::stop() {
  process_.signal(SIGTERM);
  return process_.wait(60);
}

ConfigOptions http_options(const std::string& http_extra) {
  ConfigOptions options;
  options.extra = std::string("http: {listen: '127.0.0.1:0', token: '") + kToken + "'" + http_extra + "}\n" +
                  "supervisor: {polling_timeout: 0.1}\n";
  return options;
}

std::unique_ptr<Served> serve_open_dashboard(Workspace& ws, ConfigOptions options) {
  options.extra = "http: {listen: '127.0.0.1:0'}\n";
  ws.write_config(options);
  return std::make_unique<Served>(ws, std::vector<std::string>{"serve"});
}

void define_echo(Workspace& ws) { ws.define("echo.yml", chain_definition("EchoTwice", {"Echo", "Echo"})); }

double metrics_sample(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace ductwork::it
