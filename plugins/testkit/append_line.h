// A line appended to a log file by one O_APPEND write, so that steps
// running in several threads and processes can share the log: tests read
// it to learn what the steps saw (RecordKey, Pause).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <ductwork/step.hpp>

namespace ductwork::testkit {

// Appends `line` (which ends with '\n') to the file `path`, creating it;
// throws ductwork::testkit::LogWriteFailed when that fails.
inline void append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const bool written = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (fd >= 0) ::close(fd);
  if (!written) throw Error("ductwork::testkit::LogWriteFailed", "could not append to " + path);
}

}  // namespace ductwork::testkit
