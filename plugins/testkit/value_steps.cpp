// Steps that compute a value from their arguments and never fail on valid
// input. "Argument" means the job's first argument unless stated otherwise.
#include <cstdint>
#include <string>

#include <ductwork/step.hpp>

#include "numbers.h"

namespace ductwork::testkit {

// Echo: returns its first argument unchanged; null when given none.
class Echo : public Step {
 public:
  Json execute(StepContext& ctx) override { return ctx.args().empty() ? Json() : ctx.arg(0); }
};
DUCTWORK_STEP(Echo);

// Inc: number n -> n + 1 (an int stays an int, a double a double). Fails
// with ductwork::ArgumentError when the argument is missing or not a number,
// or on int64 overflow.
class Inc : public Step {
 public:
  Json execute(StepContext& ctx) override {
    return add(require_number(ctx.arg(0), "Inc"), Json(1), "Inc");
  }
};
DUCTWORK_STEP(Inc);

// Double: number n -> 2n, typed and failing like Inc.
class Double : public Step {
 public:
  Json execute(StepContext& ctx) override {
    return multiply(require_number(ctx.arg(0), "Double"), 2, "Double");
  }
};
DUCTWORK_STEP(Double);

// Sum: adds up a list of numbers, nested lists flattened. The list is the
// first argument when it is the only one and is an array (the output of a
// collapse), otherwise the whole argument list. Returns an int when every
// element is an int (0 for an empty list), else a double. Fails with
// ductwork::ArgumentError on a non-number element or int64 overflow.
class Sum : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& args = ctx.args();
    const Json& list = args.size() == 1 && args[0].is_array() ? args[0] : args;
    Json total(0);
    accumulate(list, total);
    return total;
  }

 private:
  static void accumulate(const Json& list, Json& total) {
    for (const Json& item : list.as_array()) {
      if (item.is_array()) {
        accumulate(item, total);
      } else {
        total = add(total, require_number(item, "Sum"), "Sum");
      }
    }
  }
};
DUCTWORK_STEP(Sum);

// Range: integer n -> [0, 1, ..., n-1] (n = 0 gives []). Fails with
// ductwork::ArgumentError for a negative n or one above kMaxLength.
class Range : public Step {
 public:
  static constexpr std::int64_t kMaxLength = 1000000;

  Json execute(StepContext& ctx) override {
    std::int64_t n = require_number(ctx.arg(0), "Range").as_int();
    if (n < 0 || n > kMaxLength) {
      throw ArgumentError("Range expects 0 <= n <= " + std::to_string(kMaxLength) + ", got " +
                          std::to_string(n));
    }
    Json::Array items;
    items.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) items.emplace_back(i);
    return Json(std::move(items));
  }
};
DUCTWORK_STEP(Range);

// Route: its first argument as a string, for divert routing keys: a string
// is returned unchanged, any other value as its JSON text (3 -> "3",
// true -> "true", null -> "null").
class Route : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& value = ctx.arg(0);
    return value.is_string() ? value : Json(value.dump());
  }
};
DUCTWORK_STEP(Route);

}  // namespace ductwork::testkit
