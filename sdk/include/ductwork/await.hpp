// ductwork/await.hpp — waiting for an event (SPEC §18): the options of an
// `await: STEP` edge, given to Pipeline::await (pipeline.hpp) or as the
// keys beside `await:` in a definition file:
//
//   ductwork::Await paid;
//   paid.event = "payment.received";
//   paid.match = "/order_id";   // the previous output's order_id must equal the event's key
//   paid.timeout = 3600;        // then halt with await_timeout
//   pipeline.chain("PlaceOrder").await("Ship", paid);
//
// The branch parks (as a dampen does) once the previous step succeeded;
// `ductwork signal payment.received --key 42 '{"amount": 10}'` (or POST
// /api/v1/events) enqueues Ship with [previous output, event value].
#ifndef DUCTWORK_AWAIT_HPP
#define DUCTWORK_AWAIT_HPP

#include <cstdint>
#include <string>
#include <utility>

#include "ductwork/json.hpp"

namespace ductwork {

struct Await {
  // The event's name: 1 to 128 letters, digits and '_' ':' '-' '.' '/'.
  std::string event;
  // A JSON Pointer into the previous step's output ("/order_id"); the value
  // found there must equal the event's key (JSON equality). Empty: every
  // event of the name matches, whatever its key.
  std::string match;
  // Seconds to wait (0: for ever); then `on_timeout` says what happens.
  double timeout = 0;
  // "halt": the branch halts with reason await_timeout; "continue": STEP
  // runs with null as the event's value.
  std::string on_timeout = "halt";
};

namespace detail {

inline constexpr std::size_t kMaxEventNameLength = 128;
inline constexpr double kMaxAwaitSeconds = 366.0 * 24 * 3600;

// Why `name` cannot name an event, "" when it can.
inline std::string event_name_problem(const std::string& name) {
  if (name.empty()) return "an event needs a name, e.g. 'event: payment.received'";
  if (name.size() > kMaxEventNameLength) {
    return "an event name is at most " + std::to_string(kMaxEventNameLength) + " characters";
  }
  for (unsigned char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':' ||
              c == '-' || c == '.' || c == '/';
    if (!ok) return "an event name may only contain letters, digits, '_', ':', '-', '.' and '/'";
  }
  return "";
}

// The shape rules of an await (the match pointer is checked as a
// concurrency key's is). Throws through `fail`.
template <class Fail>
void check_await(const Await& a, Fail&& fail) {
  const std::string problem = event_name_problem(a.event);
  if (!problem.empty()) fail("'await': " + problem);
  if (!(a.timeout >= 0) || a.timeout > kMaxAwaitSeconds) {
    fail("'await' takes 'timeout', a number of seconds >= 0 and <= " +
         std::to_string(static_cast<long long>(kMaxAwaitSeconds)) + " (0: no timeout)");
  }
  if (a.on_timeout != "halt" && a.on_timeout != "continue") {
    fail("'await' takes 'on_timeout: halt' or 'on_timeout: continue', not '" + a.on_timeout + "'");
  }
  if (a.on_timeout == "continue" && a.timeout == 0) fail("'await' has 'on_timeout: continue' but no 'timeout'");
}

// The await as the canonical definition holds it on the edge: only what
// differs from the defaults, seconds as integers when whole.
inline Json await_json(const Await& a) {
  Json::Object out;
  out.emplace("event", a.event);
  if (!a.match.empty()) out.emplace("match", a.match);
  if (a.timeout > 0) {
    const auto whole = static_cast<std::int64_t>(a.timeout);
    out.emplace("timeout", static_cast<double>(whole) == a.timeout ? Json(whole) : Json(a.timeout));
  }
  if (a.on_timeout != "halt") out.emplace("on_timeout", a.on_timeout);
  return Json(std::move(out));
}

}  // namespace detail
}  // namespace ductwork

#endif  // DUCTWORK_AWAIT_HPP
