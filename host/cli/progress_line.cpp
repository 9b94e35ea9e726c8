#include "cli/progress_line.h"

#include <cstdio>

namespace ductwork::cli {

ProgressLine::ProgressLine(Logger& logger, const Clock& clock)
    : logger_(logger), clock_(clock), last_time_(clock.monotonic()) {
  logger_.set_line_hooks([] { std::fputs("\r\033[K", stdout); }, [this] { draw_locked(); });
}

ProgressLine::~ProgressLine() {
  logger_.set_line_hooks(nullptr, nullptr);
  std::lock_guard<std::mutex> lock(logger_.output_mutex());
  std::fputs("\n", stdout);
  std::fflush(stdout);
}

void ProgressLine::update(int64_t runs_finished, int64_t runs_total, uint64_t steps_done) {
  const auto now = clock_.monotonic();
  double elapsed = std::chrono::duration<double>(now - last_time_).count();
  if (elapsed >= 0.5 || (rate_ == 0 && elapsed > 0.05)) {
    double instant = static_cast<double>(steps_done - last_steps_) / elapsed;
    rate_ = rate_ == 0 ? instant : 0.5 * rate_ + 0.5 * instant;  // smooth the jitter of short windows
    last_steps_ = steps_done;
    last_time_ = now;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "ductwork: runs %lld/%lld finished | %llu steps | %.0f steps/s",
                static_cast<long long>(runs_finished), static_cast<long long>(runs_total),
                static_cast<unsigned long long>(steps_done), rate_);
  std::lock_guard<std::mutex> lock(logger_.output_mutex());
  text_ = buf;
  std::fputs("\r\033[K", stdout);
  draw_locked();
}

void ProgressLine::draw_locked() {
  std::fputs(text_.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace ductwork::cli
