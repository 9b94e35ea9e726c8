#include "metrics/metric_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>

namespace ductwork::metrics {

constexpr uint32_t kMagic = 0x64774d54;  // "dwMT"
constexpr std::size_t kKeyBytes = 184;
// Series per process: pipelines x steps x results, with room to spare.
constexpr std::size_t kSlots = 4096;

enum SlotState : uint32_t { kEmpty = 0, kClaiming = 1, kReady = 2 };

struct Slot {
  std::atomic<uint32_t> state;
  uint32_t key_size;
  char key[kKeyBytes];
  std::atomic<uint64_t> count;
  std::atomic<uint64_t> sum_ns;
  std::atomic<uint64_t> buckets[kBuckets.size()];
};

struct MetricTable::Layout {
  // Written last (release) by the owner: a reader that sees it sees a
  // table whose slots are all initialised.
  std::atomic<uint32_t> magic;
  uint32_t slot_count;
  std::atomic<uint64_t> dropped;
  Slot slots[kSlots];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "metrics need lock-free 64-bit atomics in shared memory");

void Values::add(const Values& other) {
  count += other.count;
  sum_ns += other.sum_ns;
  for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
}

Family family_of(const std::string& key) { return static_cast<Family>(key.empty() ? 0 : key[0]); }

std::vector<std::string> labels_of(const std::string& key) {
  std::vector<std::string> out;
  for (std::size_t at = key.find('\x1f'); at != std::string::npos;) {
    std::size_t next = key.find('\x1f', at + 1);
    out.push_back(key.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next;
  }
  return out;
}

MetricTable::MetricTable() : layout_(new Layout()), mapped_(false) {
  layout_->slot_count = kSlots;
  layout_->magic.store(kMagic, std::memory_order_release);
}

MetricTable::MetricTable(Layout* layout, bool mapped) : layout_(layout), mapped_(mapped) {}

MetricTable::~MetricTable() {
  if (mapped_) {
    ::munmap(layout_, sizeof(Layout));
  } else {
    delete layout_;
  }
}

std::unique_ptr<MetricTable> MetricTable::create_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    // Allocated now: a page first touched on a full disk would be SIGBUS.
    if (::posix_fallocate(fd, 0, sizeof(Layout)) == 0) {
      void* p = ::mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      ::close(fd);
      if (p != MAP_FAILED) {
        auto* layout = static_cast<Layout*>(p);  // zero-filled: every slot empty
        layout->slot_count = kSlots;
        layout->magic.store(kMagic, std::memory_order_release);
        return std::unique_ptr<MetricTable>(new MetricTable(layout, true));
      }
    } else {
      ::close(fd);
    }
    ::unlink(path.c_str());
  }
  return std::make_unique<MetricTable>();
}

Slot* MetricTable::slot_for(std::string_view key) {
  if (key.size() > kKeyBytes) {
    layout_->dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const std::size_t start = std::hash<std::string_view>{}(key) % kSlots;
  for (std::size_t probe = 0; probe < kSlots; ++probe) {
    Slot& slot = layout_->slots[(start + probe) % kSlots];
    uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == kEmpty) {
      uint32_t expected = kEmpty;
      if (slot.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel)) {
        std::memcpy(slot.key, key.data(), key.size());
        slot.key_size = static_cast<uint32_t>(key.size());
        slot.state.store(kReady, std::memory_order_release);
        return &slot;
      }
      state = expected;
    }
    // Another thread is writing this slot's key: it is ready in a moment.
    while (state == kClaiming) state = slot.state.load(std::memory_order_acquire);
    if (slot.key_size == key.size() && std::memcmp(slot.key, key.data(), key.size()) == 0) return &slot;
  }
  layout_->dropped.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

namespace {

// A series' key (Snapshot's form); a key longer than kKeyBytes comes back
// one byte too long (slot_for counts it as dropped).
struct KeyBuffer {
  char bytes[kKeyBytes + 1];
  std::size_t size = 0;
  void append(char c) {
    if (size <= kKeyBytes) bytes[size++] = c;
  }
  void append(std::string_view text) {
    for (char c : text) append(c);
  }
  std::string_view view() const { return std::string_view(bytes, size); }
};

KeyBuffer key_of(Family family, std::initializer_list<std::string_view> labels) {
  KeyBuffer key;
  key.append(static_cast<char>(family));
  for (std::string_view label : labels) {
    key.append('\x1f');
    key.append(label);
  }
  return key;
}

}  // namespace

void MetricTable::add(Family family, std::initializer_list<std::string_view> labels, uint64_t n) {
  const KeyBuffer key = key_of(family, labels);
  if (Slot* slot = slot_for(key.view())) slot->count.fetch_add(n, std::memory_order_relaxed);
}

void MetricTable::observe(Family family, std::initializer_list<std::string_view> labels, double seconds) {
  const KeyBuffer key = key_of(family, labels);
  Slot* slot = slot_for(key.view());
  if (slot == nullptr) return;
  if (!(seconds >= 0)) seconds = 0;  // NaN or a clock step back
  std::size_t bucket = 0;
  while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
  if (bucket < kBuckets.size()) slot->buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  slot->sum_ns.fetch_add(static_cast<uint64_t>(std::llround(std::min(seconds, 1e9) * 1e9)), std::memory_order_relaxed);
  slot->count.fetch_add(1, std::memory_order_relaxed);
}

namespace {

void add_slots(const MetricTable::Layout& layout, Snapshot* into) {
  for (const Slot& slot : layout.slots) {
    if (slot.state.load(std::memory_order_acquire) != kReady || slot.key_size > kKeyBytes) continue;
    Values v;
    v.count = slot.count.load(std::memory_order_relaxed);
    v.sum_ns = slot.sum_ns.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < v.buckets.size(); ++i) v.buckets[i] = slot.buckets[i].load(std::memory_order_relaxed);
    (*into)[std::string(slot.key, slot.key_size)].add(v);
  }
}

}  // namespace

void MetricTable::snapshot_into(Snapshot* into) const { add_slots(*layout_, into); }

bool MetricTable::read_file(const std::string& path, Snapshot* into) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != sizeof(Layout)) {
    ::close(fd);
    return false;
  }
  void* p = ::mmap(nullptr, sizeof(Layout), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  const auto* layout = static_cast<const Layout*>(p);
  bool whole = layout->magic.load(std::memory_order_acquire) == kMagic && layout->slot_count == kSlots;
  if (whole) add_slots(*layout, into);
  ::munmap(p, sizeof(Layout));
  return whole;
}

uint64_t MetricTable::dropped() const { return layout_->dropped.load(std::memory_order_relaxed); }

}  // namespace ductwork::metrics
