// util/bounded_read: whatever the input, no more than the limit (+1 byte,
// or one read chunk for a line) is ever held.
#include "util/bounded_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace ductwork {
namespace {

using Next = BoundedLineReader::Next;

// A reader over `text` written into a pipe by another thread, 7 bytes at a
// time (so reads return in pieces, as from standard input). The text must
// fit the pipe's buffer: the writer is joined before the reader closes.
class PipeInput {
 public:
  explicit PipeInput(std::string text) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_fd_ = fds[0];
    writer_ = std::thread([fd = fds[1], text = std::move(text)] {
      for (std::size_t at = 0; at < text.size();) {
        ssize_t n = ::write(fd, text.data() + at, std::min<std::size_t>(7, text.size() - at));
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
  }
  ~PipeInput() {
    writer_.join();
    ::close(read_fd_);
  }
  int fd() const { return read_fd_; }

 private:
  int read_fd_ = -1;
  std::thread writer_;
};

TEST(BoundedRead, LinesUpToTheLimitWithOrWithoutAFinalNewline) {
  PipeInput in("abc\n\n12345\nxy");
  BoundedLineReader reader(in.fd(), 5);
  std::string line;
  EXPECT_EQ(reader.next(&line), Next::kLine);
  EXPECT_EQ(line, "abc");
  EXPECT_EQ(reader.next(&line), Next::kLine);
  EXPECT_EQ(line, "");
  EXPECT_EQ(reader.next(&line), Next::kLine);
  EXPECT_EQ(line, "12345");
  EXPECT_EQ(reader.next(&line), Next::kLine);
  EXPECT_EQ(line, "xy");
  EXPECT_EQ(reader.line_number(), 4u);
  EXPECT_EQ(reader.next(&line), Next::kEnd);
  EXPECT_EQ(reader.next(&line), Next::kEnd);
}

TEST(BoundedRead, ALineOverTheLimitStopsTheReader) {
  PipeInput in("ok\n123456\nnever read\n");
  BoundedLineReader reader(in.fd(), 5);
  std::string line;
  EXPECT_EQ(reader.next(&line), Next::kLine);
  EXPECT_EQ(reader.next(&line), Next::kTooLong);
  EXPECT_EQ(line, "12345");
  EXPECT_EQ(reader.line_number(), 2u);
  EXPECT_EQ(reader.next(&line), Next::kEnd);
}

TEST(BoundedRead, AnEndlessLineIsRefusedAtItsLimit) {
  int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  BoundedLineReader reader(fd, 1 << 20);
  std::string line;
  EXPECT_EQ(reader.next(&line), Next::kTooLong);
  EXPECT_EQ(line.size(), 1u << 20);
  ::close(fd);
}

TEST(BoundedRead, AFileIsReadUpToItsLimit) {
  testsupport::TempDir dir;
  const std::string path = dir.write("f.txt", "0123456789");
  BoundedFile exact = read_bounded_file(path, 10);
  EXPECT_FALSE(exact.too_large);
  EXPECT_EQ(exact.text, "0123456789");
  BoundedFile over = read_bounded_file(path, 9);
  EXPECT_TRUE(over.too_large);
  EXPECT_EQ(over.text, "012345678");
  BoundedFile endless = read_bounded_file("/dev/zero", 1 << 20);
  EXPECT_TRUE(endless.too_large);
  EXPECT_EQ(endless.text.size(), 1u << 20);
  EXPECT_EQ(read_bounded_file(dir.file("missing"), 10).error, ENOENT);
  EXPECT_EQ(read_bounded_file(dir.path(), 10).error, EISDIR);
}

}  // namespace
}  // namespace ductwork
