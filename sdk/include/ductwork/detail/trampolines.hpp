// ductwork/detail/trampolines.hpp — the create/execute/destroy functions a
// dw_step_class points at. They are the exception barrier of the C ABI:
// every one is noexcept and turns whatever escapes a step into the error
// fields of the outcome (dw_outcome, or execute's four slots).
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
// when the host is new enough to have that field (the path of `execute`;
// execute2 hands the flags back in its dw_outcome).
inline void report_error_flags(const dw_step_context* raw, bool retryable) noexcept {
  if (retryable || raw == nullptr || raw->host == nullptr) return;
  const dw_host_api* host = raw->host;
  if (host->struct_size < offsetof(dw_host_api, set_error_flags) + sizeof host->set_error_flags) return;
  if (host->set_error_flags != nullptr) host->set_error_flags(raw->host_handle, DW_ERROR_NOT_RETRYABLE);
}

// What one call hands back, before it is written in the form the host asked
// for (dw_outcome, or execute's four slots). Strings are malloc copies the
// host releases through free_plugin_string.
struct OutcomeStrings {
  char* output_json = nullptr;
  char* error_klass = nullptr;
  char* error_message = nullptr;
  char* error_backtrace = nullptr;
  bool retryable = true;
};

// Fills the error fields of `out` from the exception being handled.
inline void report_current_exception(OutcomeStrings& out) noexcept {
  try {
    ErrorInfo info = describe_current_exception();
    out.retryable = info.retryable;
    out.error_klass = copy_string(info.klass);
    out.error_message = copy_string(info.message);
    out.error_backtrace = info.backtrace.empty() ? nullptr : copy_string(info.backtrace);
  } catch (...) {  // out of memory while describing it
    out.error_klass = copy_string("std::bad_alloc");
    out.error_message = copy_string("out of memory while reporting an error");
  }
}

// Writes `strings` into a host's dw_outcome: only the fields that fit in
// the struct_size the host allocated (a string that does not fit is freed).
inline void write_outcome(dw_outcome* out, OutcomeStrings& strings) noexcept {
  const std::size_t size = out->struct_size;
  auto put = [size](std::size_t offset, char*& field, char*& value) {
    if (offset + sizeof(char*) <= size) {
      field = value;
    } else {
      free_plugin_string(value);
    }
    value = nullptr;
  };
  if (offsetof(dw_outcome, error_flags) + sizeof(std::uint32_t) <= size) {
    out->error_flags = strings.retryable ? 0u : DW_ERROR_NOT_RETRYABLE;
  }
  put(offsetof(dw_outcome, output_json), out->output_json, strings.output_json);
  put(offsetof(dw_outcome, error_klass), out->error_klass, strings.error_klass);
  put(offsetof(dw_outcome, error_message), out->error_message, strings.error_message);
  put(offsetof(dw_outcome, error_backtrace), out->error_backtrace, strings.error_backtrace);
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

// Runs one execution into `out`. On success out.output_json is the step's
// output as JSON text; on failure the error fields describe it. Never throws.
inline int run_step(void* instance, const dw_step_context* raw, OutcomeStrings& out) noexcept {
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
    out.output_json = copy_string(output);
    if (out.output_json == nullptr) throw std::bad_alloc();
    return DW_EXECUTE_OK;
  } catch (...) {
    report_current_exception(out);
    return DW_EXECUTE_ERROR;
  }
}

// dw_step_class.execute, for a host older than execute2: the outcome in
// four slots (dw_outcome_v1_slot), a permanent error through
// dw_host_api.set_error_flags.
inline int execute_step(void* instance, const dw_step_context* raw, char** outcome_v1) noexcept {
  if (outcome_v1 == nullptr) return DW_EXECUTE_ERROR;
  OutcomeStrings strings;
  int rc = run_step(instance, raw, strings);
  if (rc != DW_EXECUTE_OK) report_error_flags(raw, strings.retryable);
  outcome_v1[DW_V1_OUTPUT_JSON] = strings.output_json;
  outcome_v1[DW_V1_ERROR_KLASS] = strings.error_klass;
  outcome_v1[DW_V1_ERROR_MESSAGE] = strings.error_message;
  outcome_v1[DW_V1_ERROR_BACKTRACE] = strings.error_backtrace;
  return rc;
}

// dw_step_class.execute2: the outcome in the host's dw_outcome.
inline int execute_step2(void* instance, const dw_step_context* raw, dw_outcome* out) noexcept {
  if (out == nullptr || out->struct_size < sizeof(std::uint32_t)) return DW_EXECUTE_ERROR;
  OutcomeStrings strings;
  int rc = run_step(instance, raw, strings);
  write_outcome(out, strings);
  return rc;
}

}  // namespace detail
}  // namespace ductwork

#endif  // DUCTWORK_DETAIL_TRAMPOLINES_HPP
