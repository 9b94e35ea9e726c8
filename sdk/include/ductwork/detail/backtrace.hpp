// ductwork/detail/backtrace.hpp — type-name demangling and best-effort stack
// capture for the error fields of a step's outcome.
#ifndef DUCTWORK_DETAIL_BACKTRACE_HPP
#define DUCTWORK_DETAIL_BACKTRACE_HPP

#include <cstdlib>
#include <memory>
#include <string>

#include "ductwork/detail/macros.hpp"

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define DUCTWORK_HAVE_CXXABI 1
#endif
#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define DUCTWORK_HAVE_EXECINFO 1
#endif

namespace ductwork {
namespace detail {

// The readable form of a mangled name (typeid(x).name() or a symbol), e.g.
// "ductwork::testkit::IntentionalFailure"; `mangled` itself when it cannot
// be demangled.
inline std::string demangle(const char* mangled) {
#ifdef DUCTWORK_HAVE_CXXABI
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> readable(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  if (status == 0 && readable) return readable.get();
#endif
  return mangled;
}

// Demangles the symbol inside one backtrace_symbols() line,
// "lib.so(_ZN3foo3barEv+0x1c) [0x7f...]" -> "lib.so(foo::bar()+0x1c) [0x7f...]".
inline std::string demangle_frame(const std::string& frame) {
  std::size_t open = frame.find('(');
  std::size_t plus = frame.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return frame;
  std::string symbol = frame.substr(open + 1, plus - open - 1);
  return frame.substr(0, open + 1) + demangle(symbol.c_str()) + frame.substr(plus);
}

// The calling thread's stack, one frame per line, nearest first, without
// the `skip` innermost frames (this function's own frame is always left
// out). Empty where <execinfo.h> is unavailable. Symbols hidden by the
// plugin's visibility show as "lib.so(+0x...)": resolve them with addr2line.
DUCTWORK_NOINLINE inline std::string capture_backtrace(int skip) {
  std::string out;
#ifdef DUCTWORK_HAVE_EXECINFO
  constexpr int kMaxFrames = 64;
  void* frames[kMaxFrames];
  int count = ::backtrace(frames, kMaxFrames);
  std::unique_ptr<char*, void (*)(void*)> symbols(::backtrace_symbols(frames, count), std::free);
  if (!symbols) return out;
  for (int i = skip + 1; i < count; ++i) {
    if (!out.empty()) out += '\n';
    out += demangle_frame(symbols.get()[i]);
  }
#else
  (void)skip;
#endif
  return out;
}

}  // namespace detail
}  // namespace ductwork

#endif  // DUCTWORK_DETAIL_BACKTRACE_HPP
