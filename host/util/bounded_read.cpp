#include "util/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ductwork {
namespace {

constexpr std::size_t kChunkBytes = 64 * 1024;

// read(2), retried after a signal; -1 with errno set on failure.
ssize_t read_some(int fd, char* into, std::size_t size) {
  while (true) {
    ssize_t n = ::read(fd, into, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

}  // namespace

BoundedFile read_bounded_file(const std::string& path, std::size_t max_bytes) {
  BoundedFile out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    out.error = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return out;
  }
  // One byte past the limit tells "exactly at the limit" from "over it".
  const std::size_t want = max_bytes + 1;
  if (S_ISREG(st.st_mode)) out.text.reserve(std::min(want, static_cast<std::size_t>(st.st_size) + 1));
  while (out.text.size() < want) {
    const std::size_t had = out.text.size();
    out.text.resize(had + std::min(kChunkBytes, want - had));
    ssize_t n = read_some(fd, &out.text[had], out.text.size() - had);
    if (n <= 0) {
      out.text.resize(had);
      if (n < 0) {
        out.error = errno;
        out.text.clear();
      }
      break;
    }
    out.text.resize(had + static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (out.text.size() > max_bytes) {
    out.too_large = true;
    out.text.resize(max_bytes);
  }
  return out;
}

bool BoundedLineReader::fill() {
  if (eof_) return false;
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  const std::size_t had = buffer_.size();
  buffer_.resize(had + kChunkBytes);
  ssize_t n = read_some(fd_, &buffer_[had], kChunkBytes);
  if (n <= 0) {
    buffer_.resize(had);
    if (n < 0) error_ = errno;
    eof_ = true;
    return false;
  }
  buffer_.resize(had + static_cast<std::size_t>(n));
  return true;
}

BoundedLineReader::Next BoundedLineReader::next(std::string* line) {
  line->clear();
  std::size_t searched = start_;
  while (true) {
    std::size_t newline = buffer_.find('\n', searched);
    if (newline != std::string::npos && newline - start_ <= max_line_bytes_) {
      ++line_number_;
      line->assign(buffer_, start_, newline - start_);
      start_ = newline + 1;
      return Next::kLine;
    }
    if (buffer_.size() - start_ > max_line_bytes_) {
      ++line_number_;
      line->assign(buffer_, start_, max_line_bytes_);
      eof_ = true;
      buffer_.clear();
      start_ = 0;
      return Next::kTooLong;
    }
    searched = buffer_.size();
    const std::size_t offset = start_;
    if (!fill()) break;
    searched -= offset;  // fill() moved the unread part to the front
  }
  if (error_ != 0) return Next::kError;
  if (start_ < buffer_.size()) {
    ++line_number_;
    line->assign(buffer_, start_, std::string::npos);
    buffer_.clear();
    start_ = 0;
    return Next::kLine;
  }
  return Next::kEnd;
}

}  // namespace ductwork
