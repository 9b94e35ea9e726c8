#include "process/host_runtime.h"

#include "process/gone_processes.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "engine/advancer.h"
#include "engine/job_worker.h"
#include "engine/error_info.h"
#include "engine/reaper.h"
#include "store/store_error.h"
#include "process/machine.h"
#include "util/uuid.h"

namespace ductwork {
namespace {

// Back-off after a loop iteration threw (e.g. the database is unavailable),
// so a persistent failure does not spin.
constexpr double kErrorBackoffSeconds = 0.5;

}  // namespace

void log_drained(Logger& logger, const Progress& totals) {
  Json fields = Json::object({{"pipelines_total", totals.pipelines_total},
                              {"pipelines_dampened", totals.pipelines_dampened},
                              {"pipelines_paused", totals.pipelines_paused},
                              {"pipelines_waiting", totals.pipelines_waiting}});
  std::string parked;
  if (totals.pipelines_dampened > 0) {
    parked += "; " + std::to_string(totals.pipelines_dampened) +
              " dampened pipeline(s) parked until `ductwork resume` or an awaited event";
  }
  if (totals.pipelines_paused > 0) {
    parked += "; " + std::to_string(totals.pipelines_paused) +
              " pipeline(s) of a paused name parked until `ductwork unpause`";
  }
  if (totals.pipelines_waiting > 0) {
    parked += "; " + std::to_string(totals.pipelines_waiting) + " pipeline(s) waiting for a child pipeline";
  }
  logger.info("Drained: no run in progress" + parked, fields);
}

HostRuntime::HostRuntime(const Config& config, StoreFactory& stores, const PluginRegistry& plugins, Logger& logger,
                         std::vector<std::string> pipelines, RuntimeRole role)
    : config_(config),
      stores_(stores),
      plugins_(plugins),
      logger_(logger),
      pipelines_(std::move(pipelines)),
      role_(std::move(role)),
      wakeups_(pipelines_) {}

HostRuntime::~HostRuntime() {
  stop();
  if (watch_thread_.joinable()) {  // start() failed before its loops began
    watch_stopping_.store(true);
    watch_->wake();
    watch_thread_.join();
  }
}

void HostRuntime::start() {
  auto store = stores_.open();
  // Adopt on boot: a row with our pid on this machine belongs to a dead
  // process whose pid was reused. Recover its claims before taking its place.
  // A host that reaps also recovers every row of this machine whose process
  // is gone (a child of a supervisor leaves that to the supervisor, which
  // knows how its children died).
  Reaper boot_reaper(*store, config_, logger_, &wakeups_);
  if (role_.reaper) {
    reap_gone_processes(*store, boot_reaper, machine_identifier(), logger_);
  } else if (auto previous = store->find_process(::getpid(), machine_identifier())) {
    boot_reaper.reap(*previous, /*force=*/true);
  }
  process_id_ = new_uuid_v7(stores_.clock());
  store->register_process(process_id_, ::getpid(), machine_identifier(), role_.name);
  logger_.info("Host started", Json::object({{"process_id", process_id_},
                                             {"pipelines", Json::Array(pipelines_.begin(), pipelines_.end())},
                                             {"host_role", role_.name}}));
  // Every tick slot exists before any thread starts: the heartbeat thread
  // reads them all, so the vector must not grow under it.
  // Advancer thread i serves the pipelines whose pipeline_advancer.count
  // exceeds i (PipelineAdvancerConfig::threads_for).
  std::vector<std::pair<std::vector<std::string>, LoopHealth*>> advancers;
  if (role_.advancers) {
    for (auto& served : config_.pipeline_advancer.threads_for(pipelines_)) {
      advancers.emplace_back(std::move(served), &new_loop_slot());
    }
  }
  std::vector<std::pair<std::string, LoopHealth*>> workers;
  if (role_.workers) {
    for (const auto& pipeline : pipelines_) {
      for (int i = 0; i < config_.job_worker.count.get(pipeline); ++i) workers.emplace_back(pipeline, &new_loop_slot());
    }
  }
  if (role_.workers) {
    watch_ = std::make_unique<StepWatch>(stores_, config_, logger_, process_id_,
                                         [this](const StepWatch::Running& r) { end_expired_step(r); });
    watch_thread_ = std::thread([this] { watch_->run(watch_stopping_); });
  }
  std::lock_guard<std::mutex> lock(loops_mutex_);
  threads_.emplace_back(std::thread([this] { heartbeat_loop(); }), nullptr);
  threads_.emplace_back(std::thread([this] { change_watch_loop(); }), nullptr);
  for (auto& [served, slot] : advancers) {
    threads_.emplace_back(std::thread([this, served = served, slot = slot] { advancer_loop(served, *slot); }), slot);
  }
  for (auto& [pipeline, slot] : workers) {
    threads_.emplace_back(std::thread([this, pipeline = pipeline, slot = slot] { worker_loop(pipeline, *slot); }),
                          slot);
  }
}

void HostRuntime::end_expired_step(const StepWatch::Running& running) {
  Json fields =
      Json::object({{"pipeline", running.job.pipeline}, {"job_id", running.job.job_id}, {"step", running.job.klass}});
  if (running.process_step.load()) {
    // A process step (SPEC §19): its own process is what runs it. Killing
    // it ends the step; the worker sees it die and goes on.
    const int pid = running.process_pid.load();
    if (pid > 0) {
      fields["step_pid"] = pid;
      logger_.error("Killing a step process to end a step that ignored its timeout", fields);
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    return;
  }
  if (role_.supervised) {
    // The only way to end a step that will not return. The supervisor sees
    // the kill, reaps this process with force (its other in-flight steps
    // are crashed and re-run as usual) and starts a fresh child.
    logger_.error("Killing this worker process to end a step that ignored its timeout", fields);
    ::kill(::getpid(), SIGKILL);
    return;
  }
  LoopHealth* slot = running.health;
  if (slot == nullptr) return;
  slot->abandoned.store(true);
  if (slot->busy.exchange(false)) busy_workers_.fetch_sub(1);  // shutdown does not wait for it
  std::lock_guard<std::mutex> lock(loops_mutex_);
  if (stopping_.load()) return;
  LoopHealth& fresh = new_loop_slot();
  const std::string pipeline = running.job.pipeline;
  threads_.emplace_back(std::thread([this, pipeline, &fresh] { worker_loop(pipeline, fresh); }), &fresh);
  logger_.error("Worker thread abandoned to a step that ignored its timeout; a new thread replaces it", fields);
}

void HostRuntime::stop() {
  {
    std::lock_guard<std::mutex> lock(loops_mutex_);
    if (threads_.empty()) return;
  }
  stopping_.store(true);
  wakeups_.wake_everyone();
  stop_waker_.notify_all();
  // In-flight steps get the shutdown timeout to finish on their own, then are
  // asked to stop through the cancellation flag they can poll.
  const Clock& clock = stores_.clock();
  const auto deadline = clock.after(config_.job_worker.shutdown_timeout);
  while (busy_workers_.load() > 0 && clock.monotonic() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (busy_workers_.load() > 0) {
    logger_.warn("Shutdown timeout reached; cancelling in-flight steps",
                 Json::object({{"in_flight", busy_workers_.load()}}));
  }
  cancelled_.store(true);
  std::vector<std::pair<std::thread, LoopHealth*>> threads;
  {
    std::lock_guard<std::mutex> lock(loops_mutex_);
    threads.swap(threads_);
  }
  size_t left_running = 0;
  for (auto& [thread, slot] : threads) {
    if (slot && slot->abandoned.load()) {
      // Its step ignored its timeout and may never return: it cannot be
      // joined. It exits its loop if the step ever returns.
      thread.detach();
      ++left_running;
    } else {
      thread.join();
    }
  }
  abandoned_running_ = left_running;
  if (left_running > 0) {
    logger_.warn("Abandoned worker threads are still running steps that ignored their timeout",
                 Json::object({{"threads", left_running}}));
  }
  if (watch_thread_.joinable()) {
    watch_stopping_.store(true);
    watch_->wake();
    watch_thread_.join();
  }
  try {
    stores_.open()->remove_process(process_id_);
  } catch (const std::exception& e) {
    logger_.error("Could not remove the process row",
                  Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
  }
  logger_.info("Host stopped", Json::object({{"process_id", process_id_}}));
}

void HostRuntime::idle_wait(Waker& waker, uint64_t seen, double seconds) {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  waker.wait(seen, std::chrono::duration<double>(seconds * jitter(rng)));
}

bool HostRuntime::stop_if_database_unusable(const std::exception& e) {
  if (!is_database_unusable(e)) return false;
  // Said once, whichever loop noticed first; then every loop stops. Going on
  // would only fail every iteration (1,142 failures a minute, forever).
  if (!database_unusable_.exchange(true)) {
    logger_.error("Database is not usable; this host stops claiming work and exits",
                  Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
  }
  stopping_.store(true);
  wakeups_.wake_everyone();
  stop_waker_.notify_all();
  return true;
}

LoopHealth& HostRuntime::new_loop_slot() {  // loops_mutex_ held, or before any thread starts
  loops_.push_back(std::make_unique<LoopHealth>(stores_.clock()));
  return *loops_.back();
}

double HostRuntime::stuck_after_seconds() const {
  // An idle loop ticks once per polling interval (+25 % jitter); never call
  // that stuck, whatever the reaper timeout.
  double longest_poll = 0;
  for (const auto& p : pipelines_) {
    longest_poll = std::max({longest_poll, config_.pipeline_advancer.polling_timeout.get(p),
                             config_.job_worker.polling_timeout.get(p)});
  }
  return std::max(config_.supervisor.reaper_timeout, 3 * longest_poll);
}

double HostRuntime::oldest_tick_age() const {
  int64_t now = LoopHealth::now_ms(stores_.clock());
  double oldest = 0;
  std::lock_guard<std::mutex> lock(loops_mutex_);
  for (const auto& loop : loops_) oldest = std::max(oldest, loop->stuck_seconds(now));
  return oldest;
}

void HostRuntime::worker_loop(const std::string& pipeline, LoopHealth& health) {
  Waker& waker = *wakeups_.jobs(pipeline);
  std::unique_ptr<Store> store;
  std::unique_ptr<BranchAdvance> advance;  // chains advanced in the success's transaction
  std::unique_ptr<JobWorker> worker;
  const double polling_timeout = config_.job_worker.polling_timeout.get(pipeline);
  while ((!stopping_.load() || (worker && worker->has_pending())) && !health.abandoned.load()) {
    health.tick();
    uint64_t seen = waker.generation();
    double idle = polling_timeout;
    const uint64_t attempt = outage_.attempt();
    try {
      if (!worker) {
        store = stores_.open();
        advance = std::make_unique<BranchAdvance>(*store, definitions_, config_, logger_, wakeups_, &plugins_);
        worker = std::make_unique<JobWorker>(pipeline, *store, plugins_, config_, logger_, wakeups_, stats_,
                                             process_id_, cancelled_, &stopping_, &health, advance.get(),
                                             watch_.get(), &journal_);
      }
      bool worked;
      {
        // Counted while a claim may be held, so shutdown knows to wait.
        busy_workers_.fetch_add(1);
        health.busy.store(true);
        struct Done {
          std::atomic<int>& n;
          LoopHealth& health;
          ~Done() {
            if (health.busy.exchange(false)) n.fetch_sub(1);
          }
        } done{busy_workers_, health};
        worked = worker->run_once();
      }
      if (health.abandoned.load()) break;  // a new thread took this loop's place
      outage_.succeeded(attempt);
      if (worked) continue;
      idle = worker->idle_seconds();
    } catch (const std::exception& e) {
      if (stop_if_database_unusable(e)) break;  // its claim cannot be committed anywhere
      if (!outage_.failed(e, &idle)) {
        logger_.error("Job worker iteration failed", Json::object({{"pipeline", pipeline},
                                                                   {"error_klass", demangled_type_name(e)},
                                                                   {"error_message", e.what()}}));
        idle = kErrorBackoffSeconds;
      }
    }
    if (stopping_.load() && !(worker && worker->has_pending())) break;  // never leave a claim behind
    idle_wait(waker, seen, idle);
  }
}

void HostRuntime::advancer_loop(const std::vector<std::string>& pipelines, LoopHealth& health) {
  Waker& waker = wakeups_.advancers();
  std::unique_ptr<Store> store;
  std::unique_ptr<Advancer> advancer;
  const double polling_timeout = config_.pipeline_advancer.polling_timeout_for(pipelines);
  while (!stopping_.load()) {
    health.tick();
    uint64_t seen = waker.generation();
    double idle = polling_timeout;
    const uint64_t attempt = outage_.attempt();
    try {
      if (!store) {
        store = stores_.open();
        advancer = std::make_unique<Advancer>(pipelines, *store, definitions_, config_, logger_, wakeups_,
                                              process_id_, &plugins_);
      }
      BranchClaimResult result = advancer->run_once();
      outage_.succeeded(attempt);
      if (result != BranchClaimResult::kIdle) continue;  // claimed or contended: go again at once
    } catch (const std::exception& e) {
      if (stop_if_database_unusable(e)) break;
      if (!outage_.failed(e, &idle)) {
        logger_.error("Pipeline advancer iteration failed",
                      Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
        idle = kErrorBackoffSeconds;
      }
    }
    if (stopping_.load()) break;
    idle_wait(waker, seen, idle);
  }
}

void HostRuntime::heartbeat_loop() {
  // The supervising loop of a threaded host: heartbeat, then reap.
  std::unique_ptr<Store> store;
  std::unique_ptr<Reaper> reaper;
  while (!stopping_.load()) {
    uint64_t seen = stop_waker_.generation();
    const uint64_t attempt = outage_.attempt();
    try {
      if (!store) {
        store = stores_.open();
        reaper = std::make_unique<Reaper>(*store, config_, logger_, &wakeups_);
      }
      // Thread health. A loop that has not ticked within the reaper timeout
      // while running no step is stuck (a wedged call). A loop running a
      // step is busy, however long the step takes (SPEC §6). A thread cannot
      // be killed safely, so the unit of restart is the process: a child
      // stops heartbeating and its supervisor kills it (death confirmed),
      // reaps its claims and starts a fresh one. A threaded host can only
      // report it; the restart is deferred to an operator.
      double stuck_for = oldest_tick_age();
      if (stuck_for > stuck_after_seconds()) {
        logger_.error(role_.supervised
                          ? "Loop thread stuck; withholding heartbeat so the supervisor restarts this process"
                          : "Loop thread stuck; restart deferred (threads cannot be killed)",
                      Json::object({{"stuck_seconds", stuck_for}}));
        if (role_.supervised) {
          stop_waker_.wait(seen, std::chrono::duration<double>(config_.supervisor.polling_timeout));
          continue;
        }
      }
      // A database file replaced or a -wal deleted under us fails no
      // statement of ours (we keep the old file open); look for it.
      store->check_storage();
      if (!store->heartbeat(process_id_, std::string(), notice_)) {
        // Our row was reaped (e.g. after a suspend): adopt a fresh one.
        logger_.warn("Process row was reaped; re-adopting", Json::object({{"process_id", process_id_}}));
        store->register_process(process_id_, ::getpid(), machine_identifier(), role_.name);
      }
      if (role_.reaper) reaper->tick(process_id_);
      outage_.succeeded(attempt);
    } catch (const std::exception& e) {
      if (stop_if_database_unusable(e)) break;
      double backoff = 0;
      if (!outage_.failed(e, &backoff)) {
        logger_.error("Supervisor tick failed",
                      Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
      }
    }
    stop_waker_.wait(seen, std::chrono::duration<double>(config_.supervisor.polling_timeout));
  }
}

void HostRuntime::change_watch_loop() {
  // Cheap enough to poll often: PRAGMA data_version reads the WAL index in
  // shared memory, touching no table.
  constexpr auto kInterval = std::chrono::milliseconds(2);
  std::unique_ptr<Store> store;
  int64_t seen_version = -1;
  while (!stopping_.load()) {
    uint64_t seen = stop_waker_.generation();
    try {
      // On PostgreSQL the factory counts the announcements itself: no
      // session is opened only to ask it.
      std::optional<int64_t> counted = stores_.data_version();
      if (!counted && !store) store = stores_.open();
      int64_t version = counted ? *counted : store->data_version();
      if (seen_version >= 0 && version != seen_version) wakeups_.wake_everyone();
      seen_version = version;
    } catch (const std::exception& e) {
      if (stop_if_database_unusable(e)) break;
      double backoff = kErrorBackoffSeconds;
      if (!outage_.failed(e, &backoff)) {
        logger_.error("Change watch failed",
                      Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
      }
      stop_waker_.wait(seen, std::chrono::duration<double>(backoff));
      continue;
    }
    stop_waker_.wait(seen, kInterval);
  }
}

}  // namespace ductwork
