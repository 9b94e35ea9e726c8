#pragma once
// The integration tests' workspace: a fresh temporary directory with its own
// ductwork.yml, definition folder and SQLite database, and helpers that run
// the real `ductwork` binary (DUCTWORK_BINARY) in it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <memory>

#include "process_runner.h"
#include "test_database.h"

namespace ductwork::it {

using json = nlohmann::json;
using testsupport::ProcessResult;

// Knobs of the generated ductwork.yml.
struct ConfigOptions {
  std::string plugins_directory = DUCTWORK_PLUGIN_DIR;
  // Appended inside the job_worker flow map, e.g. "max_retry: 1".
  std::string job_worker_extra;
  // Appended at the end of the file verbatim.
  std::string extra;
  // A PostgreSQL URL to use instead of the workspace's own database (a
  // test that runs its own server).
  std::string database_url;
  // Job worker threads per pipeline.
  int job_workers = 2;
  // On PostgreSQL, a database no migration ran on (as a new SQLite file),
  // for tests about what creates or migrates the database; otherwise a copy
  // of the cluster's migrated template (testsupport::PgDatabase).
  bool empty_database = false;
};

// `options` for a test about what creates or migrates the database
// (ConfigOptions::empty_database).
inline ConfigOptions empty_database(ConfigOptions options = {}) {
  options.empty_database = true;
  return options;
}

// A reading of the database: whether the file exists and, when it does, the
// row counts of its main tables ("pipelines=1 runs=1 ...") and every row of
// every table but `processes` (whose heartbeats move while a host runs), so
// that "nothing written" also catches a row changed in place (issue 41,
// item 18: comparing counts alone let an update through).
struct DbSnapshot {
  bool exists = false;
  std::string counts;
  std::string rows;  // "table|row as text" lines, sorted
  bool operator==(const DbSnapshot& o) const { return exists == o.exists && counts == o.counts && rows == o.rows; }
};
std::ostream& operator<<(std::ostream& os, const DbSnapshot& s);

// On PostgreSQL (testsupport::on_postgresql()) the database is a fresh one on
// the test cluster instead of the file at db_path().
class Workspace {
 public:
  explicit Workspace(const ConfigOptions& options = {});
  // The `database:` section for a ductwork.yml, as one line.
  std::string database_yaml() const;
  // How the host names the database in messages: the file, or the URL.
  std::string database_name() const { return !database_url_.empty() ? database_url_ : pg_ ? pg_->url() : db_path(); }
  // The schema folder of the dialect in use.
  std::string schema_dir() const {
    return std::string(DUCTWORK_SOURCE_DIR) + (pg_ ? "/schema/postgresql" : "/schema/sqlite");
  }
  // The PostgreSQL database, or null on SQLite.
  const testsupport::PgDatabase* pg() const { return pg_.get(); }

  const std::string& dir() const { return tmp_.path(); }
  std::string config_path() const { return tmp_.file("ductwork.yml"); }
  std::string db_path() const { return tmp_.file("ductwork.sqlite3"); }
  std::string definitions_dir() const { return tmp_.file("pipelines"); }
  std::string file(const std::string& name) const { return tmp_.file(name); }

  // (Re)writes ductwork.yml.
  void write_config(const ConfigOptions& options);
  // Writes the text as ductwork.yml verbatim.
  void write_config_text(const std::string& text);
  // Writes pipelines/<file_name>; returns its path.
  std::string define(const std::string& file_name, const std::string& yaml);
  // Writes a file relative to the workspace; returns its path.
  std::string write(const std::string& name, const std::string& text) const { return tmp_.write(name, text); }

  // `ductwork ARGS... -c ductwork.yml`, run in the workspace.
  ProcessResult run(const std::vector<std::string>& args, double timeout_seconds = 30) const;
  // run() with these environment variables set (e.g. DUCTWORK_LOG_FORMAT).
  ProcessResult run_with_env(const std::vector<std::string>& args,
                             const std::vector<std::pair<std::string, std::string>>& env,
                             double timeout_seconds = 30) const;
  // `ductwork ARGS...` without adding -c, run in the workspace.
  ProcessResult run_raw(const std::vector<std::string>& args, double timeout_seconds = 30) const;
  // The argv of run(): for a background testsupport::Subprocess.
  std::vector<std::string> command(const std::vector<std::string>& args) const;
  testsupport::ProcessOptions process_options(double timeout_seconds = 30) const;

  // `trigger NAME ARGS...`: expects exit 0 and one id line; returns the id
  // ("" after recording a failure).
  std::string trigger(const std::string& pipeline, const std::vector<std::string>& args = {}) const;
  // `start --drain`: expects exit 0.
  void drain(double timeout_seconds = 30) const;
  // `status ID --json`: expects exit 0 and parses stdout (null on failure).
  json status(const std::string& id) const;
  // `list --json EXTRA...`: expects exit 0 and parses stdout (null on failure).
  json list(const std::vector<std::string>& extra = {}) const;

  DbSnapshot snapshot() const;
  // Every row of every table but `processes`, as text, sorted (DbSnapshot::rows).
  std::string every_row() const;
  // Whether the database was created (SQLite: the file exists; PostgreSQL:
  // the schema was migrated into it).
  bool database_created() const;
  // Every row of `query` on the workspace database, as the sqlite3 shell
  // prints it (columns joined by '|', one line per row); "" when there is no
  // database yet.
  std::string sql(const std::string& query) const;

 private:
  testsupport::TempDir tmp_;
  std::unique_ptr<testsupport::PgDatabase> pg_;
  std::string database_url_;  // ConfigOptions::database_url, when given
};

// Parses text as JSON, recording a test failure (and returning null) when it
// is not.
json parse_json(const std::string& text, const std::string& what);

// A definition file: `pipeline: NAME` and steps [start: first, chain: rest...].
std::string chain_definition(const std::string& name, const std::vector<std::string>& steps);

// Pipeline Approval: Echo, then two branches — one parks at a `dampen` on
// Sum until a resume, the other runs Inc, Inc — combined by Sum.
extern const char* const kApprovalDefinition;

// The absolute path of an executable found on PATH, or "".
std::string find_on_path(const std::string& program);

// Polls `ready` every 20 ms for up to `seconds`; returns its last answer.
template <typename F>
bool eventually(double seconds, F ready) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

// For negative checks against a running host ("nothing advanced after the
// cancel"): triggers a fresh run of `pipeline` and waits up to `seconds`
// for it to complete. Its completion proves the host's worker claimed and
// its advancers advanced after this moment, so anything that would wrongly
// have happened by then has had its chance (instead of a fixed sleep).
bool a_later_run_completes(const Workspace& ws, const std::string& pipeline, const std::vector<std::string>& args,
                           double seconds = 30);

// How many times `needle` occurs in `text` (e.g. a log message in a log).
size_t count_of(const std::string& text, const std::string& needle);

// Rows in the workspace database's processes table; -1 when there is no
// database (or it is not migrated yet).
int64_t process_rows(const Workspace& ws);

// The rows of the workspace database that name a row that is not there,
// for each relationship of the data model (SPEC §2), one line
// "table.column -> parent: N" per relationship with any; "" when none.
// Neither dialect enforces most of them (SQLite never enforced foreign
// keys; PostgreSQL's migration 031 dropped the per-step ones), so the
// suites check them here.
std::string dangling_references(const Workspace& ws);

// Migrates the workspace's database and keeps, from then on, a copy of
// every queue row (`availabilities`) as it is written, in the table
// `queued_log` (execution_id, started_at = when the job is due, created_at,
// priority): a job without gates leaves the queue when it is taken, so a
// test of what was queued reads the log.
void log_queue_rows(Workspace& ws);

// Rewrites the workspace's configuration (`options`) with a plugins folder
// of its own holding the testkit and the fixture plugin `library` (e.g.
// "libstubborn.so": StubbornSleep, a step that never looks at its
// cancellation flag).
void with_fixture_plugin(Workspace& ws, const std::string& library, ConfigOptions options);
// The same with the Python process steps of
// tests/fixtures/process_steps/py_steps.py (PyInc, PyFail, ...; SPEC §19)
// beside the testkit: a manifest `py.steps.yml` running it through
// sdk/python. `manifest_extra` is appended to the manifest verbatim.
void with_python_steps(Workspace& ws, ConfigOptions options, const std::string& manifest_extra = "");
// How many processes run with the workspace's mark in their environment
// (the step processes with_python_steps' manifest starts; the mark is
// DWTEST_WORKSPACE=<ws.dir()>).
int step_processes_of(const Workspace& ws);
// The Python fixture's path, and the SDK's folder (for PYTHONPATH).
std::string python_steps_script();
std::string python_sdk_dir();

// A database time ('YYYY-MM-DD HH:MM:SS.ffffff', UTC) as seconds since the
// epoch; records a failure and returns 0 for anything else.
double db_seconds(const std::string& text);

// True when stdout is exactly one UUID followed by a newline.
bool is_single_uuid_line(const std::string& text);

}  // namespace ductwork::it
