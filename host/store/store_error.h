#pragma once

#include <stdexcept>
#include <string>

namespace ductwork {

// What kind of database failure a StoreError is, so loops can tell a
// passing fault from a database that will never work again.
enum class StoreFault {
  kOther,     // a statement was rejected, a migration failed, ...
  kBusy,      // contention that outlasted the busy timeout
  kFull,      // the disk (or the database's size limit) is full
  kUnusable,  // corrupt, not a database, I/O error, or the file vanished or
              // was replaced under the process: no retry will succeed
  kUnavailable,  // the database server cannot be reached (yet): retry later
};

// A database failure the caller cannot fix by retrying the same call: the
// file is not a database, a migration failed, a statement was rejected.
// what() names the database and the operation.
class StoreError : public std::runtime_error {
 public:
  explicit StoreError(const std::string& what, StoreFault fault = StoreFault::kOther)
      : std::runtime_error(what), fault_(fault) {}
  StoreFault fault() const { return fault_; }

 private:
  StoreFault fault_;
};

// True when `e` says the database can no longer be used by this process.
inline bool is_database_unusable(const std::exception& e) {
  const auto* store = dynamic_cast<const StoreError*>(&e);
  return store && store->fault() == StoreFault::kUnusable;
}

// True when `e` says the database server cannot be reached (yet).
inline bool is_database_unreachable(const std::exception& e) {
  const auto* store = dynamic_cast<const StoreError*>(&e);
  return store && store->fault() == StoreFault::kUnavailable;
}

// The database was migrated by a newer ductwork: its schema records
// migrations this binary does not know. Nothing was written; not bad input
// (the command line is fine) but a host that must be upgraded: exit 1.
class SchemaTooNew : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A revive the store refused because of the pipeline's state (unknown, not
// halted or cancelled, no run); nothing was written.
class ReviveRefused : public std::runtime_error {
 public:
  // `unknown`: no pipeline has that id (as opposed to one in the wrong state).
  explicit ReviveRefused(const std::string& what, bool unknown = false) : std::runtime_error(what), unknown_(unknown) {}
  bool unknown() const { return unknown_; }

 private:
  bool unknown_;
};

// A cancel or resume refused because of the pipeline's state (unknown,
// already finished, nothing dampened); nothing was written.
class ControlRefused : public std::runtime_error {
 public:
  // `unknown`: no pipeline has that id (as opposed to one in the wrong state).
  explicit ControlRefused(const std::string& what, bool unknown = false) : std::runtime_error(what), unknown_(unknown) {}
  bool unknown() const { return unknown_; }

 private:
  bool unknown_;
};

}  // namespace ductwork
