#include "process/crash_report.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "plugin/frame_symbols.h"

namespace ductwork {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr std::size_t kIdBytes = 320;  // an execution id, or a hook's label

// Set up before any crash, read by the handler (nothing is allocated there).
char report_path[4096];
thread_local char running_execution[kIdBytes];

void write_text(int fd, const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    ssize_t n = ::write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

void on_fatal_signal(int sig) {
  // SA_RESETHAND has restored the default action already.
  int fd = ::open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    write_text(fd, running_execution);
    write_text(fd, "\n");
    void* frames[64];
    int count = ::backtrace(frames, 64);
    // Frame 0 is this handler, frame 1 the signal trampoline.
    if (count > 2) ::backtrace_symbols_fd(frames + 2, count - 2, fd);
    ::close(fd);
  }
  // Delivered when the handler returns, with the default action: the
  // process dies of `sig`, as it would have without this handler.
  ::raise(sig);
}

}  // namespace

void install_crash_report(const std::string& folder) {
  std::snprintf(report_path, sizeof report_path, "%s/%ld.crash", folder.c_str(), static_cast<long>(::getpid()));
  // backtrace() loads its unwinder on first use; do that now, not in the
  // handler.
  void* warm[2];
  (void)::backtrace(warm, 2);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int sig : kFatalSignals) ::sigaction(sig, &action, nullptr);
}

void set_running_execution(const std::string& execution_id) {
  std::size_t n = std::min(execution_id.size(), kIdBytes - 1);
  std::memcpy(running_execution, execution_id.data(), n);
  running_execution[n] = '\0';
}

void write_exit_note(const std::string& folder, const std::string& text) {
  if (folder.empty()) return;
  std::ofstream out(folder + "/" + std::to_string(::getpid()) + ".exit", std::ios::trunc);
  std::string line = text;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  out << line << '\n';
}

std::optional<std::string> take_exit_note(const std::string& folder, pid_t pid) {
  if (folder.empty()) return std::nullopt;
  const std::string path = folder + "/" + std::to_string(pid) + ".exit";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  in.close();
  std::remove(path.c_str());
  return line;
}

bool crashed_in_hook(const CrashReport& report) { return report.execution_id.rfind("hook ", 0) == 0; }

std::optional<CrashReport> take_crash_report(const std::string& folder, pid_t pid,
                                             const std::string& plugins_directory) {
  if (folder.empty()) return std::nullopt;
  std::string path = folder + "/" + std::to_string(pid) + ".crash";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  CrashReport report;
  std::getline(in, report.execution_id);
  std::map<std::string, std::unique_ptr<FrameSymbols>> plugins;  // private copy -> its symbols
  for (std::string frame; std::getline(in, frame);) {
    // A plugin's frames name the private copy it was loaded from
    // (…/ductwork-plugin-XXXXXX/libx.so): show the installed file instead.
    std::size_t copy = frame.find("/ductwork-plugin-");
    std::size_t open = frame.find('(');
    if (copy != std::string::npos && open != std::string::npos && copy < open) {
      std::string loaded_from = frame.substr(0, open);
      auto& symbols = plugins[loaded_from];
      if (!symbols) {
        std::string installed = plugins_directory + "/" + std::filesystem::path(loaded_from).filename().string();
        symbols = std::make_unique<FrameSymbols>(loaded_from, installed);
      }
      frame = symbols->symbolise(frame);
    }
    if (!report.backtrace.empty()) report.backtrace += '\n';
    report.backtrace += frame;
  }
  in.close();
  std::remove(path.c_str());
  return report;
}

}  // namespace ductwork
