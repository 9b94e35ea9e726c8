#include "store/postgresql/pg_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>

namespace ductwork::pg {

Listener::Listener(std::string conninfo) : conninfo_(std::move(conninfo)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Listener::~Listener() {
  stopping_ = true;
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

int64_t Listener::version() {
  std::call_once(started_, [this] {
    running_ = true;
    thread_ = std::thread([this] { loop(); });
  });
  return version_.load();
}

void Listener::request(bool jobs, bool branches) {
  if (jobs) want_jobs_ = true;
  if (branches) want_branches_ = true;
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
}

void Listener::send_pending(PGconn* conn) {
  std::string sql;
  if (want_jobs_.exchange(false)) sql += std::string("NOTIFY ") + kJobsChannel + ";";
  if (want_branches_.exchange(false)) sql += std::string("NOTIFY ") + kBranchesChannel + ";";
  if (sql.empty()) return;
  PQclear(PQexec(conn, sql.c_str()));
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
      own_backend(PQbackendPID(conn));  // what it sends for us comes back to it
      ++version_;  // anything sent while we were not listening is unknown: look
    }
    send_pending(conn);
    pollfd fds[2] = {{PQsocket(conn), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int ready = ::poll(fds, wake_fd_ >= 0 ? 2 : 1, 100);  // short, so a stop is seen soon
    if (ready < 0) continue;
    if (fds[1].revents & POLLIN) {
      uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);
    }
    if ((fds[0].revents & POLLIN) && !PQconsumeInput(conn)) {
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
  if (conn && PQstatus(conn) == CONNECTION_OK) send_pending(conn);  // what the last commits asked for
  drop();
}

void Listener::own_backend(int backend_pid) {
  std::lock_guard<std::mutex> lock(own_mutex_);
  own_backends_.insert(backend_pid);
}

}  // namespace ductwork::pg
