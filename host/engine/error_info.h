#pragma once

#include <exception>
#include <string>

#include "store/store_types.h"

namespace ductwork {

// Message and backtrace limits of a stored error (as Ductwork): the frames
// nearest the raise are the diagnostic ones; the rest is the work loop.
constexpr size_t kErrorMessageLimit = 255;
constexpr size_t kErrorBacktraceFrames = 10;

// Builds an ErrorInfo with the message cut to kErrorMessageLimit bytes (never
// inside a UTF-8 sequence) and the backtrace to kErrorBacktraceFrames lines
// plus "... N more frames".
ErrorInfo make_error_info(std::string klass, std::string message, std::string backtrace = std::string());

// The dynamic type of `e` as a readable C++ name ("ductwork::InjectedFault").
std::string demangled_type_name(const std::exception& e);

}  // namespace ductwork
