#include "plugin/plugin_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "util/clock.h"
#include "util/json.h"
#include "util/wait_status.h"

extern char** environ;

namespace ductwork {
namespace {

bool write_all(int fd, const std::string& text) {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

std::vector<std::string> strings_of(const Json& list) {
  std::vector<std::string> out;
  for (const Json& item : list.as_array()) out.push_back(item.as_string());
  return out;
}

Json describe(const LoadedPlugin& plugin) {
  return Json::object({{"path", plugin.path},
                       {"hooks", plugin_hooks_json(plugin)},
                       {"name", plugin.name},
                       {"version", plugin.version},
                       {"abi_version", plugin.abi_version},
                       {"identity", plugin.identity},
                       {"steps", json_strings(plugin.step_names)},
                       {"pipelines", json_strings(plugin.pipelines_json)},
                       {"command", plugin.manifest ? json_strings(plugin.manifest->command) : Json()}});
}

std::unique_ptr<LoadedPlugin> metadata(const Json& doc) {
  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->path = doc.at("path").as_string();
  plugin->name = doc.at("name").as_string();
  plugin->version = doc.at("version").as_string();
  plugin->abi_version = static_cast<uint32_t>(doc.at("abi_version").as_uint());
  plugin->identity = doc.at("identity").as_string();
  plugin->step_names = strings_of(doc.at("steps"));
  plugin->pipelines_json = strings_of(doc.at("pipelines"));
  if (const Json* command = doc.find("command"); command && command->is_array()) {
    auto manifest = std::make_shared<ProcessManifest>();
    manifest->path = plugin->path;
    manifest->name = plugin->name;
    manifest->version = plugin->version;
    manifest->command = strings_of(*command);
    manifest->steps = plugin->step_names;
    plugin->manifest = std::move(manifest);
  }
  for (const Json& hook : doc.at("hooks").as_array()) {
    plugin->hooks.push_back(PluginHook{hook_event_of(hook.at("event").as_string()), hook.at("name").as_string()});
  }
  return plugin;
}

// The running probe: its pid, the read end of its pipe, and what it said.
class Probe {
 public:
  Probe(const std::string& executable, const std::string& directory, double handshake_seconds) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw PluginLoadError(std::string("cannot start the plugin probe: ") + std::strerror(errno));
    read_fd_ = fds[0];
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // The protocol goes to fd 3; what plugins print goes to stderr, never
    // into a command's output.
    posix_spawn_file_actions_adddup2(&actions, fds[1], 3);
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t all_default;
    sigfillset(&all_default);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all_default);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<std::string> args = {executable, "__probe-plugins", directory, "3", std::to_string(::getpid()),
                                     std::to_string(handshake_seconds)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&pid_, executable.c_str(), &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(read_fd_);
      throw PluginLoadError("cannot start the plugin probe " + executable + ": " + std::strerror(rc));
    }
  }
  ~Probe() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    ::close(read_fd_);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  // Reads what is there within `wait_ms`; false at end of output.
  bool read_some(int wait_ms) {
    pollfd p{read_fd_, POLLIN, 0};
    int n = ::poll(&p, 1, wait_ms);
    if (n <= 0) return true;
    char buffer[65536];
    ssize_t got = ::read(read_fd_, buffer, sizeof buffer);
    if (got < 0) return errno == EINTR || errno == EAGAIN;
    if (got == 0) return false;
    text_.append(buffer, static_cast<std::size_t>(got));
    return true;
  }
  // Waits for the probe to end (after its output ended); its wait status,
  // and in `*usage` the resources it used.
  int reap(rusage* usage) {
    int status = 0;
    while (::wait4(pid_, &status, 0, usage) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }
  const std::string& text() const { return text_; }

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  std::string text_;
};

// The last line of `text` that parses as a JSON object (or null), and the
// plugin file it was loading when it stopped.
struct Report {
  Json done;
  std::string loading;
};

Report read_report(const std::string& text) {
  Report report;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a line cut short: the probe died writing it
    std::optional<Json> line = try_parse_json(std::string_view(text).substr(start, end - start));
    start = end + 1;
    if (!line || !line->is_object()) continue;
    const Json* loading = line->find("loading");
    if (loading != nullptr && loading->is_string()) report.loading = loading->as_string();
    const Json* done = line->find("done");
    if (done != nullptr && done->as_bool()) report.done = std::move(*line);
  }
  return report;
}

std::string culprit(const Report& report, const std::string& directory) {
  return report.loading.empty() ? "the plugins of " + directory : "plugin " + report.loading;
}

// Logs each file the probe has begun to load in the lines of `text` from
// `*from` on, and moves `*from` past them.
void log_progress(const std::string& text, std::size_t* from, Logger& logger) {
  for (std::size_t end; (end = text.find('\n', *from)) != std::string::npos; *from = end + 1) {
    std::optional<Json> line = try_parse_json(std::string_view(text).substr(*from, end - *from));
    if (!line || !line->is_object()) continue;
    const Json* loading = line->find("loading");
    if (loading != nullptr && loading->is_string()) {
      logger.debug("Plugin probe loading", Json::object({{"plugin_path", loading->as_string()}}));
    }
  }
}

// A probe that ended of a signal no plugin sends: a resource limit's, or
// one that stops a process from outside. Throws PluginProbeStopped saying
// so; returns for any other end.
void refuse_blame(int status, const rusage& usage, const Report& report, const std::string& directory) {
  if (!WIFSIGNALED(status)) return;
  const int sig = WTERMSIG(status);
  const std::string where = report.loading.empty() ? "the plugins of " + directory : report.loading;
  if (const std::string limit = exceeded_limit(sig, &usage); !limit.empty()) {
    throw PluginProbeStopped("the plugin probe passed " + limit + " while loading " + where + " (" +
                             signal_name(sig) + "): raise the limit; this is no plugin's fault");
  }
  if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
    throw PluginProbeStopped("the plugin probe was stopped by " + signal_name(sig) + " from outside while loading " +
                             where + "; this is no plugin's fault");
  }
}

}  // namespace

void probe_plugins(const std::string& executable, const std::string& directory, double timeout_seconds,
                   double handshake_seconds, PluginRegistry& into, Logger& logger,
                   const std::function<bool()>& should_stop) {
  Probe probe(executable, directory, handshake_seconds);
  const Clock& clock = Clock::system();  // before any store: plugins load first
  const auto deadline = clock.after(timeout_seconds);
  bool open = true;
  std::size_t logged = 0;  // of the probe's output: its "loading" lines logged
  while (open) {
    if (should_stop && should_stop()) throw PluginProbeInterrupted("stopped while loading plugins");
    if (clock.monotonic() >= deadline) {
      Report report = read_report(probe.text());
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", timeout_seconds);
      throw PluginLoadError(culprit(report, directory) + " did not finish loading within " + shown +
                            " s (plugins.load_timeout): its initialisation hangs or is too slow");
    }
    open = probe.read_some(100);
    log_progress(probe.text(), &logged, logger);
  }
  rusage usage{};
  int status = probe.reap(&usage);
  // A Ctrl-C goes to the whole process group: the probe dies of it, and its
  // end is seen before the next poll of `should_stop`. Once it is reaped,
  // a signal sent to the group is pending here too (the kernel signals
  // every member before any of them can finish exiting): a shutdown
  // request, not a plugin's doing.
  if (should_stop && should_stop()) throw PluginProbeInterrupted("stopped while loading plugins");
  Report report = read_report(probe.text());
  if (report.done.is_null()) {
    refuse_blame(status, usage, report, directory);
    throw PluginLoadError(culprit(report, directory) + " ended the process while loading (" + how_it_ended(status) +
                          "); a plugin must not exit or crash in its initialisation");
  }
  try {
    for (const Json& doc : report.done.at("plugins").as_array()) into.adopt(metadata(doc), logger);
    for (const Json& refusal : report.done.at("refusals").as_array()) {
      into.adopt_refusal(refusal.at("path").as_string(), refusal.at("reason").as_string(), logger);
    }
  } catch (const JsonError& e) {
    throw PluginLoadError("the plugin probe's report is malformed: " + std::string(e.what()));
  }
}

std::string checked_plugins_text(const std::vector<CheckedPlugin>& checked) {
  Json list = Json::array();
  for (const auto& plugin : checked) list.push_back(Json::array({plugin.path, plugin.identity}));
  return dump_json_lossy(list);
}

std::vector<CheckedPlugin> parse_checked_plugins(const std::string& text) {
  std::optional<Json> doc = try_parse_json(text);
  std::vector<CheckedPlugin> out;
  try {
    if (!doc || !doc->is_array()) throw JsonError("not a JSON array");
    for (const Json& item : doc->as_array()) {
      if (!item.is_array() || item.as_array().size() != 2) throw JsonError("an entry is not [path, identity]");
      out.push_back(CheckedPlugin{item.as_array()[0].as_string(), item.as_array()[1].as_string()});
    }
  } catch (const JsonError& e) {
    throw std::invalid_argument("the list of checked plugins is malformed: " + std::string(e.what()));
  }
  return out;
}

int run_plugin_probe(const std::string& directory, int out_fd, long parent_pid, double handshake_seconds) {
  // Never outlive the command that asked (a plugin may hang here forever).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != static_cast<pid_t>(parent_pid)) return 1;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  Logger logger(quiet != nullptr ? quiet : stderr, Logger::Format::kJson, LogLevel::kError);
  PluginRegistry registry;
  registry.check_handshakes(handshake_seconds);
  registry.load_directory(directory, logger, [&](const std::string& path) {
    write_all(out_fd, dump_json_lossy(Json::object({{"loading", path}})) + "\n");
  });
  Json plugins = Json::array();
  for (const auto& plugin : registry.plugins()) plugins.push_back(describe(*plugin));
  Json refusals = Json::array();
  for (const auto& [path, reason] : registry.refused()) {
    refusals.push_back(Json::object({{"path", path}, {"reason", reason}}));
  }
  // Lossy: a plugin's name or version that is not UTF-8 must not stop the report.
  bool ok = write_all(out_fd,
                      dump_json_lossy(Json::object({{"done", true}, {"plugins", plugins}, {"refusals", refusals}})) + "\n");
  // Plugins' static destructors are not this probe's business: a plugin
  // that hangs or crashes on unload must not fail the load.
  std::fflush(nullptr);
  ::_exit(ok ? 0 : 1);
}

}  // namespace ductwork
