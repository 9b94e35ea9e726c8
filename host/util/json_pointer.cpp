#include "util/json_pointer.h"

#include <string>

namespace ductwork {
namespace {

// One reference token with "~1" as '/' and "~0" as '~'.
std::string unescaped(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

// An array index token: digits, no leading zero (but "0" itself).
bool index_of(std::string_view token, std::size_t* index) {
  if (token.empty() || token.size() > 18 || (token.size() > 1 && token.front() == '0')) return false;
  std::size_t n = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  *index = n;
  return true;
}

}  // namespace

const Json* resolve_json_pointer(const Json& doc, std::string_view pointer) {
  if (pointer.empty()) return &doc;
  if (pointer.front() != '/') return nullptr;
  const Json* at = &doc;
  std::size_t start = 1;
  while (true) {
    const std::size_t end = pointer.find('/', start);
    const std::string_view token = pointer.substr(start, end == std::string_view::npos ? std::string_view::npos
                                                                                         : end - start);
    if (at->is_array()) {
      std::size_t index = 0;
      if (!index_of(token, &index) || index >= at->as_array().size()) return nullptr;
      at = &at->as_array()[index];
    } else if (at->is_object()) {
      at = at->find(unescaped(token));
      if (at == nullptr) return nullptr;
    } else {
      return nullptr;
    }
    if (end == std::string_view::npos) return at;
    start = end + 1;
  }
}

}  // namespace ductwork
