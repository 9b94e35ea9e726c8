// `ductwork start` as a systemd Type=notify service: READY=1 once its loops
// run, WATCHDOG=1 at half of $WATCHDOG_USEC, RELOADING=1/READY=1 around a
// SIGHUP, STOPPING=1 on SIGTERM — all from the top process (checked with
// the sender's credentials), never from a child. The socket is a real
// AF_UNIX datagram socket standing in for systemd's.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "harness.h"

namespace ductwork::it {
namespace {

struct Message {
  pid_t sender = 0;
  std::string text;
};

// A bound datagram socket that receives messages with their sender's pid.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    int on = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool ok() const { return fd_ >= 0 && bound_; }

  // Every message that arrives within `seconds` until one contains `until`.
  std::vector<Message> receive_until(const std::string& until, double seconds) {
    std::vector<Message> got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      char buffer[4096];
      char control[CMSG_SPACE(sizeof(ucred))];
      iovec io{buffer, sizeof(buffer)};
      msghdr header{};
      header.msg_iov = &io;
      header.msg_iovlen = 1;
      header.msg_control = control;
      header.msg_controllen = sizeof(control);
      ssize_t n = ::recvmsg(fd_, &header, 0);
      if (n < 0) continue;
      Message m;
      m.text.assign(buffer, static_cast<size_t>(n));
      for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
          ucred cred;
          std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
          m.sender = cred.pid;
        }
      }
      got.push_back(m);
      if (m.text.find(until) != std::string::npos) break;
    }
    return got;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

size_t count_containing(const std::vector<Message>& messages, const std::string& text) {
  size_t n = 0;
  for (const auto& m : messages) n += m.text.find(text) != std::string::npos ? 1 : 0;
  return n;
}

std::string describe(const std::vector<Message>& messages) {
  std::string out;
  for (const auto& m : messages) out += "[" + std::to_string(m.sender) + "] " + m.text + "\n";
  return out;
}

class SystemdNotifyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SystemdNotifyTest, ReadyWatchdogReloadingAndStoppingComeFromTheTopProcessOnly) {
  ConfigOptions options;
  options.extra = std::string("forking: ") + GetParam() + "\nsupervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("Chain", {"Inc", "Double"}));
  NotifySocket socket(ws.file("notify.sock"));
  ASSERT_TRUE(socket.ok()) << std::strerror(errno);

  auto process = ws.process_options(60);
  process.env.push_back({"NOTIFY_SOCKET", ws.file("notify.sock")});
  process.env.push_back({"WATCHDOG_USEC", "400000"});  // a ping at least every 0.2 s
  testsupport::Subprocess host(ws.command({"start"}), process);

  std::vector<Message> startup = socket.receive_until("READY=1", 30);
  ASSERT_EQ(count_containing(startup, "READY=1"), 1u) << describe(startup) << host.stdout_so_far();
  // It is ready: work triggered now runs.
  std::string id = ws.trigger("Chain", {"4"});
  ASSERT_TRUE(eventually(20, [&] { return ws.status(id)["status"] == "completed"; })) << host.stdout_so_far();

  // Pings keep coming while it runs (1.5 s at a 0.2 s pace: several).
  std::vector<Message> running = socket.receive_until("never sent", 1.5);
  EXPECT_GE(count_containing(running, "WATCHDOG=1"), 4u) << describe(running);

  host.signal(SIGHUP);
  std::vector<Message> reload = socket.receive_until("READY=1", 30);
  EXPECT_EQ(count_containing(reload, "RELOADING=1"), 1u) << describe(reload);
  EXPECT_EQ(count_containing(reload, "READY=1"), 1u) << describe(reload) << host.stdout_so_far();

  host.signal(SIGTERM);
  std::vector<Message> stopping = socket.receive_until("STOPPING=1", 30);
  EXPECT_EQ(count_containing(stopping, "STOPPING=1"), 1u) << describe(stopping);
  ProcessResult r = host.wait(60);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;

  // The top process's pid is kept across a threaded host's reload (exec).
  for (const auto* batch : {&startup, &running, &reload, &stopping}) {
    for (const Message& m : *batch) EXPECT_EQ(m.sender, host.pid()) << "a child spoke for the service: " << m.text;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SystemdNotifyTest, ::testing::Values("fork", "none"));

TEST(SystemdAbsentTest, WithoutTheSocketNothingChanges) {
  // No NOTIFY_SOCKET (not under systemd): the host runs as always; a
  // variable pointing at nothing is not an error either.
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain", {"Inc"}));
  std::string id = ws.trigger("Chain", {"1"});
  ProcessResult r = ws.run_with_env({"start", "--drain"}, {{"NOTIFY_SOCKET", ws.file("nobody-listens.sock")}}, 30);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_EQ(ws.status(id)["status"], "completed");
}

}  // namespace
}  // namespace ductwork::it
