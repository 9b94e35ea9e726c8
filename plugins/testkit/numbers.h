// Arithmetic on JSON numbers for the testkit's steps: integers stay
// integers (overflow is an error, not a silent wrap), anything involving a
// double is a double.
#ifndef DUCTWORK_PLUGINS_TESTKIT_NUMBERS_H
#define DUCTWORK_PLUGINS_TESTKIT_NUMBERS_H

#include <cstdint>
#include <string>
#include <string_view>

#include <ductwork/step.hpp>

namespace ductwork::testkit {

// `value` itself when it is a number; otherwise throws ArgumentError saying
// what `step` expected and what it got.
inline const Json& require_number(const Json& value, std::string_view step) {
  if (!value.is_number()) {
    throw ArgumentError(std::string(step) + " expects a number, got " +
                        Json::type_name(value.type()) + " " + value.dump());
  }
  return value;
}

// An integer argument as int64; ArgumentError for one above INT64_MAX (the
// SDK keeps those exactly as uint64, but this arithmetic is signed).
inline std::int64_t signed_operand(const Json& n, std::string_view step) {
  if (n.is_int64()) return n.as_int();
  throw ArgumentError(std::string(step) + ": integer overflow (" + n.dump() + " is above the int64 range)");
}

// a + b. Throws ArgumentError when two integers overflow int64.
inline Json add(const Json& a, const Json& b, std::string_view step) {
  if (a.is_int() && b.is_int()) {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(signed_operand(a, step), signed_operand(b, step), &sum)) {
      throw ArgumentError(std::string(step) + ": integer overflow");
    }
    return sum;
  }
  return a.as_double() + b.as_double();
}

// n * factor, with the same typing and overflow rules as add().
inline Json multiply(const Json& n, std::int64_t factor, std::string_view step) {
  if (n.is_int()) {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(signed_operand(n, step), factor, &product)) {
      throw ArgumentError(std::string(step) + ": integer overflow");
    }
    return product;
  }
  return n.as_double() * static_cast<double>(factor);
}

}  // namespace ductwork::testkit

#endif  // DUCTWORK_PLUGINS_TESTKIT_NUMBERS_H
