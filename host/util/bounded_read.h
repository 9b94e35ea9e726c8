#pragma once

#include <cstddef>
#include <string>

namespace ductwork {

// Reading what a user points the host at (a configuration file, a
// definition file, a `trigger --from` file) with its size limit applied
// while reading: a path such as /dev/zero, a FIFO or a 300 MB file is
// refused after at most `max_bytes` + 1 bytes, never read whole first
// (`list -c /dev/zero` grew to 3.6 GB before this).

// What read_bounded_file found. When `too_large`, `text` holds the first
// `max_bytes` bytes only; when `error` is not 0 (an errno: ENOENT, EISDIR,
// EACCES...), `text` is empty.
struct BoundedFile {
  std::string text;
  bool too_large = false;
  int error = 0;
};

// The content of the file at `path` (a regular file, a device, a FIFO; a
// folder is EISDIR), reading at most max_bytes + 1 bytes.
BoundedFile read_bounded_file(const std::string& path, std::size_t max_bytes);

// Lines of a file descriptor, each read with a length limit: a line longer
// than `max_line_bytes` is reported as soon as that many bytes of it were
// read, whether or not a newline ever comes. The descriptor is not closed.
class BoundedLineReader {
 public:
  enum class Next { kLine, kEnd, kTooLong, kError };

  BoundedLineReader(int fd, std::size_t max_line_bytes) : fd_(fd), max_line_bytes_(max_line_bytes) {}
  BoundedLineReader(const BoundedLineReader&) = delete;
  BoundedLineReader& operator=(const BoundedLineReader&) = delete;

  // The next line, without its '\n' (the last line may lack one): kLine;
  // kEnd at the end of the input; kTooLong when the line passed the limit
  // (*line then holds its first max_line_bytes bytes, and reading stops);
  // kError with error() set when reading failed.
  Next next(std::string* line);
  // The errno of the last kError.
  int error() const { return error_; }
  // Lines returned or refused so far (the 1-based number of the last one).
  std::size_t line_number() const { return line_number_; }

 private:
  bool fill();

  int fd_;
  std::size_t max_line_bytes_;
  std::string buffer_;
  std::size_t start_ = 0;
  bool eof_ = false;
  int error_ = 0;
  std::size_t line_number_ = 0;
};

}  // namespace ductwork
