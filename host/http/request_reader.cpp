#include "http/request_reader.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <vector>

namespace ductwork::http {
namespace {

// A chunk-size line ("1f4;name=value") or chunk end longer than this is
// not one.
constexpr std::size_t kMaxChunkLine = 1024;

bool is_token_char(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return is_token_char(c); });
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// `text` split at `separator`, each part trimmed of spaces and tabs.
std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t at = 0;
  for (;;) {
    const size_t end = text.find(separator, at);
    parts.push_back(trimmed(text.substr(at, end == std::string::npos ? std::string::npos : end - at)));
    if (end == std::string::npos) return parts;
    at = end + 1;
  }
}

}  // namespace

void RequestReader::reset() {
  stage_ = Stage::kIdle;
  scanned_ = 0;
  head_read_ = false;
  head_ = Poco::Net::HTTPRequest();
  expects_continue_ = false;
  chunked_ = false;
  content_length_ = 0;
  chunk_left_ = 0;
  trailer_bytes_ = 0;
  body_.clear();
  refusal_.reset();
}

RequestReader::Progress RequestReader::refuse(int status, const std::string& code, const std::string& message) {
  stage_ = Stage::kRefused;
  refusal_.emplace(status, code, message);
  return Progress::kRefused;
}

RequestReader::Progress RequestReader::read(std::string& input) {
  switch (stage_) {
    case Stage::kIdle:
    case Stage::kHead:
      return read_head(input);
    case Stage::kBody:
      return read_body(input);
    case Stage::kChunkSize:
    case Stage::kChunkData:
    case Stage::kChunkEnd:
    case Stage::kTrailer:
      return read_chunked(input);
    case Stage::kComplete:
      return Progress::kComplete;
    case Stage::kRefused:
      break;
  }
  return Progress::kRefused;
}

RequestReader::Progress RequestReader::read_head(std::string& input) {
  if (stage_ == Stage::kIdle) {
    // Empty lines before a request are ignored (RFC 9112 §2.2): a client
    // may end a body with an extra CR LF.
    input.erase(0, std::min(input.size(), input.find_first_not_of("\r\n")));
    if (input.empty()) return Progress::kNothing;
    stage_ = Stage::kHead;
    scanned_ = 0;
  }
  // The head ends at its first empty line (CR LF CR LF, or bare LFs).
  size_t head_end = std::string::npos, body_start = 0;
  for (size_t i = input.find('\n', scanned_); i != std::string::npos; i = input.find('\n', i + 1)) {
    if (i + 1 < input.size() && input[i + 1] == '\n') {
      head_end = i + 1;
      body_start = i + 2;
      break;
    }
    if (i + 2 < input.size() && input[i + 1] == '\r' && input[i + 2] == '\n') {
      head_end = i + 1;
      body_start = i + 3;
      break;
    }
  }
  if (head_end == std::string::npos ? input.size() > kMaxHeadBytes : head_end > kMaxHeadBytes) {
    return refuse(
        431, "header_too_large",
        "the request head (request line and header fields) is more than " + std::to_string(kMaxHeadBytes) + " bytes");
  }
  if (head_end == std::string::npos) {
    // The last two bytes may begin the empty line: search them again.
    scanned_ = input.size() < 2 ? 0 : input.size() - 2;
    return Progress::kPartial;
  }
  const std::string text = input.substr(0, head_end);
  input.erase(0, body_start);
  return parse_head(text);
}

RequestReader::Progress RequestReader::parse_head(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('\r') != std::string::npos) return refuse(400, "bad_request", "a bare CR in the request head");
    lines.push_back(std::move(line));
    at = end + 1;
  }
  // request-line = method SP request-target SP HTTP-version
  const std::string& request_line = lines.front();
  const size_t first_space = request_line.find(' ');
  const size_t last_space = request_line.rfind(' ');
  if (first_space == std::string::npos || first_space == last_space) {
    return refuse(400, "bad_request", "the request line is not 'METHOD TARGET HTTP/1.1'");
  }
  const std::string method = request_line.substr(0, first_space);
  const std::string target = request_line.substr(first_space + 1, last_space - first_space - 1);
  const std::string version = request_line.substr(last_space + 1);
  const bool target_ok = !target.empty() && std::none_of(target.begin(), target.end(),
                                                         [](unsigned char c) { return c <= 0x20 || c == 0x7f; });
  if (!is_token(method) || !target_ok) {
    return refuse(400, "bad_request", "the request line is not 'METHOD TARGET HTTP/1.1'");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.size() == 8 && version.compare(0, 5, "HTTP/") == 0 &&
        std::isdigit(static_cast<unsigned char>(version[5]))) {
      return refuse(505, "http_version_not_supported", "this server speaks HTTP/1.1 and HTTP/1.0, not " + version);
    }
    return refuse(400, "bad_request", "the request line is not 'METHOD TARGET HTTP/1.1'");
  }
  head_.setMethod(method);
  head_.setURI(target);
  head_.setVersion(version);

  std::vector<std::string> lengths, codings;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) continue;
    if (line[0] == ' ' || line[0] == '\t') {
      return refuse(400, "bad_request", "a header field continued on the next line (obsolete line folding)");
    }
    const size_t colon = line.find(':');
    const std::string name = line.substr(0, colon);
    if (colon == std::string::npos || !is_token(name)) {
      return refuse(400, "bad_request", "a header line is not 'Name: value'");
    }
    const std::string value = trimmed(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; })) {
      return refuse(400, "bad_request", "the header field " + name + " holds a control character");
    }
    const std::string key = lower(name);
    if (key == "content-length") {
      for (const std::string& part : split_list(value, ',')) lengths.push_back(part);
    } else if (key == "transfer-encoding") {
      for (const std::string& part : split_list(value, ',')) codings.push_back(lower(part));
    }
    head_.add(name, value);
  }

  // The body's framing (RFC 9112 §6.3). Both framings at once is how
  // requests are smuggled past proxies: refused.
  if (!codings.empty()) {
    if (!lengths.empty()) return refuse(400, "bad_request", "both Content-Length and Transfer-Encoding");
    if (version == "HTTP/1.0") return refuse(400, "bad_request", "Transfer-Encoding in an HTTP/1.0 request");
    if (codings != std::vector<std::string>{"chunked"}) {
      return refuse(400, "bad_request", "Transfer-Encoding other than chunked: " + head_.get("Transfer-Encoding"));
    }
    chunked_ = true;
  }
  for (const std::string& length : lengths) {
    if (length.empty() || length.find_first_not_of("0123456789") != std::string::npos || length != lengths.front()) {
      return refuse(400, "bad_request", "Content-Length is not one number of bytes");
    }
    // Past 18 digits it is past any http.max_body: 413, not an overflow.
    content_length_ = length.size() > 18 ? LLONG_MAX : std::stoll(length);
  }
  const std::string expect = lower(head_.get("Expect", ""));
  if (!expect.empty() && expect != "100-continue") {
    return refuse(417, "expectation_failed", "Expect: " + head_.get("Expect") + " (only 100-continue is known)");
  }
  expects_continue_ = !expect.empty() && version == "HTTP/1.1";
  head_read_ = true;
  stage_ = chunked_ ? Stage::kChunkSize : Stage::kBody;
  return Progress::kHead;
}

RequestReader::Progress RequestReader::read_body(std::string& input) {
  if (content_length_ > max_body_) {
    return refuse(413, "payload_too_large",
                  "the body is " + std::to_string(content_length_) + " bytes, more than http.max_body (" +
                      std::to_string(max_body_) + ")");
  }
  const auto wanted = static_cast<size_t>(content_length_) - body_.size();
  const size_t taken = std::min(wanted, input.size());
  body_.append(input, 0, taken);
  input.erase(0, taken);
  if (body_.size() < static_cast<size_t>(content_length_)) return Progress::kPartial;
  stage_ = Stage::kComplete;
  return Progress::kComplete;
}

std::optional<std::string> RequestReader::take_line(std::string& input, std::size_t limit, bool* too_long) {
  const size_t end = input.find('\n');
  if (end == std::string::npos || end > limit) {
    *too_long = end != std::string::npos || input.size() > limit;
    return std::nullopt;
  }
  std::string line = input.substr(0, end);
  input.erase(0, end + 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

RequestReader::Progress RequestReader::read_chunked(std::string& input) {
  for (;;) {
    if (stage_ == Stage::kChunkData) {
      const size_t taken = std::min(static_cast<size_t>(chunk_left_), input.size());
      body_.append(input, 0, taken);
      input.erase(0, taken);
      chunk_left_ -= static_cast<long long>(taken);
      if (chunk_left_ > 0) return Progress::kPartial;
      stage_ = Stage::kChunkEnd;
      continue;
    }
    const bool trailer = stage_ == Stage::kTrailer;
    bool too_long = false;
    std::optional<std::string> line =
        take_line(input, trailer ? kMaxHeadBytes - std::min(trailer_bytes_, kMaxHeadBytes) : kMaxChunkLine, &too_long);
    if (too_long && trailer) {
      return refuse(431, "header_too_large",
                    "the trailer fields are more than " + std::to_string(kMaxHeadBytes) + " bytes");
    }
    if (too_long) {
      return refuse(400, "bad_request",
                    "a chunk's framing line is longer than " + std::to_string(kMaxChunkLine) + " bytes");
    }
    if (!line) return Progress::kPartial;
    if (stage_ == Stage::kChunkEnd) {
      if (!line->empty()) return refuse(400, "bad_request", "a chunk is longer than its size line says");
      stage_ = Stage::kChunkSize;
    } else if (stage_ == Stage::kTrailer) {
      trailer_bytes_ += line->size() + 2;
      if (line->empty()) {
        stage_ = Stage::kComplete;
        return Progress::kComplete;
      }
    } else {
      // chunk-size [; extensions], hexadecimal; past 15 digits it is past
      // any http.max_body: 413, not an overflow.
      std::string size = trimmed(line->substr(0, line->find(';')));
      if (size.empty() || size.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
        return refuse(400, "bad_request", "a chunk size is not hexadecimal");
      }
      size.erase(0, std::min(size.size() - 1, size.find_first_not_of('0')));
      const long long bytes = size.size() > 15 ? LLONG_MAX : std::stoll(size, nullptr, 16);
      if (bytes > max_body_ - static_cast<long long>(body_.size())) {
        return refuse(413, "payload_too_large",
                      "the body is more than http.max_body (" + std::to_string(max_body_) + ") bytes");
      }
      chunk_left_ = bytes;
      stage_ = bytes == 0 ? Stage::kTrailer : Stage::kChunkData;
    }
  }
}

}  // namespace ductwork::http
