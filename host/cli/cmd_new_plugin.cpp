// ductwork new-plugin NAME [DIR]: writes a buildable plugin folder (a step,
// its test with <ductwork/testing.hpp>, a pipeline file, CMake for the
// installed SDK) from the template embedded at build time (sdk/template).
// With --python: a folder of Python process steps (a manifest, the steps,
// their unittest with ductwork_steps.testing, a pipeline; no build) from
// sdk/template-python.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "cli/cli.h"
#include "cli/plugin_template.h"

namespace ductwork::cli {
namespace {

namespace fs = std::filesystem;

// C++ keywords (and std) a plugin name would collide with as a namespace.
constexpr std::array kKeywords = {
    "alignas", "alignof", "asm",     "auto",     "bool",      "break",    "case",     "catch",   "char",
    "class",   "const",   "continue", "default", "delete",    "do",       "double",   "else",    "enum",
    "export",  "extern",  "false",   "float",    "for",       "friend",   "goto",     "if",      "inline",
    "int",     "long",    "namespace", "new",    "operator",  "private",  "public",   "return",  "static",
    "struct",  "switch",  "template", "this",    "throw",     "true",     "try",      "typedef", "union",
    "unsigned", "using",  "virtual", "void",     "volatile",  "while",    "std"};

void check_name(const std::string& name, bool python) {
  bool valid = !name.empty() && name.size() <= 64 && name[0] >= 'a' && name[0] <= 'z' &&
               std::all_of(name.begin(), name.end(),
                           [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
  if (!valid) {
    throw BadInput("plugin name \"" + name +
                   "\" must start with a lower-case letter and hold only a-z, 0-9 and _ (at most 64): " +
                   std::string(python ? "it names the Python module NAME_steps and the manifest"
                           : "it becomes the library name, the CMake target and a C++ namespace"));
  }
  if (python) return;  // NAME_steps is never a Python keyword
  auto is = [&](const char* word) { return name == word; };
  if (std::any_of(kKeywords.begin(), kKeywords.end(), is)) {
    throw BadInput("plugin name \"" + name + "\" is a C++ keyword; it becomes a C++ namespace");
  }
}

// order_emails -> OrderEmails
std::string camel_case(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

int cmd_new_plugin(const Args& args) {
  if (args.positionals.empty() || args.positionals.size() > 2) {
    throw BadInput("usage: ductwork new-plugin NAME [DIR] [--python]");
  }
  const bool python = args.flag("python");
  const std::vector<TemplateFile>& files = python ? python_template_files() : plugin_template_files();
  const std::string& name = args.positionals[0];
  check_name(name, python);
  const std::string camel = camel_case(name);
  const fs::path target = fs::absolute(args.positionals.size() == 2 ? fs::path(args.positionals[1]) : fs::path(name));

  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) throw BadInput(target.string() + " exists and is not a folder");
    if (!fs::is_empty(target, ec)) throw BadInput(target.string() + " exists and is not empty; nothing written");
  }
  const fs::path parent = target.parent_path();
  if (!fs::is_directory(parent, ec)) throw BadInput("folder " + parent.string() + " does not exist");

  // Everything is written into a sibling folder first and renamed into
  // place at the end: an error leaves nothing half-written behind.
  std::string staging_name = ".";  // appended piecewise: GCC 12 -O3 reports a false -Wrestrict on "." + s
  staging_name += target.filename().string();
  staging_name += ".new-plugin-";
  staging_name += std::to_string(::getpid());
  const fs::path staging = parent / staging_name;
  fs::remove_all(staging, ec);
  try {
    for (const TemplateFile& file : files) {
      fs::path path = staging / replace_all(file.path, "@NAME@", name);
      fs::create_directories(path.parent_path());
      std::ofstream out(path, std::ios::binary);
      out << replace_all(replace_all(file.text, "@NAME@", name), "@CAMEL@", camel);
      out.close();
      if (!out) throw std::runtime_error("could not write " + path.string());
    }
    if (fs::exists(target)) fs::remove(target);  // the empty folder it replaces
    fs::rename(staging, target);
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }

  std::printf("created %s %s in %s\n", python ? "Python steps" : "plugin", name.c_str(), target.string().c_str());
  for (const TemplateFile& file : files) {
    std::printf("  %s\n", replace_all(file.path, "@NAME@", name).c_str());
  }
  // The first command: the Python folder has its test and nothing to build.
  const char* check = python ? "python3 -m unittest discover -s test"
                             : "cmake -S . -B build && cmake --build build && ctest --test-dir build";
  std::printf(
      "next:\n  cd %s\n  %s\n"
      "  ductwork migrate -c ductwork.yml && ductwork trigger %s '\"Ada\"' -c ductwork.yml\n"
      "  ductwork start --drain -c ductwork.yml\n",
      target.string().c_str(), check, camel.c_str());
  return kExitOk;
}

}  // namespace ductwork::cli
