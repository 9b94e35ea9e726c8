#include "store/postgresql/pg_store.h"

namespace ductwork::pg {

PgStoreFactory::PgStoreFactory(const std::string& url, int pool, std::shared_ptr<const Clock> clock)
    : target_(parse_target(url)),
      pool_(static_cast<size_t>(pool < 1 ? 1 : pool)),
      listener_(std::make_shared<Listener>(target_.conninfo)),
      clock_(Clock::or_system(std::move(clock))) {
  for (size_t i = 0; i < pool_; ++i) slots_.push_back(std::make_unique<Slot>());
  // The first session is opened now, so a wrong URL, password or database
  // fails the command that asked for it, with the server's reason.
  open_slot(*slots_.front());
}

const std::shared_ptr<PgStoreFactory::Shared>& PgStoreFactory::open_slot(Slot& slot) {
  // A connect that throws leaves the slot unopened: the next open() of it
  // tries again.
  std::call_once(slot.opened, [&] { slot.session = std::make_shared<Shared>(target_, listener_, clock_); });
  return slot.session;
}

std::unique_ptr<Store> PgStoreFactory::open() {
  Slot* slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot = slots_[next_].get();
    next_ = (next_ + 1) % pool_;
  }
  return std::make_unique<sql::SqlStore>(open_slot(*slot));
}

}  // namespace ductwork::pg
