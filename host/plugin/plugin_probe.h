#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "plugin/plugin_registry.h"

namespace ductwork {

// A plugin that could not be loaded at all: it hung in its initialisation
// past plugins.load_timeout, ended the process, or crashed it. what() names
// the plugin file and what happened.
class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by probe_plugins when `should_stop` asked it to give up, also when
// the probe died of the SIGINT or SIGTERM that asked it (a Ctrl-C reaches
// the whole process group: the probe often dies before the next poll).
class PluginProbeInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The probe was ended by something that is no plugin's fault: a resource
// limit it passed (SIGXFSZ from `ulimit -f`, SIGXCPU from `ulimit -t`),
// named with its value, or a SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to it
// alone. A runtime failure (exit 1), not bad input.
class PluginProbeStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads the plugins of `directory` in a separate process (`executable
// __probe-plugins`), so no plugin code runs in this one, and adopts what
// they export (names, versions, steps, pipelines, refusals) into `into` as
// metadata (PluginRegistry::adopt). Bounded by `timeout_seconds`; the probe
// dies with this process. `should_stop` is polled every 100 ms (e.g. a
// pending SIGTERM) and, when it returns true, the probe is killed and
// PluginProbeInterrupted thrown. Throws PluginLoadError naming the plugin
// that hung, exited or crashed, and PluginProbeStopped when the probe was
// ended by a limit or a signal instead. Each file the probe begins to load
// is logged (debug, "Plugin probe loading").
// Each process step manifest's command is started and must answer its
// handshake within `handshake_seconds` (plugins.handshake_timeout), or the
// manifest is refused.
void probe_plugins(const std::string& executable, const std::string& directory, double timeout_seconds,
                   double handshake_seconds, PluginRegistry& into, Logger& logger,
                   const std::function<bool()>& should_stop = {});

// The checked plugins as one line of text (a child's --plugins-checked),
// and back; parse_checked_plugins throws std::invalid_argument naming what
// is malformed.
std::string checked_plugins_text(const std::vector<CheckedPlugin>& checked);
std::vector<CheckedPlugin> parse_checked_plugins(const std::string& text);

// The probe's side (`ductwork __probe-plugins DIRECTORY FD PARENT_PID
// HANDSHAKE_SECONDS`):
// loads every plugin in this process and writes, on `out_fd`, one JSON
// line {"loading": PATH} before each file and a last line
// {"done": true, "plugins": [...], "refusals": [...]}. Returns the exit code.
int run_plugin_probe(const std::string& directory, int out_fd, long parent_pid, double handshake_seconds);

}  // namespace ductwork
