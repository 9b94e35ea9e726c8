#include "store/postgresql/pg_store.h"

#include <poll.h>

#include <chrono>

namespace ductwork::pg {

Listener::~Listener() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

int64_t Listener::version() {
  std::call_once(started_, [this] { thread_ = std::thread([this] { loop(); }); });
  return version_.load();
}

void Listener::loop() {
  PGconn* conn = nullptr;
  auto drop = [&] {
    if (conn) PQfinish(conn);
    conn = nullptr;
  };
  while (!stopping_) {
    if (!conn || PQstatus(conn) != CONNECTION_OK) {
      drop();
      conn = PQconnectdb(conninfo_.c_str());
      PGresult* r = PQstatus(conn) == CONNECTION_OK
                        ? PQexec(conn, (std::string("LISTEN ") + kJobsChannel + "; LISTEN " + kBranchesChannel).c_str())
                        : nullptr;
      bool listening = r && PQresultStatus(r) == PGRES_COMMAND_OK;
      if (r) PQclear(r);
      if (!listening) {
        drop();
        for (int i = 0; i < 10 && !stopping_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      ++version_;  // anything sent while we were not listening is unknown: look
    }
    pollfd fd{PQsocket(conn), POLLIN, 0};
    int ready = ::poll(&fd, 1, 100);  // short, so a stop is seen soon
    if (ready < 0) continue;
    if (ready > 0 && !PQconsumeInput(conn)) {
      drop();
      continue;
    }
    int64_t received = 0;
    while (PGnotify* n = PQnotifies(conn)) {
      {
        std::lock_guard<std::mutex> lock(own_mutex_);
        if (!own_backends_.count(n->be_pid)) ++received;
      }
      PQfreemem(n);
    }
    if (received > 0) version_ += received;
  }
  drop();
}

void Listener::own_backend(int backend_pid) {
  std::lock_guard<std::mutex> lock(own_mutex_);
  own_backends_.insert(backend_pid);
}

PgStoreFactory::PgStoreFactory(const std::string& url, int pool)
    : target_(parse_target(url)),
      pool_(static_cast<size_t>(pool < 1 ? 1 : pool)),
      listener_(std::make_shared<Listener>(target_.conninfo)) {
  // The first session is opened now, so a wrong URL, password or database
  // fails the command that asked for it, with the server's reason.
  sessions_.push_back(std::make_shared<Shared>(target_, listener_));
}

std::unique_ptr<Store> PgStoreFactory::open() {
  std::shared_ptr<Shared> session;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (next_ < pool_ && next_ >= sessions_.size()) sessions_.push_back(std::make_shared<Shared>(target_, listener_));
    session = sessions_[next_ % sessions_.size()];
    next_ = (next_ + 1) % pool_;
  }
  return std::make_unique<sql::SqlStore>(session);
}

}  // namespace ductwork::pg
