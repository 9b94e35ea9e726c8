#include "raw_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace ductwork::it {
namespace {

int remaining_ms(RawConnection::Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RawConnection::Clock::now());
  return static_cast<int>(std::max<long long>(0, left.count()));
}

RawConnection::Clock::time_point after(double seconds) {
  return RawConnection::Clock::now() +
         std::chrono::duration_cast<RawConnection::Clock::duration>(std::chrono::duration<double>(seconds));
}

// The length of the first whole response in `text` (head and body), 0 when
// it has not all arrived.
size_t whole_response_length(const std::string& text) {
  const size_t head_end = text.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  std::string head = text.substr(0, head_end + 2);
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t length = 0;
  if (size_t at = head.find("\r\ncontent-length:"); at != std::string::npos) {
    length = std::strtoull(head.c_str() + at + std::strlen("\r\ncontent-length:"), nullptr, 10);
  }
  const size_t total = head_end + 4 + length;
  return text.size() >= total ? total : 0;
}

}  // namespace

RawConnection::RawConnection(const std::string& address, int receive_buffer_bytes) {
  const size_t colon = address.rfind(':');
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1) return;
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  if (receive_buffer_bytes > 0) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
  }
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  connected_at_ = Clock::now();
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawConnection::send(const std::string& bytes, double timeout_seconds) {
  if (fd_ < 0) return false;
  const auto deadline = after(timeout_seconds);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() >= deadline) return false;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, std::min(remaining_ms(deadline), 100));
      continue;
    }
    return false;
  }
  return true;
}

void RawConnection::read_some(double timeout_seconds) {
  if (fd_ < 0 || closed_) return;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout_seconds * 1000)) <= 0) return;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n > 0) {
      received_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    closed_ = true;  // 0: the peer's FIN; an error: its reset
    closed_at_ = Clock::now();
    return;
  }
}

bool RawConnection::poll_read() {
  read_some(0);
  return !closed_;
}

bool RawConnection::wait_closed(double timeout_seconds) {
  const auto deadline = after(timeout_seconds);
  while (!closed_ && fd_ >= 0 && Clock::now() < deadline) read_some(std::min(remaining_ms(deadline), 100) / 1000.0);
  return closed_;
}

bool RawConnection::wait_response(double timeout_seconds) {
  const auto deadline = after(timeout_seconds);
  while (whole_response_length(received_) == 0 && !closed_ && fd_ >= 0 && Clock::now() < deadline) {
    read_some(std::min(remaining_ms(deadline), 100) / 1000.0);
  }
  return whole_response_length(received_) > 0;
}

std::string RawConnection::take_response() {
  const size_t length = whole_response_length(received_);
  std::string response = received_.substr(0, length);
  received_.erase(0, length);
  return response;
}

int status_of(const std::string& response) {
  if (response.compare(0, 5, "HTTP/") != 0) return 0;
  const size_t space = response.find(' ');
  return space == std::string::npos ? 0 : std::atoi(response.c_str() + space + 1);
}

std::string body_of(const std::string& response) {
  const size_t head_end = response.find("\r\n\r\n");
  return head_end == std::string::npos ? "" : response.substr(head_end + 4);
}

}  // namespace ductwork::it
