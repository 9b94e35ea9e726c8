#pragma once

// A Response as the bytes sent on the connection: the status line, the
// headers every answer of this server carries (no caching, no MIME
// sniffing, the Bearer challenge on a 401), the response's own headers,
// then the body.
#include <string>

#include "http/http_message.h"

namespace ductwork::http {

struct WireOptions {
  bool keep_alive = true;  // false: "Connection: close", the connection ends after it
  bool head_only = false;  // a HEAD request: the headers of the body, not the body
};

std::string wire_response(const Response& response, const WireOptions& options);

// The interim answer to `Expect: 100-continue`: send the body.
inline constexpr const char* kContinueResponse = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace ductwork::http
