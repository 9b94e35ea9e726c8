#include "cli/server_shell.h"

#include <Poco/Util/Option.h>
#include <Poco/Util/OptionException.h>
#include <Poco/Util/OptionSet.h>
#include <Poco/Util/ServerApplication.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>

namespace ductwork::cli {
namespace {

// `--pidfile PATH`: the process id, written when the command starts and
// removed when it ends. A file naming another live process is refused, so
// two hosts are not started on one pidfile by mistake.
class PidFile {
 public:
  static void write(const std::string& path) {
    const long me = static_cast<long>(::getpid());
    if (long other = read_pid(path); other > 0 && other != me && (::kill(other, 0) == 0 || errno == EPERM)) {
      throw BadInput("--pidfile " + path + ": names process " + std::to_string(other) +
                     ", which is running (remove the file if that process is not a ductwork host)");
    }
    // A temporary file of this process's own, renamed over the pidfile: a
    // reader sees the old content or the new, and two hosts started at
    // once never write into one file.
    const std::string temporary = path + "." + std::to_string(me) + ".tmp";
    std::FILE* file = std::fopen(temporary.c_str(), "w");
    if (!file) throw BadInput("--pidfile " + path + ": cannot write it: " + std::strerror(errno));
    const bool written = std::fprintf(file, "%ld\n", me) > 0;
    if (std::fclose(file) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      std::remove(temporary.c_str());
      throw BadInput("--pidfile " + path + ": cannot write it: " + std::strerror(error));
    }
    path_ = path;
  }

  // Only a file that still names this process is removed (a host started
  // since may have taken it over).
  static void remove() {
    if (path_.empty()) return;
    if (read_pid(path_) == static_cast<long>(::getpid())) std::remove(path_.c_str());
    path_.clear();
  }

 private:
  static long read_pid(const std::string& path) {
    std::ifstream in(path);
    long pid = 0;
    return in >> pid ? pid : 0;
  }

  static inline std::string path_;
};

class ServerShell : public Poco::Util::ServerApplication {
 public:
  ServerShell(std::string name, const ServerCommand& command) : command_(command) {
    args_.command = std::move(name);
    // Poco's Application installs handlers that turn SIGSEGV, SIGBUS,
    // SIGILL and SIGSYS into abort() outside its own try blocks. A crash
    // must keep its own signal: the crash report and the supervisor's
    // "Child exited" name it.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGSYS}) ::signal(sig, SIG_DFL);
  }

  int run_command(int argc, char** argv) {
    try {
      init(argc, argv);
    } catch (const Poco::Util::OptionException& e) {
      throw BadInput(describe(e));
    }
    const int rc = ServerApplication::run();
    if (failure_) std::rethrow_exception(failure_);
    return rc;
  }

 protected:
  // Poco's own --daemon, --umask and --pidfile are not offered (see
  // docs/decisions.md); --pidfile is this file's.
  void defineOptions(Poco::Util::OptionSet& set) override {
    set.addOption(Poco::Util::Option("config", "c", "configuration file").argument("CONFIG"));
    set.addOption(Poco::Util::Option("pidfile", "", "write the process id to this file").argument("PATH"));
    for (const std::string& flag : command_.flags) set.addOption(Poco::Util::Option(flag, ""));
    for (const std::string& option : command_.options) set.addOption(Poco::Util::Option(option, "").argument("VALUE"));
  }

  void handleOption(const std::string& name, const std::string& value) override {
    ServerApplication::handleOption(name, value);
    if (name == "config") {
      args_.config_path = value;
    } else if (name == "pidfile") {
      pidfile_ = value;
    } else if (std::find(command_.flags.begin(), command_.flags.end(), name) != command_.flags.end()) {
      args_.flags.push_back(name);
    } else {
      args_.options.emplace_back(name, value);
    }
  }

  // Poco's Application::run() logs and swallows what main() throws; it is
  // kept and rethrown by run_command instead.
  int main(const std::vector<std::string>& positionals) override {
    try {
      args_.positionals = positionals;
      if (pidfile_) PidFile::write(*pidfile_);
      const int rc = command_.body(args_, [this] { waitForTerminationRequest(); });
      PidFile::remove();
      return rc;
    } catch (...) {
      PidFile::remove();
      failure_ = std::current_exception();
      return kExitFailure;
    }
  }

 private:
  std::string describe(const Poco::Util::OptionException& e) const {
    const std::string& what = e.message();
    const std::string& command = args_.command;
    if (dynamic_cast<const Poco::Util::UnknownOptionException*>(&e)) {
      return "unknown option " + std::string(what.size() == 1 ? "-" : "--") + what + " for '" + command + "'";
    }
    if (dynamic_cast<const Poco::Util::MissingArgumentException*>(&e)) {
      return "--" + what.substr(0, what.find(' ')) + " needs a value";
    }
    if (dynamic_cast<const Poco::Util::UnexpectedArgumentException*>(&e)) {
      return "--" + what.substr(0, what.find('=')) + " takes no value (got --" + what + ")";
    }
    if (dynamic_cast<const Poco::Util::DuplicateOptionException*>(&e)) {
      return "--" + what + " given more than once";
    }
    if (dynamic_cast<const Poco::Util::AmbiguousOptionException*>(&e)) {
      return "ambiguous option --" + what + " for '" + command + "'";
    }
    return e.displayText();
  }

  const ServerCommand& command_;
  Args args_;
  std::optional<std::string> pidfile_;
  std::exception_ptr failure_;
};

}  // namespace

int run_server_command(int argc, char** argv, const ServerCommand& command) {
  // Poco reads argv[0] as the program and the rest as options and
  // positionals: the command's name is taken out.
  std::vector<char*> words{argv[0]};
  for (int i = 2; i < argc; ++i) words.push_back(argv[i]);
  ServerShell shell(argv[1], command);
  return shell.run_command(static_cast<int>(words.size()), words.data());
}

void remove_pidfile() { PidFile::remove(); }

}  // namespace ductwork::cli
