#include "engine/batch_advance.h"

#include "store/store_error.h"

namespace ductwork {

BatchAdvance each_alone(const AdvanceInClaim* advance) {
  BatchAdvance each;
  if (advance) {
    each.advance = [advance](BranchTx& tx, const BranchClaim& claim, size_t) {
      (*advance)(tx, claim);
      return std::string();
    };
  }
  return each;
}

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
