#include <algorithm>

#include "cli/cli.h"

namespace ductwork::cli {

bool Args::flag(const std::string& name) const {
  return std::find(flags.begin(), flags.end(), name) != flags.end();
}

const std::string* Args::option(const std::string& name) const {
  for (const auto& [k, v] : options) {
    if (k == name) return &v;
  }
  return nullptr;
}

Args parse_args(int argc, char** argv, const std::vector<std::string>& flags,
                const std::vector<std::string>& options) {
  Args args;
  args.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    // Short forms of the options that have them.
    if (a == "-p") a = "--pid";
    if (a == "-V") a = "--verbose";
    if (a == "-c" || a == "--config") {
      if (i + 1 >= argc) throw BadInput(a + " needs a configuration file path");
      args.config_path = argv[++i];
    } else if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::string name = a.substr(2);
      std::string value;
      bool inline_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
      }
      if (std::find(flags.begin(), flags.end(), name) != flags.end() && !inline_value) {
        args.flags.push_back(name);
      } else if (std::find(options.begin(), options.end(), name) != options.end()) {
        if (!inline_value) {
          if (i + 1 >= argc) throw BadInput("--" + name + " needs a value");
          value = argv[++i];
        }
        args.options.emplace_back(name, value);
      } else {
        throw BadInput("unknown option --" + name + " for '" + args.command + "'");
      }
    } else if (a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9')) {
      throw BadInput("unknown option " + a + " for '" + args.command + "'");
    } else {
      args.positionals.push_back(a);
    }
  }
  return args;
}

}  // namespace ductwork::cli
