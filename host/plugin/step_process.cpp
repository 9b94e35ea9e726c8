#include "plugin/step_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "engine/error_info.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/json_limits.h"
#include "util/wait_status.h"

extern char** environ;

namespace ductwork {
namespace {

// Waits on a step process are real waits (poll, waitpid): the host's own
// clock, never a test's shifted one.
const Clock& wait_clock() { return Clock::system(); }

constexpr size_t kStderrTail = 10;           // lines kept for a crash's report
constexpr size_t kStderrLineLimit = 4096;    // longer lines are logged in pieces
constexpr size_t kHelloLimit = 1 << 20;      // the hello is small
constexpr size_t kRequestSlack = 1 << 20;    // a reply line's room beyond the value limit

int ms_until(Clock::Instant deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - wait_clock().monotonic()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// The ABI's log level (dw_host_api.log) of a protocol level name.
int abi_log_level(const std::string& name) {
  if (name == "debug") return DW_LOG_DEBUG;
  if (name == "warn" || name == "warning") return DW_LOG_WARN;
  if (name == "error") return DW_LOG_ERROR;
  return DW_LOG_INFO;
}

std::string json_text(const std::string& s) { return Json(s).dump(); }

const std::string* string_member(const Json& doc, const char* key) {
  const Json* v = doc.find(key);
  return v && v->is_string() ? &v->as_string() : nullptr;
}

}  // namespace

StepProcess::StepProcess(std::shared_ptr<const ProcessManifest> manifest, Logger& logger)
    : manifest_(std::move(manifest)), logger_(logger) {}

StepProcess::~StepProcess() {
  if (pid_ > 0) end(0);
  close_fds();
}

void StepProcess::close_fds() {
  for (int* fd : {&in_, &out_, &err_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void StepProcess::start(double seconds) {
  // Everything the child needs is built before fork: between fork and exec
  // it only calls what is safe in a child of a threaded process.
  std::vector<std::string> args = manifest_->command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : manifest_->environment) replaced = replaced || k == name;
    if (!replaced) env_text.push_back(std::move(entry));
  }
  for (const auto& [k, v] : manifest_->environment) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string executable = manifest_->executable;
  const std::string directory = manifest_->directory;

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
  };
  // stdin is a socket so that a write to a process that died fails with
  // EPIPE (MSG_NOSIGNAL) instead of raising SIGPIPE in the host.
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
      ::pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close_all();
    throw StepProcessError("cannot make its pipes: " + why);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    close_all();
    throw StepProcessError("cannot start " + executable + ": " + why);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::setpgid(0, 0);  // a Ctrl-C at the host's terminal is the host's to handle
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) ::signal(sig, SIG_DFL);
    if (::dup2(in[1], 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0) ::_exit(127);
    ::close_range(3, ~0U, 0);
    if (::chdir(directory.c_str()) != 0) {
      static const char msg[] = "ductwork: cannot enter the step process's directory\n";
      [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::execve(executable.c_str(), argv.data(), envp.data());
    static const char msg[] = "ductwork: cannot run the step process's command\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(in[1]);
  ::close(out[1]);
  ::close(err[1]);
  pid_ = pid;
  in_ = in[0];
  out_ = out[0];
  err_ = err[0];
  ::fcntl(out_, F_SETFL, ::fcntl(out_, F_GETFL) | O_NONBLOCK);
  ::fcntl(err_, F_SETFL, ::fcntl(err_, F_GETFL) | O_NONBLOCK);
  out_buf_.clear();
  err_buf_.clear();
  err_tail_.clear();
  served_.clear();

  const Clock::Instant deadline = wait_clock().after(seconds);
  std::string line;
  const Read read = read_line(&line, ms_until(deadline), kHelloLimit);
  auto refuse = [&](const std::string& why) {
    std::string ended = end(0);
    std::string tail;
    for (const auto& l : err_tail_) tail += (tail.empty() ? "" : " | ") + l;
    close_fds();
    throw StepProcessError(why + (ended.empty() ? "" : " (" + ended + ")") +
                           (tail.empty() ? "" : "; its stderr: " + tail));
  };
  if (read == Read::kTimeout) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", seconds);
    refuse(std::string("did not answer the handshake within ") + shown +
           " s (plugins.handshake_timeout): its first line on stdout must be the hello of docs/process-steps.md");
  }
  if (read == Read::kClosed) refuse("exited before its handshake");
  if (read == Read::kTooLong) refuse("wrote more than 1 MiB on stdout without a newline before its handshake");
  std::optional<Json> hello = try_parse_json(line);
  if (!hello || !hello->is_object() || !string_member(*hello, "ductwork") ||
      *string_member(*hello, "ductwork") != "steps") {
    refuse("answered the handshake with " + json_text(line.substr(0, 80)) +
           ", not a hello ({\"ductwork\": \"steps\", \"protocol\": 1, \"steps\": [...]})");
  }
  const Json* protocol = hello->find("protocol");
  if (!protocol || !protocol->is_int() || protocol->as_int() != kProcessStepProtocol) {
    refuse("speaks protocol " + (protocol ? protocol->dump() : std::string("(none)")) + "; this host speaks protocol " +
           std::to_string(kProcessStepProtocol));
  }
  const Json* steps = hello->find("steps");
  if (!steps || !steps->is_array()) refuse("its hello lists no steps");
  for (const Json& s : steps->as_array()) {
    if (s.is_string()) served_.push_back(s.as_string());
  }
  std::string missing;
  for (const auto& step : manifest_->steps) {
    if (std::find(served_.begin(), served_.end(), step) == served_.end()) missing += (missing.empty() ? "" : ", ") + step;
  }
  if (!missing.empty()) refuse("does not serve " + missing + ", which the manifest lists (its hello says it serves " +
                               steps->dump() + ")");
}

void StepProcess::log_stderr(bool all) {
  for (;;) {
    size_t nl = err_buf_.find('\n');
    std::string line;
    if (nl != std::string::npos) {
      line = err_buf_.substr(0, nl);
      err_buf_.erase(0, nl + 1);
    } else if (err_buf_.size() >= kStderrLineLimit || (all && !err_buf_.empty())) {
      line = err_buf_.substr(0, kStderrLineLimit);
      err_buf_.erase(0, line.size());
    } else {
      return;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    err_tail_.push_back(line);
    if (err_tail_.size() > kStderrTail) err_tail_.pop_front();
    Json fields = Json::object({{"plugin", manifest_->name}, {"step_pid", static_cast<int64_t>(pid_)}, {"line", line}});
    if (current_) {
      fields["pipeline"] = current_->pipeline;
      fields["step"] = current_->klass;
      fields["run_id"] = current_->run_id;
      fields["job_id"] = current_->job_id;
    }
    try {
      logger_.info("Step process stderr", fields);
    } catch (...) {
    }
  }
}

StepProcess::Read StepProcess::read_line(std::string* line, int wait_ms, size_t max_bytes) {
  const Clock::Instant deadline = wait_clock().after(wait_ms < 0 ? 0 : wait_ms / 1000.0);
  for (;;) {
    size_t nl = out_buf_.find('\n');
    if (nl != std::string::npos) {
      line->assign(out_buf_, 0, nl);
      out_buf_.erase(0, nl + 1);
      if (!line->empty() && line->back() == '\r') line->pop_back();
      return Read::kLine;
    }
    if (out_buf_.size() > max_bytes) return Read::kTooLong;
    if (out_ < 0) return Read::kClosed;
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    const int timeout = wait_ms < 0 ? -1 : ms_until(deadline);
    int n = ::poll(fds, err_ >= 0 ? 2 : 1, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return Read::kTimeout;
    char buf[65536];
    if (err_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = ::read(err_, buf, sizeof buf);
      if (got > 0) {
        err_buf_.append(buf, static_cast<size_t>(got));
        log_stderr(false);
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        log_stderr(true);
        ::close(err_);
        err_ = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = ::read(out_, buf, sizeof buf);
      if (got > 0) {
        out_buf_.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        ::close(out_);
        out_ = -1;
      }
    }
  }
}

bool StepProcess::send(const std::string& message) {
  size_t sent = 0;
  while (sent < message.size()) {
    ssize_t n = ::send(in_, message.data() + sent, message.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string StepProcess::end(int grace_ms) {
  if (pid_ <= 0) return std::string();
  int status = 0;
  pid_t got = 0;
  const Clock::Instant deadline = wait_clock().after(grace_ms / 1000.0);
  while ((got = ::waitpid(pid_, &status, WNOHANG)) == 0 && wait_clock().monotonic() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (got == 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
  } else {
    ::kill(-pid_, SIGKILL);  // what it left running in its group
  }
  pid_ = -1;
  if (err_ >= 0) {
    // What it wrote last on stderr (a traceback) is still in the pipe.
    char buf[65536];
    ssize_t n;
    while ((n = ::read(err_, buf, sizeof buf)) > 0) err_buf_.append(buf, static_cast<size_t>(n));
    log_stderr(true);
  }
  return got > 0 ? how_it_ended(status) : std::string();
}

void StepProcess::close_stdin() {
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

void StepProcess::stop(double seconds) {
  close_stdin();
  if (pid_ > 0) end(static_cast<int>(seconds * 1000));
  close_fds();
}

StepOutcome StepProcess::died(const ClaimedJob& job, const std::string& klass, const std::string& what, bool crashed) {
  const pid_t pid = pid_;
  // A process that closed its stdout is on its way out: it may say how.
  std::string ended = end(klass == "ductwork::StepProcessDied" ? 1000 : 0);
  close_fds();
  std::string tail;
  for (const auto& l : err_tail_) tail += (tail.empty() ? "" : "\n") + l;
  StepOutcome outcome;
  outcome.crashed = crashed;
  outcome.error = make_error_info(
      klass, "step process " + manifest_->name + " (" + manifest_->command.front() + ", pid " + std::to_string(pid) +
                 ") " + what + " during step " + job.klass + (ended.empty() ? "" : " (" + ended + ")"),
      tail);
  return outcome;
}

StepOutcome StepProcess::execute(const ClaimedJob& job, StepCallScope& scope, std::atomic<int>* pid_slot) {
  struct Current {
    StepProcess& p;
    std::atomic<int>* slot;
    ~Current() {
      p.current_ = nullptr;
      if (slot) slot->store(0);
    }
  } current{*this, pid_slot};
  current_ = &job;
  if (pid_slot) pid_slot->store(pid_);
  // The step's own name: a definition may qualify it (`plugin:Step`).
  std::string step = job.klass;
  const std::string prefix = manifest_->name + ":";
  if (step.rfind(prefix, 0) == 0 &&
      std::find(manifest_->steps.begin(), manifest_->steps.end(), step.substr(prefix.size())) != manifest_->steps.end()) {
    step.erase(0, prefix.size());
  }
  std::string request = "{\"type\":\"execute\",\"step\":" + json_text(step) + ",\"args\":" + job.args_json +
                        ",\"run_id\":" + json_text(job.run_id) + ",\"idempotency_key\":" + json_text(job.idempotency_key) +
                        ",\"pipeline\":" + json_text(job.pipeline) + ",\"retry_count\":" + std::to_string(job.retry_count) +
                        ",\"crash_count\":" + std::to_string(job.crash_count) + "}\n";
  if (!send(request)) return died(job, "ductwork::StepProcessDied", "was gone before it was sent the step", true);
  const dw_host_api* host = host_api();
  const size_t max_line = scope.max_value_bytes + kRequestSlack;
  std::string line;
  for (;;) {
    Read read = read_line(&line, -1, max_line);
    if (read == Read::kClosed) return died(job, "ductwork::StepProcessDied", "closed its stdout", true);
    if (read == Read::kTooLong) {
      return died(job, "ductwork::OutputTooLarge",
                  "wrote a line longer than job_worker.max_output_bytes (" + std::to_string(scope.max_value_bytes) +
                      ") plus 1 MiB; it was ended",
                  false);
    }
    if (read != Read::kLine) continue;
    std::optional<Json> message = try_parse_json(line);
    const std::string* type = message && message->is_object() ? string_member(*message, "type") : nullptr;
    if (!type) {
      return died(job, "ductwork::ProtocolError",
                  "wrote " + json_text(line.substr(0, 80)) + " on stdout, not a protocol message; it was ended", true);
    }
    if (*type == "output") {
      const Json* value = message->find("value");
      StepOutcome outcome;
      std::string text = value ? value->dump() : std::string("null");
      if (auto problem = json_limit_problem(text, scope.max_value_bytes, "the output of step " + job.klass)) {
        outcome.error = make_error_info(text.size() > scope.max_value_bytes ? "ductwork::OutputTooLarge"
                                                                            : "ductwork::InvalidOutput",
                                        *problem);
        return outcome;
      }
      outcome.ok = true;
      outcome.output_json = std::move(text);
      return outcome;
    }
    if (*type == "error") {
      StepOutcome outcome;
      const std::string* klass = string_member(*message, "class");
      const std::string* text = string_member(*message, "message");
      const std::string* backtrace = string_member(*message, "backtrace");
      const Json* retryable = message->find("retryable");
      outcome.retryable = !(retryable && retryable->is_bool() && !retryable->as_bool());
      std::string shown = text && !text->empty() ? *text : "step " + job.klass + " failed with no message";
      outcome.error = make_error_info(klass && !klass->empty() ? *klass : "ductwork::StepError", shown,
                                      backtrace ? *backtrace : std::string());
      return outcome;
    }
    std::string reply;
    if (*type == "log") {
      const std::string* text = string_member(*message, "message");
      const std::string* level = string_member(*message, "level");
      host->log(&scope, abi_log_level(level ? *level : "info"), text ? text->c_str() : "");
      continue;  // no reply
    } else if (*type == "cancelled") {
      reply = std::string("{\"type\":\"cancelled\",\"cancelled\":") + (host->is_cancelled(&scope) ? "true" : "false") + "}";
    } else if (*type == "context_get") {
      const std::string* key = string_member(*message, "key");
      char* value = nullptr;
      char* error = nullptr;
      int rc = host->context_get(&scope, key ? key->c_str() : nullptr, &value, &error);
      if (rc == DW_CONTEXT_OK) {
        reply = std::string("{\"type\":\"context\",\"found\":true,\"value\":") + value + "}";
      } else if (rc == DW_CONTEXT_NOT_FOUND) {
        reply = "{\"type\":\"context\",\"found\":false}";
      } else {
        reply = "{\"type\":\"context\",\"error\":" + json_text(error ? error : "context_get failed") + "}";
      }
      host->free_string(value);
      host->free_string(error);
    } else if (*type == "context_set") {
      const std::string* key = string_member(*message, "key");
      const Json* value = message->find("value");
      const Json* overwrite = message->find("overwrite");
      const std::string value_text = value ? value->dump() : std::string("null");
      char* error = nullptr;
      int rc = host->context_set(&scope, key ? key->c_str() : nullptr, value_text.c_str(),
                                 overwrite && overwrite->is_bool() && overwrite->as_bool() ? 1 : 0, &error);
      if (rc == DW_CONTEXT_OK) {
        reply = "{\"type\":\"context_set\",\"ok\":true}";
      } else {
        reply = std::string("{\"type\":\"context_set\",\"ok\":false,\"already_set\":") +
                (rc == DW_CONTEXT_ALREADY_SET ? "true" : "false") + ",\"error\":" +
                json_text(error ? error : "context_set failed") + "}";
      }
      host->free_string(error);
    } else {
      return died(job, "ductwork::ProtocolError",
                  "sent a message of unknown type " + json_text(*type) + "; it was ended", true);
    }
    if (!send(reply + "\n")) return died(job, "ductwork::StepProcessDied", "stopped reading its stdin", true);
  }
}

}  // namespace ductwork
