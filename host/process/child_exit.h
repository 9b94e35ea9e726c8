#pragma once

// How a child of the forking supervisor tells it why it stopped, beyond the
// commands' own 0 / 1 / 2. Internal to `start`: the supervisor's own exit
// code stays one of the documented ones.
namespace ductwork {

// The database is corrupt or not a database (store_error.h,
// is_database_unusable): restarting the child would only fail the same way.
constexpr int kChildExitDatabaseUnusable = 3;
// A plugin the probe accepted did not finish loading in the child within
// plugins.load_timeout (plugin_load_watch.h).
constexpr int kChildExitPluginLoadTimeout = 4;
// A start hook of the child's role failed, crashed or hung (SPEC §15); its
// description is in the child's exit note (crash_report.h). Also how the
// supervisor's own hook child says its hook failed.
constexpr int kChildExitHookFailed = 5;
// The supervisor's hook child ran every hook.
constexpr int kExitHooksRan = 0;

}  // namespace ductwork
