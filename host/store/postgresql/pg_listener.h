#pragma once

#include <libpq-fe.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

namespace ductwork::pg {

// The channels commits notify (Connection::notify) and every host listens
// on: a job became claimable, a branch became advanceable.
inline constexpr const char* kJobsChannel = "ductwork_jobs";
inline constexpr const char* kBranchesChannel = "ductwork_branches";

// One process's LISTEN connection (SPEC §11): a thread with its own libpq
// session (Poco::Data has no notification API) that counts the
// notifications other processes send. Idle loops poll the count through
// Store::data_version and wake when it moves, so a commit on any host wakes
// this one within milliseconds; their polling stays as the fallback. A
// dropped session is re-established every second and LISTENs again; the
// count moves then too, since notifications may have been missed.
//
// Once running it also sends this process's notifications: PostgreSQL
// serialises the commits of every transaction that NOTIFYs (a lock on the
// notification queue, held through the commit's WAL flush), which measured
// as the bottleneck of a fan-in when every commit notified. A commit here
// only raises a flag; the listener sends the pending notifications, folded,
// from its own session right after.
class Listener {
 public:
  explicit Listener(std::string conninfo);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Starts the thread on first use.
  int64_t version();
  // Whether the thread runs (and so sends notifications asked for below).
  bool running() const { return running_.load(); }
  // After a commit that made jobs / branches ready: sends one NOTIFY per
  // kind soon, from the listening session.
  void request(bool jobs, bool branches);
  // A session of this process (its server process id): its notifications
  // are this process's own commits, which in-process wake-ups already
  // announced, and are not counted.
  void own_backend(int backend_pid);

 private:
  void loop();
  // Sends the requested notifications on `conn` (when connected).
  void send_pending(PGconn* conn);

  std::string conninfo_;
  std::once_flag started_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> version_{0};
  std::atomic<bool> running_{false};
  std::atomic<bool> want_jobs_{false};
  std::atomic<bool> want_branches_{false};
  int wake_fd_ = -1;  // eventfd: a request or a stop
  std::mutex own_mutex_;
  std::unordered_set<int> own_backends_;
  std::thread thread_;
};

}  // namespace ductwork::pg
