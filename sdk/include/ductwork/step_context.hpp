// ductwork/step_context.hpp — what a running step sees: its arguments, its
// identity, the run context, a logger and the cancellation flag. A C++ view
// over one dw_step_context; every host call goes through the dw_host_api
// table it carries.
#ifndef DUCTWORK_STEP_CONTEXT_HPP
#define DUCTWORK_STEP_CONTEXT_HPP

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "ductwork/abi.h"
#include "ductwork/errors.hpp"
#include "ductwork/json.hpp"

namespace ductwork {

enum class LogLevel {
  kDebug = DW_LOG_DEBUG,
  kInfo = DW_LOG_INFO,
  kWarn = DW_LOG_WARN,
  kError = DW_LOG_ERROR
};

namespace detail {

// Whether the host asks the caller to stop (dw_host_api.is_cancelled).
inline bool host_cancelled(const dw_host_api& host, void* handle) noexcept {
  return host.is_cancelled != nullptr && host.is_cancelled(handle) != 0;
}

// One log line through the host; to stderr, tagged `who`, when the host
// offers no logger, so a message is never silently lost.
inline void host_log(const dw_host_api& host, void* handle, LogLevel level, std::string_view message,
                     const std::string& who) {
  std::string text(message);
  if (host.log != nullptr) {
    host.log(handle, static_cast<int>(level), text.c_str());
  } else {
    std::fprintf(stderr, "[ductwork %s] %s\n", who.c_str(), text.c_str());
  }
}

}  // namespace detail

class StepContext {
 public:
  // Wraps `raw` (and its host table), which must outlive this object.
  // Throws JsonError when raw.args_json is not valid JSON and ArgumentError
  // when it is not an array; a NULL args_json means no arguments.
  explicit StepContext(const dw_step_context& raw) {
    // The structs are append-only: copy the prefix the host knows about and
    // leave later fields zero, so an older host reads as "not provided"
    // instead of as garbage past the end of its struct.
    std::memcpy(&raw_, &raw, std::min<std::size_t>(raw.struct_size, sizeof raw_));
    if (raw_.host != nullptr) {
      std::memcpy(&host_, raw_.host, std::min<std::size_t>(raw_.host->struct_size, sizeof host_));
    }
    args_ = raw_.args_json == nullptr ? Json::array() : Json::parse(raw_.args_json);
    if (!args_.is_array()) throw ArgumentError("args_json is not a JSON array: " + args_.dump());
  }
  StepContext(const StepContext&) = delete;
  StepContext& operator=(const StepContext&) = delete;

  // The job's arguments (always an array).
  const Json& args() const noexcept { return args_; }
  // Argument `index`; throws ArgumentError naming the step when absent.
  const Json& arg(std::size_t index) const {
    if (index >= args_.size()) {
      throw ArgumentError("step " + std::string(step_name()) + " needs argument " +
                          std::to_string(index) + " but was given " +
                          std::to_string(args_.size()) + " argument(s)");
    }
    return args_[index];
  }

  // Empty when the host did not provide the field.
  std::string_view run_id() const noexcept { return view(raw_.run_id); }
  // Stable across retries, crashes and revives of this step (its position
  // in the pipeline): key external side effects on it to make them
  // idempotent.
  std::string_view idempotency_key() const noexcept { return view(raw_.idempotency_key); }
  std::string_view pipeline() const noexcept { return view(raw_.pipeline); }
  std::string_view step_name() const noexcept { return view(raw_.step_name); }
  // Attempts of this execution that ended in an error / in a crash so far.
  std::int64_t retry_count() const noexcept { return raw_.retry_count; }
  std::int64_t crash_count() const noexcept { return raw_.crash_count; }

  // True once the host asks the step to stop early (shutdown); long-running
  // steps poll it and throw Cancelled.
  bool cancelled() const noexcept { return detail::host_cancelled(host_, raw_.host_handle); }

  // One log line attributed to this step. Goes to stderr when the host
  // offers no logger, so a message is never silently lost.
  void log(LogLevel level, std::string_view message) const {
    detail::host_log(host_, raw_.host_handle, level, message, std::string(step_name()));
  }

  // The run-context value under `key`, or nullopt when unset. Throws
  // ContextError when the host fails or offers no run context.
  std::optional<Json> get(std::string_view key) const {
    if (host_.context_get == nullptr) throw ContextError("the host provides no run context");
    std::string k(key);
    char* value_json = nullptr;
    char* error = nullptr;
    int rc = host_.context_get(raw_.host_handle, k.c_str(), &value_json, &error);
    HostString value_holder(host_, value_json), error_holder(host_, error);
    if (rc == DW_CONTEXT_NOT_FOUND) return std::nullopt;
    if (rc != DW_CONTEXT_OK) throw ContextError(failure("get", k, rc, error));
    if (value_json == nullptr) throw ContextError(failure("get", k, rc, "host returned no value"));
    return Json::parse(value_json);
  }

  // Stores `value` under `key`. Without `overwrite` a key can be set once:
  // setting it again throws ContextAlreadySet. Other failures throw
  // ContextError with the host's message.
  void set(std::string_view key, const Json& value, bool overwrite = false) {
    if (host_.context_set == nullptr) throw ContextError("the host provides no run context");
    std::string k(key);
    std::string text = value.dump();
    char* error = nullptr;
    int rc =
        host_.context_set(raw_.host_handle, k.c_str(), text.c_str(), overwrite ? 1 : 0, &error);
    HostString error_holder(host_, error);
    if (rc == DW_CONTEXT_OK) return;
    if (rc == DW_CONTEXT_ALREADY_SET) {
      throw ContextAlreadySet("run context key \"" + k +
                              "\" can only set value once (pass overwrite=true to replace it)");
    }
    throw ContextError(failure("set", k, rc, error));
  }

 private:
  // Releases a string the host allocated, through the host's free_string
  // (never ours: the side that allocates frees).
  class HostString {
   public:
    HostString(const dw_host_api& host, char* s) : host_(host), s_(s) {}
    HostString(const HostString&) = delete;
    HostString& operator=(const HostString&) = delete;
    ~HostString() {
      if (s_ != nullptr && host_.free_string != nullptr) host_.free_string(s_);
    }

   private:
    const dw_host_api& host_;
    char* s_;
  };

  static std::string_view view(const char* s) noexcept { return s == nullptr ? "" : s; }

  static std::string failure(const char* op, const std::string& key, int rc, const char* error) {
    std::string text = std::string("run context ") + op + " \"" + key + "\" failed";
    text += error != nullptr ? ": " + std::string(error) : " (rc " + std::to_string(rc) + ")";
    return text;
  }

  dw_step_context raw_{};
  dw_host_api host_{};
  Json args_;
};

}  // namespace ductwork

#endif  // DUCTWORK_STEP_CONTEXT_HPP
