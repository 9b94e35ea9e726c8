#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ductwork {

// A process step manifest (SPEC §19, docs/process-steps.md): a
// `NAME.steps.yml` file in plugins.directory naming a command that serves
// step classes over the process-step protocol. Read once where plugins are
// loaded; every worker that runs one of its steps starts the command.
struct ProcessManifest {
  std::string path;     // the manifest file
  std::string name;     // `name:`, else the file name before ".steps.yml"
  std::string version;  // `version:`, else ""
  // `command:` as written; `executable` is its first word resolved: a word
  // with a '/' against `directory`, a bare one through PATH.
  std::vector<std::string> command;
  std::string executable;
  std::string directory;  // absolute: `directory:` (against the manifest's folder), else that folder
  std::vector<std::pair<std::string, std::string>> environment;  // added to the host's, in file order
  std::vector<std::string> steps;                                 // the step classes it serves
};

// A manifest that cannot be used; what() names the line and the key
// ("line 3: command: expected a list of strings, got a map").
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True for a file name ending in ".steps.yml".
bool is_process_manifest(const std::string& path);

// Reads and checks `path`: every key known, the command a non-empty list of
// strings whose executable exists and may be run, the step names valid and
// each listed once. Throws ManifestError.
ProcessManifest read_process_manifest(const std::string& path);

}  // namespace ductwork
