#include "engine/error_info.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>
#include <vector>

namespace ductwork {

ErrorInfo make_error_info(std::string klass, std::string message, std::string backtrace) {
  if (message.size() > kErrorMessageLimit) {
    size_t cut = kErrorMessageLimit;
    // Back up over UTF-8 continuation bytes so the cut lands on a boundary.
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
    message.resize(cut);
  }
  std::vector<std::string> frames;
  std::istringstream in(backtrace);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) frames.push_back(line);
  }
  std::string trimmed;
  for (size_t i = 0; i < frames.size() && i < kErrorBacktraceFrames; ++i) {
    if (!trimmed.empty()) trimmed += "\n";
    trimmed += frames[i];
  }
  if (frames.size() > kErrorBacktraceFrames) {
    trimmed += "\n... " + std::to_string(frames.size() - kErrorBacktraceFrames) + " more frames";
  }
  return ErrorInfo{std::move(klass), std::move(message), std::move(trimmed)};
}

std::string demangled_type_name(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  char* readable = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = (status == 0 && readable) ? readable : mangled;
  std::free(readable);
  return out;
}

}  // namespace ductwork
