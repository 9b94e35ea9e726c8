// ductwork/json.hpp — the JSON value that step arguments, outputs and run
// context values travel as. Self-contained (C++17 standard library only) so a
// plugin author installs nothing besides a compiler.
//
// Representation choices:
//   - Numbers keep their kind: text without '.'/exponent parses to an
//     integer, kept exactly from INT64_MIN to UINT64_MAX (a value outside
//     that range falls back to double), anything else to double. dump()
//     writes doubles so they parse back as doubles ("2.0", not "2").
//   - An integer above INT64_MAX is held as uint64: is_int() is true,
//     as_uint() reads it, as_int() refuses it (it does not fit).
//   - Objects are a std::map with sorted keys, so dump() is canonical: equal
//     values always produce identical text (pipeline definitions are hashed).
//   - No initializer_list constructor: arrays and objects are built with
//     Json::array({1, "two"}) and Json::object({{"k", v}}). (With one,
//     whether Json{x} and f({x}) copy x or wrap it in an array differs
//     between GCC and Clang when x is itself a Json.)
#ifndef DUCTWORK_JSON_HPP
#define DUCTWORK_JSON_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ductwork {

// Thrown for malformed JSON text (the message carries the byte offset), for
// values JSON cannot represent (NaN, infinity, invalid UTF-8) and for
// accessing a value as the wrong type or out of range.
class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Json {
 public:
  // Declaration order matches the variant alternatives below.
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::map<std::string, Json, std::less<>>;

  Json() noexcept = default;  // null
  Json(std::nullptr_t) noexcept {}
  Json(bool b) noexcept : value_(std::in_place_index<1>, b) {}
  // Every integral type except bool, kept exactly (up to UINT64_MAX).
  template <class T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Json(T n) noexcept {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      if (n > static_cast<T>(std::numeric_limits<std::int64_t>::max())) {
        value_.template emplace<7>(static_cast<std::uint64_t>(n));
        return;
      }
    }
    value_.template emplace<2>(static_cast<std::int64_t>(n));
  }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Json(T d) noexcept : value_(std::in_place_index<3>, static_cast<double>(d)) {}
  Json(const char* s) : value_(std::in_place_index<4>, s == nullptr ? "" : s) {}  // NULL -> ""
  Json(std::string s) noexcept : value_(std::in_place_index<4>, std::move(s)) {}
  Json(std::string_view s) : value_(std::in_place_index<4>, s) {}
  Json(Array a) noexcept : value_(std::in_place_index<5>, std::move(a)) {}
  Json(Object o) noexcept : value_(std::in_place_index<6>, std::move(o)) {}
  // Other pointers would silently convert to bool; refuse them.
  template <class T, std::enable_if_t<!std::is_same_v<std::remove_cv_t<T>, char>, int> = 0>
  Json(T*) = delete;

  // Json::array({1, "two", 3.0}); Json::array({x}) is always [x].
  static Json array(std::initializer_list<Json> items = {}) { return Json(Array(items)); }
  // Json::object({{"id", 7}, {"tags", Json::array({"a"})}}); a repeated key
  // keeps its first value.
  static Json object(std::initializer_list<std::pair<const std::string, Json>> members = {}) {
    return Json(Object(members));
  }

  // Strict RFC 8259 parse of one value (surrounding whitespace allowed).
  // Rejects trailing commas, comments, control characters in strings,
  // invalid UTF-8, lone surrogates, duplicate keys and nesting deeper than
  // kMaxDepth. Throws JsonError("JSON parse error at byte N: ...").
  static Json parse(std::string_view text);
  static constexpr int kMaxDepth = 512;

  // Compact JSON text. Throws JsonError for NaN/infinity and for strings
  // that are not valid UTF-8, so the result is always valid JSON.
  std::string dump() const;
  void dump_to(std::string& out) const;

  Type type() const noexcept {
    return value_.index() == kBigUint ? Type::kInt : static_cast<Type>(value_.index());
  }
  static const char* type_name(Type type) noexcept;
  bool is_null() const noexcept { return type() == Type::kNull; }
  bool is_bool() const noexcept { return type() == Type::kBool; }
  bool is_int() const noexcept { return type() == Type::kInt; }
  // An integer that as_int() reads: every integer except those above INT64_MAX.
  bool is_int64() const noexcept { return value_.index() == 2; }
  bool is_double() const noexcept { return type() == Type::kDouble; }
  bool is_number() const noexcept { return is_int() || is_double(); }
  bool is_string() const noexcept { return type() == Type::kString; }
  bool is_array() const noexcept { return type() == Type::kArray; }
  bool is_object() const noexcept { return type() == Type::kObject; }

  // Each throws JsonError when the value is of another type.
  bool as_bool() const { return get_as<bool>("a bool"); }
  // Also accepts a double with an integral value inside the int64 range.
  std::int64_t as_int() const;
  // A non-negative integer up to UINT64_MAX (or such an integral double).
  std::uint64_t as_uint() const;
  // Accepts an int (converted) or a double.
  double as_double() const;
  const std::string& as_string() const { return get_as<std::string>("a string"); }
  const Array& as_array() const { return get_as<Array>("an array"); }
  Array& as_array() { return get_mutable<Array>("an array"); }
  const Object& as_object() const { return get_as<Object>("an object"); }
  Object& as_object() { return get_mutable<Object>("an object"); }

  // Elements of an array or members of an object; 0 for null; throws
  // JsonError for other types.
  std::size_t size() const;
  bool empty() const { return size() == 0; }

  // Bounds-checked element access (JsonError when out of range).
  const Json& operator[](std::size_t index) const { return at(index); }
  Json& operator[](std::size_t index) { return const_cast<Json&>(std::as_const(*this).at(index)); }
  const Json& at(std::size_t index) const;

  // const: the member, throwing JsonError when missing. Non-const: like
  // std::map, inserts null when missing (a null value becomes an object).
  const Json& operator[](std::string_view key) const { return at(key); }
  Json& operator[](std::string_view key);
  const Json& at(std::string_view key) const;
  // The member, or nullptr when missing or when this is not an object.
  const Json* find(std::string_view key) const noexcept;
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

  // Appends to an array (a null value becomes an empty array first).
  void push_back(Json value);

  // Same type and value; an int and a double are equal when they hold the
  // same number (so Json(2) == Json(2.0); use is_int() to tell them apart).
  friend bool operator==(const Json& a, const Json& b);
  friend bool operator!=(const Json& a, const Json& b) { return !(a == b); }

 private:
  // Variant index of an integer above INT64_MAX (reported as Type::kInt).
  static constexpr std::size_t kBigUint = 7;

  template <class T>
  const T& get_as(const char* wanted) const {
    if (const T* v = std::get_if<T>(&value_)) return *v;
    throw type_error(wanted);
  }
  template <class T>
  T& get_mutable(const char* wanted) {
    if (T* v = std::get_if<T>(&value_)) return *v;
    throw type_error(wanted);
  }
  JsonError type_error(const char* wanted) const {
    return JsonError(std::string("JSON value is ") + type_name(type()) + ", expected " + wanted);
  }

  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object, std::uint64_t> value_;
};

inline const char* Json::type_name(Type type) noexcept {
  switch (type) {
    case Type::kNull: return "null";
    case Type::kBool: return "bool";
    case Type::kInt: return "int";
    case Type::kDouble: return "double";
    case Type::kString: return "string";
    case Type::kArray: return "array";
    case Type::kObject: return "object";
  }
  return "unknown";
}

inline std::int64_t Json::as_int() const {
  if (const auto* n = std::get_if<std::int64_t>(&value_)) return *n;
  if (const auto* u = std::get_if<std::uint64_t>(&value_)) {
    throw JsonError("JSON number " + std::to_string(*u) + " is not an integer in int64 range (use as_uint)");
  }
  if (const auto* d = std::get_if<double>(&value_)) {
    // 2^63 is exactly representable; the range is [-2^63, 2^63).
    constexpr double kLimit = 9223372036854775808.0;
    if (std::trunc(*d) == *d && *d >= -kLimit && *d < kLimit) {
      return static_cast<std::int64_t>(*d);
    }
    throw JsonError("JSON number " + std::to_string(*d) + " is not an integer in int64 range");
  }
  throw type_error("an integer");
}

inline std::uint64_t Json::as_uint() const {
  if (const auto* u = std::get_if<std::uint64_t>(&value_)) return *u;
  if (const auto* n = std::get_if<std::int64_t>(&value_)) {
    if (*n >= 0) return static_cast<std::uint64_t>(*n);
    throw JsonError("JSON number " + std::to_string(*n) + " is negative, expected an unsigned integer");
  }
  if (const auto* d = std::get_if<double>(&value_)) {
    constexpr double kLimit = 18446744073709551616.0;  // 2^64, exactly representable
    if (std::trunc(*d) == *d && *d >= 0 && *d < kLimit) return static_cast<std::uint64_t>(*d);
    throw JsonError("JSON number " + std::to_string(*d) + " is not an integer in uint64 range");
  }
  throw type_error("an unsigned integer");
}

inline double Json::as_double() const {
  if (const auto* n = std::get_if<std::int64_t>(&value_)) return static_cast<double>(*n);
  if (const auto* u = std::get_if<std::uint64_t>(&value_)) return static_cast<double>(*u);
  return get_as<double>("a number");
}

inline std::size_t Json::size() const {
  switch (type()) {
    case Type::kNull: return 0;
    case Type::kArray: return std::get<Array>(value_).size();
    case Type::kObject: return std::get<Object>(value_).size();
    default: throw type_error("an array or object");
  }
}

inline const Json& Json::at(std::size_t index) const {
  const Array& items = as_array();
  if (index >= items.size()) {
    throw JsonError("JSON array index " + std::to_string(index) + " out of range (size " +
                    std::to_string(items.size()) + ")");
  }
  return items[index];
}

inline Json& Json::operator[](std::string_view key) {
  if (is_null()) value_ = Object();
  Object& members = as_object();
  auto it = members.find(key);
  if (it == members.end()) it = members.emplace(std::string(key), Json()).first;
  return it->second;
}

inline const Json& Json::at(std::string_view key) const {
  const Object& members = as_object();
  auto it = members.find(key);
  if (it == members.end()) throw JsonError("JSON object has no key \"" + std::string(key) + "\"");
  return it->second;
}

inline const Json* Json::find(std::string_view key) const noexcept {
  const auto* members = std::get_if<Object>(&value_);
  if (members == nullptr) return nullptr;
  auto it = members->find(key);
  return it == members->end() ? nullptr : &it->second;
}

inline void Json::push_back(Json value) {
  if (is_null()) value_ = Array();
  as_array().push_back(std::move(value));
}

inline bool operator==(const Json& a, const Json& b) {
  // An integer above INT64_MAX is only ever held as uint64, so it never
  // equals an int64; it equals a double holding exactly its value.
  const std::size_t big = Json::kBigUint;
  if ((a.value_.index() == big) != (b.value_.index() == big) && a.is_number() && b.is_number()) {
    const Json& u = a.value_.index() == big ? a : b;
    const Json& d = a.value_.index() == big ? b : a;
    if (!d.is_double()) return false;
    double value = std::get<double>(d.value_);
    constexpr double kLimit = 18446744073709551616.0;
    return std::trunc(value) == value && value >= 0 && value < kLimit &&
           static_cast<std::uint64_t>(value) == std::get<std::uint64_t>(u.value_);
  }
  if (a.is_number() && b.is_number() && a.type() != b.type()) {
    const Json& d = a.is_double() ? a : b;
    const Json& i = a.is_double() ? b : a;
    double value = std::get<double>(d.value_);
    constexpr double kLimit = 9223372036854775808.0;
    return std::trunc(value) == value && value >= -kLimit && value < kLimit &&
           static_cast<std::int64_t>(value) == std::get<std::int64_t>(i.value_);
  }
  return a.value_ == b.value_;
}

}  // namespace ductwork

#include "ductwork/json_dump.hpp"   // IWYU pragma: export
#include "ductwork/json_parse.hpp"  // IWYU pragma: export

#endif  // DUCTWORK_JSON_HPP
