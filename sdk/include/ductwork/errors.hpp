// ductwork/errors.hpp — exceptions a step throws (or the SDK throws on its
// behalf). Whatever execute() throws becomes the execution's error; these
// classes only add a chosen class name and a backtrace taken where they were
// constructed, which for a throw-expression is the raise site.
#ifndef DUCTWORK_ERRORS_HPP
#define DUCTWORK_ERRORS_HPP

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ductwork/detail/backtrace.hpp"

namespace ductwork {

// Base of the SDK's errors; throw it directly to name the error class the
// host records: throw ductwork::Error("Billing::CardDeclined", "card expired").
class Error : public std::runtime_error {
 public:
  Error(std::string klass, std::string message)
      : std::runtime_error(std::move(message)),
        // shared_ptr keeps copying nothrow, as an exception's copy must be.
        klass_(std::make_shared<const std::string>(std::move(klass))),
        backtrace_(std::make_shared<const std::string>(detail::capture_backtrace(1))) {}

  // The recorded error class; empty means "the demangled dynamic type".
  const std::string& klass() const noexcept { return *klass_; }
  // Frames at construction, nearest first, newline separated (may be empty).
  const std::string& backtrace() const noexcept { return *backtrace_; }

  // Whether the host may retry the step after this error (the default).
  // A permanent error fails the step at once, without spending retries:
  //   throw ductwork::Error("Billing::UnknownCustomer", id).retryable(false);
  // retryable(false) returns an Error&, so `throw` copies an Error: for a
  // subclass write throw ductwork::permanent(MyError(...)), which keeps the
  // class (and its recorded name).
  bool retryable() const noexcept { return retryable_; }
  Error& retryable(bool value) noexcept {
    retryable_ = value;
    return *this;
  }

 protected:
  // For subclasses that are recorded under their own C++ type name.
  explicit Error(std::string message) : Error(std::string(), std::move(message)) {}

 private:
  std::shared_ptr<const std::string> klass_;
  std::shared_ptr<const std::string> backtrace_;
  bool retryable_ = true;
};

// `error` marked permanent, as its own type: throw ductwork::permanent(
// ArgumentError("no such customer")) records ductwork::ArgumentError and
// fails the step at once.
template <class E>
E permanent(E error) {
  static_assert(std::is_base_of_v<Error, E>, "ductwork::permanent needs a ductwork::Error");
  error.retryable(false);
  return error;
}

// An error no retry can mend (bad input, a missing record): the step fails
// at once and its branch halts, recorded like any other error. Recorded
// under its own class name unless `klass` is given.
class FatalError : public Error {
 public:
  explicit FatalError(std::string message) : Error(std::move(message)) { retryable(false); }
  FatalError(std::string klass, std::string message) : Error(std::move(klass), std::move(message)) {
    retryable(false);
  }
};

// A step was given missing or ill-typed arguments.
class ArgumentError : public Error {
 public:
  explicit ArgumentError(std::string message) : Error(std::move(message)) {}
};

// The host's run context failed (no context available, storage error, ...).
class ContextError : public Error {
 public:
  explicit ContextError(std::string message) : Error(std::move(message)) {}
};

// StepContext::set without overwrite on a key that already holds a value;
// what() says "... can only set value once ...".
class ContextAlreadySet : public ContextError {
 public:
  explicit ContextAlreadySet(std::string message) : ContextError(std::move(message)) {}
};

// Thrown by a step that stopped early because StepContext::cancelled()
// became true (the host is shutting down).
class Cancelled : public Error {
 public:
  explicit Cancelled(std::string message = "step cancelled by the host")
      : Error(std::move(message)) {}
};

}  // namespace ductwork

#endif  // DUCTWORK_ERRORS_HPP
