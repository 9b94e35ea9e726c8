#include "http/wire_response.h"

#include <Poco/Net/HTTPResponse.h>
#include <Poco/Timestamp.h>

#include <sstream>

namespace ductwork::http {

std::string wire_response(const Response& response, const WireOptions& options) {
  Poco::Net::HTTPResponse head(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(response.status));
  head.setVersion(Poco::Net::HTTPMessage::HTTP_1_1);
  head.setDate(Poco::Timestamp());
  head.setContentType(response.content_type);
  head.setContentLength64(static_cast<Poco::Int64>(response.body.size()));
  head.setKeepAlive(options.keep_alive);
  head.set("Cache-Control", "no-store");
  head.set("X-Content-Type-Options", "nosniff");
  if (response.status == 401) head.set("WWW-Authenticate", "Bearer realm=\"ductwork\"");
  for (const auto& [name, value] : response.headers) head.set(name, value);
  std::ostringstream text;
  head.write(text);
  std::string bytes = text.str();
  if (!options.head_only) bytes += response.body;
  return bytes;
}

}  // namespace ductwork::http
