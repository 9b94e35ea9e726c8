#include "process/started_log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ductwork {
namespace {

constexpr uint32_t kMagic = 0x64775354;  // "dwST"
// Worker threads of one child: a child with more (job_worker.count allows
// 1,000) marks its log incomplete. Open steps per thread: a thread's list is
// emptied before each claim, so it holds one batch (job_worker.batch <= 1,024).
// 128 x 1,056 x 40 bytes: 5.4 MB per child, allocated up front (touched only
// as far as the threads write).
constexpr int kThreads = 128;
constexpr int kEntries = 1056;
constexpr std::size_t kIdBytes = 40;  // a UUID is 36

struct Slot {
  std::atomic<uint32_t> count;
  char ids[kEntries][kIdBytes];
};

struct Log {
  uint32_t magic;
  std::atomic<uint32_t> complete;
  Slot slots[kThreads];
};

Log* mapped = nullptr;
std::atomic<int> next_slot{0};
thread_local int my_slot = -1;

Slot* slot_of_this_thread() {
  if (mapped == nullptr) return nullptr;
  if (my_slot < 0) my_slot = next_slot.fetch_add(1);
  if (my_slot >= kThreads) {
    mapped->complete.store(0);
    return nullptr;
  }
  return &mapped->slots[my_slot];
}

std::string path_of(const std::string& folder, long pid) { return folder + "/" + std::to_string(pid) + ".started"; }

}  // namespace

void open_started_log(const std::string& folder) {
  if (folder.empty() || mapped != nullptr) return;
  std::string path = path_of(folder, static_cast<long>(::getpid()));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;  // no log: the supervisor counts every claim as a crash
  // Allocated now, not sparse: a page first written on a full disk would
  // kill the worker with SIGBUS. Without room the log is simply not kept.
  if (::posix_fallocate(fd, 0, sizeof(Log)) != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return;
  }
  void* p = ::mmap(nullptr, sizeof(Log), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return;
  mapped = static_cast<Log*>(p);  // zero-filled: every count 0
  mapped->magic = kMagic;
  mapped->complete.store(1);
}

void log_step_started(const std::string& execution_id) {
  Slot* slot = slot_of_this_thread();
  if (slot == nullptr) return;
  uint32_t n = slot->count.load(std::memory_order_relaxed);
  if (n >= static_cast<uint32_t>(kEntries)) {
    mapped->complete.store(0);
    return;
  }
  std::size_t len = std::min(execution_id.size(), kIdBytes - 1);
  std::memcpy(slot->ids[n], execution_id.data(), len);
  slot->ids[n][len] = '\0';
  // Counted only once written: a death before this line leaves the step
  // unlogged, and it had not started.
  slot->count.store(n + 1, std::memory_order_release);
}

void log_steps_settled() {
  Slot* slot = slot_of_this_thread();
  if (slot != nullptr) slot->count.store(0, std::memory_order_release);
}

std::optional<std::set<std::string>> take_started_log(const std::string& folder, pid_t pid) {
  if (folder.empty()) return std::nullopt;
  std::string path = path_of(folder, static_cast<long>(pid));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::set<std::string>> started;
  struct stat st {};
  // A file shorter than the log (the child died making it) must not be
  // mapped whole: reading past its end is SIGBUS.
  void* p = ::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= sizeof(Log)
                ? ::mmap(nullptr, sizeof(Log), PROT_READ, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  ::close(fd);
  if (p != MAP_FAILED) {
    const Log* log = static_cast<const Log*>(p);
    if (log->magic == kMagic && log->complete.load() == 1) {
      started.emplace();
      for (const Slot& slot : log->slots) {
        uint32_t n = std::min<uint32_t>(slot.count.load(), kEntries);
        for (uint32_t i = 0; i < n; ++i) started->insert(std::string(slot.ids[i], strnlen(slot.ids[i], kIdBytes)));
      }
    }
    ::munmap(p, sizeof(Log));
  }
  std::remove(path.c_str());
  return started;
}

}  // namespace ductwork
