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

}  // namespace ductwork
