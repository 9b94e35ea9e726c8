#include "process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ductwork::testsupport {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// The child's stdout/stderr: a memory file every process it starts shares
// (a forking host's children write their log lines to it). It must append:
// a memory file's writes, unlike a regular file's, do not take the shared
// offset atomically, so two processes writing at once could both write at
// the same offset and one line would be lost.
int make_output_file(const char* name) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) fail_errno("memfd_create");
  if (::fcntl(fd, F_SETFL, O_APPEND) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail_errno("fcntl(O_APPEND) on the output file");
  }
  return fd;
}

std::string read_all(int fd) {
  std::string text;
  if (fd < 0) return text;
  char buf[65536];
  off_t offset = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("pread");
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return text;
}

}  // namespace

std::string ProcessResult::describe() const {
  std::ostringstream s;
  if (timed_out) s << "timed out after " << seconds << " s, ";
  if (exit_code >= 0) {
    s << "exit " << exit_code;
  } else if (term_signal) {
    s << "signal " << term_signal << " (" << strsignal(term_signal) << ")";
  } else {
    s << "not finished";
  }
  s << "\n--- stdout ---\n" << out << "\n--- stderr ---\n" << err;
  return s.str();
}

Subprocess::Subprocess(const std::vector<std::string>& argv, const ProcessOptions& options)
    : timeout_seconds_(options.timeout_seconds) {
  if (argv.empty()) throw std::invalid_argument("Subprocess: empty argv");
  out_fd_ = make_output_file("child-stdout");
  err_fd_ = make_output_file("child-stderr");

  // The child's environment: ours, minus unset_env and minus every
  // DUCTWORK_ variable (a developer's shell, a test script's own settings:
  // `ductwork` reads them as configuration and warns about names it does
  // not know), with env applied — a test that wants one says so there.
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool drop = name.rfind("DUCTWORK_", 0) == 0 ||
                std::find(options.unset_env.begin(), options.unset_env.end(), name) != options.unset_env.end();
    for (const auto& [k, v] : options.env) drop = drop || k == name;
    if (!drop) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd_, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd_, STDERR_FILENO);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills everything it started; default
  // signal dispositions and an empty mask whatever this process uses.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  started_ = std::chrono::steady_clock::now();
  int rc = ::posix_spawn(&pid_, argp[0], &actions, &attr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    ::close(out_fd_);
    ::close(err_fd_);
    errno = rc;
    fail_errno("posix_spawn " + argv[0]);
  }
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    reap(true);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool Subprocess::reap(bool block) {
  if (reaped_) return true;
  while (true) {
    struct rusage usage {};
    pid_t r = ::wait4(pid_, &status_, block ? 0 : WNOHANG, &usage);
    if (r == pid_) {
      reaped_ = true;
      max_rss_kb_ = usage.ru_maxrss;
      ended_ = std::chrono::steady_clock::now();
      return true;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    fail_errno("waitpid");
  }
}

bool Subprocess::running() { return !reap(false); }

void Subprocess::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

std::string Subprocess::stdout_so_far() const { return read_all(out_fd_); }
std::string Subprocess::stderr_so_far() const { return read_all(err_fd_); }

ProcessResult Subprocess::wait(double timeout_seconds) {
  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (!reap(false)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      reap(true);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status_)) result.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) result.term_signal = WTERMSIG(status_);
  result.out = read_all(out_fd_);
  result.err = read_all(err_fd_);
  result.seconds = std::chrono::duration<double>(ended_ - started_).count();
  result.max_rss_kb = max_rss_kb_;
  return result;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Subprocess child(argv, options);
  return child.wait(options.timeout_seconds);
}

}  // namespace ductwork::testsupport
