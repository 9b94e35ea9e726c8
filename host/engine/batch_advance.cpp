#include "engine/batch_advance.h"

#include "store/store_error.h"

namespace ductwork {

bool in_savepoint(StoreTx& tx, const std::string& name, bool busy_ends_all, const std::function<void()>& body,
                  std::exception_ptr* error) {
  tx.savepoint(name);
  try {
    body();
    tx.release_savepoint(name);
    return true;
  } catch (const StoreError& e) {
    if (e.fault() == StoreFault::kUnavailable || (busy_ends_all && e.fault() == StoreFault::kBusy)) throw;
    if (error) *error = std::current_exception();
  } catch (...) {
    if (error) *error = std::current_exception();
  }
  tx.rollback_to_savepoint(name);
  return false;
}

}  // namespace ductwork
