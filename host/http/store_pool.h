#pragma once

// Database handles for the HTTP server's threads: opened on first need,
// reused after, one per concurrent request at most.
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "store/store.h"

namespace ductwork::http {

class StorePool {
 public:
  explicit StorePool(StoreFactory& factory) : factory_(factory) {}

  // One handle for one request. A lease left by an exception drops its
  // handle instead of returning it: after a failure (the database
  // restarted, say) the next request opens a fresh one.
  class Lease {
   public:
    Lease(StorePool& pool, std::unique_ptr<Store> store)
        : pool_(pool), store_(std::move(store)), exceptions_(std::uncaught_exceptions()) {}
    ~Lease() {
      if (std::uncaught_exceptions() == exceptions_) pool_.give_back(std::move(store_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Store& operator*() const { return *store_; }
    Store* operator->() const { return store_.get(); }

   private:
    StorePool& pool_;
    std::unique_ptr<Store> store_;
    int exceptions_;
  };

  // The handle is first checked against the database's path
  // (Store::check_storage): a SQLite file removed, replaced or overwritten
  // since the process opened it (its stores share one connection, kept on
  // the file it opened) is a StoreError, so 503 `unavailable`, never
  // answers read from a file that is gone.
  Lease take() {
    std::unique_ptr<Store> store;
    {
      std::lock_guard<std::mutex> held(mutex_);
      if (!idle_.empty()) {
        store = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!store) store = factory_.open();
    store->check_storage();
    return Lease(*this, std::move(store));
  }

 private:
  void give_back(std::unique_ptr<Store> store) {
    std::lock_guard<std::mutex> held(mutex_);
    idle_.push_back(std::move(store));
  }

  StoreFactory& factory_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Store>> idle_;
};

}  // namespace ductwork::http
