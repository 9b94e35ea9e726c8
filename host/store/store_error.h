#pragma once

#include <stdexcept>

namespace ductwork {

// A database failure the caller cannot fix by retrying the same call: the
// file is not a database, a migration failed, a statement was rejected.
// what() names the database and the operation.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A revive the store refused because of the pipeline's state (unknown, not
// halted, no run); nothing was written.
class ReviveRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ductwork
