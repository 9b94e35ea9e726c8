// ductwork/detail/trampolines.hpp — the create/execute/destroy functions a
// dw_step_class points at. They are the exception barrier of the C ABI:
// every one is noexcept and turns whatever escapes a step into the error
// fields of dw_step_outcome.
#ifndef DUCTWORK_DETAIL_TRAMPOLINES_HPP
#define DUCTWORK_DETAIL_TRAMPOLINES_HPP

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <typeinfo>

#include "ductwork/abi.h"
#include "ductwork/detail/backtrace.hpp"
#include "ductwork/errors.hpp"
#include "ductwork/step_context.hpp"

// Needs Step complete; step.hpp includes this header once Step is defined.
#ifndef DUCTWORK_STEP_HPP
#error "include ductwork/step.hpp, not ductwork/detail/trampolines.hpp"
#endif

namespace ductwork {
namespace detail {

// A NUL-terminated malloc copy of `s`, released by free_plugin_string; NULL
// when out of memory. Strings handed to the host are allocated only here.
inline char* copy_string(std::string_view s) noexcept {
  char* copy = static_cast<char*>(std::malloc(s.size() + 1));
  if (copy == nullptr) return nullptr;
  if (!s.empty()) std::memcpy(copy, s.data(), s.size());
  copy[s.size()] = '\0';
  return copy;
}

// dw_plugin.free_string: the host releases our strings through this.
inline void free_plugin_string(char* s) noexcept { std::free(s); }

// What a dw_step_class's void* instance points at. Holding the constructor's
// failure lets execute report it as an ordinary step error.
struct StepInstance {
  std::unique_ptr<Step> step;
  std::string create_error_klass;
  std::string create_error_message;
  bool create_error_retryable = true;
};

struct ErrorInfo {
  std::string klass;
  std::string message;
  std::string backtrace;
  bool retryable = true;
};

// Describes the exception being handled; call only inside a catch block.
// Class name: Error::klass() when set, else the demangled dynamic type
// (e.g. "std::out_of_range"); "UnknownException" for non-std exceptions.
inline ErrorInfo describe_current_exception() {
  ErrorInfo info;
  try {
    throw;
  } catch (const Error& e) {
    info.klass = e.klass().empty() ? demangle(typeid(e).name()) : e.klass();
    info.message = e.what();
    info.backtrace = e.backtrace();
    info.retryable = e.retryable();
  } catch (const std::exception& e) {
    info.klass = demangle(typeid(e).name());
    info.message = e.what();
  } catch (...) {
    info.klass = "UnknownException";
    info.message = "a value that is not a std::exception was thrown";
#ifdef DUCTWORK_HAVE_CXXABI
    if (const std::type_info* type = abi::__cxa_current_exception_type()) {
      info.message += " (type " + demangle(type->name()) + ")";
    }
#endif
  }
  // The raise site's frames are gone by now; this stack at least names the
  // step and the trampoline that caught it.
  if (info.backtrace.empty()) info.backtrace = capture_backtrace(1);
  return info;
}

// Tells the host about a permanent error through dw_host_api.set_error_flags,
// when the host is new enough to have that field.
inline void report_error_flags(const dw_step_context* raw, const ErrorInfo& info) noexcept {
  if (info.retryable || raw == nullptr || raw->host == nullptr) return;
  const dw_host_api* host = raw->host;
  if (host->struct_size < offsetof(dw_host_api, set_error_flags) + sizeof host->set_error_flags) return;
  if (host->set_error_flags != nullptr) host->set_error_flags(raw->host_handle, DW_ERROR_NOT_RETRYABLE);
}

// Fills the error fields of `out` from the exception being handled.
inline void report_current_exception(dw_step_outcome* out, const dw_step_context* raw = nullptr) noexcept {
  try {
    ErrorInfo info = describe_current_exception();
    report_error_flags(raw, info);
    out->error_klass = copy_string(info.klass);
    out->error_message = copy_string(info.message);
    out->error_backtrace = info.backtrace.empty() ? nullptr : copy_string(info.backtrace);
  } catch (...) {  // out of memory while describing it
    out->error_klass = copy_string("std::bad_alloc");
    out->error_message = copy_string("out of memory while reporting a step error");
  }
}

template <class T>
void* create_step() noexcept {
  auto* instance = new (std::nothrow) StepInstance;
  if (instance == nullptr) return nullptr;
  try {
    instance->step = std::make_unique<T>();
  } catch (...) {
    try {
      ErrorInfo info = describe_current_exception();
      instance->create_error_klass = std::move(info.klass);
      instance->create_error_message = "constructing the step failed: " + info.message;
      instance->create_error_retryable = info.retryable;
    } catch (...) {
      // Leave the fields empty; execute still reports a failed construction.
    }
  }
  return instance;
}

inline void destroy_step(void* instance) noexcept { delete static_cast<StepInstance*>(instance); }

// dw_step_class.execute. On success out->output_json is the step's output as
// JSON text; on failure the error_* fields describe it. Never throws.
inline int execute_step(void* instance, const dw_step_context* raw, dw_step_outcome* out) noexcept {
  if (out == nullptr) return DW_EXECUTE_ERROR;
  *out = dw_step_outcome{};
  try {
    auto* holder = static_cast<StepInstance*>(instance);
    if (holder == nullptr) {
      throw Error("ductwork::CreateFailed", "step instance is NULL (create failed)");
    }
    if (!holder->step) {
      throw Error(holder->create_error_klass.empty() ? "ductwork::CreateFailed"
                                                     : holder->create_error_klass,
                  holder->create_error_message.empty() ? "constructing the step failed"
                                                       : holder->create_error_message)
          .retryable(holder->create_error_retryable);
    }
    if (raw == nullptr) throw Error("ductwork::AbiError", "execute called without a step context");
    StepContext ctx(*raw);
    std::string output = holder->step->execute(ctx).dump();
    out->output_json = copy_string(output);
    if (out->output_json == nullptr) throw std::bad_alloc();
    return DW_EXECUTE_OK;
  } catch (...) {
    report_current_exception(out, raw);
    return DW_EXECUTE_ERROR;
  }
}

}  // namespace detail
}  // namespace ductwork

#endif  // DUCTWORK_DETAIL_TRAMPOLINES_HPP
