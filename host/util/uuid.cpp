#include "util/uuid.h"

#include "util/clock.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

namespace ductwork {
namespace {

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine{std::random_device{}() ^
                                      (static_cast<uint64_t>(std::random_device{}()) << 32)};
  return engine;
}

UuidText format_text(const uint8_t (&b)[16]) {
  static constexpr char kHex[] = "0123456789abcdef";
  UuidText out;
  int at = 0;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.chars[at++] = '-';
    out.chars[at++] = kHex[b[i] >> 4];
    out.chars[at++] = kHex[b[i] & 0xf];
  }
  return out;
}

std::string format(const uint8_t (&b)[16]) { return std::string(format_text(b).view()); }

}  // namespace

std::string new_uuid_v7(const Clock& clock) { return std::string(new_uuid_v7_text(clock).view()); }

UuidText new_uuid_v7_text(const Clock& clock) {
  // Monotonic across threads: the (ms, counter) pair only moves forward.
  static std::mutex mutex;
  static uint64_t last_ms = 0;
  static uint32_t counter = 0;
  uint64_t ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          clock.wall().time_since_epoch())
                                          .count());
  uint32_t seq;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (ms <= last_ms) {
      ms = last_ms;
      if (++counter > 0xfff) {  // counter exhausted: borrow the next millisecond
        ++ms;
        counter = 0;
      }
    } else {
      counter = static_cast<uint32_t>(rng()() & 0x3ff);  // random start, room to count up
    }
    last_ms = ms;
    seq = counter;
  }
  uint64_t rand_b = rng()();
  uint8_t b[16];
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  b[6] = static_cast<uint8_t>(0x70 | ((seq >> 8) & 0x0f));
  b[7] = static_cast<uint8_t>(seq & 0xff);
  for (int i = 0; i < 8; ++i) b[8 + i] = static_cast<uint8_t>(rand_b >> (56 - 8 * i));
  b[8] = static_cast<uint8_t>(0x80 | (b[8] & 0x3f));
  return format_text(b);
}

std::string new_uuid_v4() {
  uint64_t hi = rng()(), lo = rng()();
  uint8_t b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  b[6] = static_cast<uint8_t>(0x40 | (b[6] & 0x0f));
  b[8] = static_cast<uint8_t>(0x80 | (b[8] & 0x3f));
  return format(b);
}

}  // namespace ductwork
