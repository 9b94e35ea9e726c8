#include "harness.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <ctime>
#include <regex>
#include <sstream>

namespace ductwork::it {
namespace {

// Every table whose rows a command could add or change.
const char* const kTables[] = {"pipelines", "runs",    "branches", "branch_links", "steps", "jobs",
                               "executions", "results", "transitions", "tuples", "schema_migrations"};

}  // namespace

std::ostream& operator<<(std::ostream& os, const DbSnapshot& s) {
  if (!s.exists) return os << "no database";
  // The rows as well (the start of them): a change in place shows there.
  constexpr size_t kShown = 4000;
  return os << "database{" << s.counts << "}\n"
            << s.rows.substr(0, kShown) << (s.rows.size() > kShown ? "\n(...)" : "");
}

Workspace::Workspace(const ConfigOptions& options) {
  if (testsupport::on_postgresql()) {
    pg_ = std::make_unique<testsupport::PgDatabase>(options.empty_database ? testsupport::PgDatabase::Schema::kEmpty
                                                                           : testsupport::PgDatabase::Schema::kMigrated);
  }
  write_config(options);
}

std::string Workspace::database_yaml() const {
  // One line on either dialect, so line numbers in messages do not move.
  if (pg_) return "database: {adapter: postgresql, url: \"" + pg_->url() + "\"}\n";
  return "database: {path: \"" + db_path() + "\"}\n";
}

void Workspace::write_config(const ConfigOptions& options) {
  database_url_ = options.database_url;
  std::ostringstream y;
  std::string database = options.database_url.empty()
                             ? database_yaml()
                             : "database: {adapter: postgresql, url: \"" + options.database_url + "\"}\n";
  y << "database:\n  " << database.substr(std::string("database: ").size())
    << "plugins:\n  directory: \"" << options.plugins_directory << "\"\n"
    << "definitions:\n  directory: \"" << definitions_dir() << "\"\n"
    << "pipelines: \"*\"\n"
    << "job_worker: {count: " << options.job_workers << ", polling_timeout: 0.05, retry_delay: 0.05"
    << (options.job_worker_extra.empty() ? "" : ", " + options.job_worker_extra) << "}\n"
    << "pipeline_advancer: {count: 2, polling_timeout: 0.05}\n"
    << options.extra;
  write_config_text(y.str());
}

void Workspace::write_config_text(const std::string& text) { tmp_.write("ductwork.yml", text); }

std::string Workspace::define(const std::string& file_name, const std::string& yaml) {
  return tmp_.write("pipelines/" + file_name, yaml);
}

std::vector<std::string> Workspace::command(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{DUCTWORK_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("-c");
  argv.push_back(config_path());
  return argv;
}

testsupport::ProcessOptions Workspace::process_options(double timeout_seconds) const {
  testsupport::ProcessOptions options;
  options.cwd = dir();
  // The workspace's file alone configures the host: the process runner
  // passes none of the DUCTWORK_ overrides of the environment the tests run
  // in (a test sets what it needs through options.env).
  // Compiled definitions are cached in the workspace, not the user's home.
  options.env.emplace_back("XDG_CACHE_HOME", dir() + "/.cache");
  options.timeout_seconds = timeout_seconds;
  return options;
}

ProcessResult Workspace::run(const std::vector<std::string>& args, double timeout_seconds) const {
  return testsupport::run_process(command(args), process_options(timeout_seconds));
}

ProcessResult Workspace::run_with_env(const std::vector<std::string>& args,
                                     const std::vector<std::pair<std::string, std::string>>& env,
                                     double timeout_seconds) const {
  testsupport::ProcessOptions options = process_options(timeout_seconds);
  options.env = env;
  return testsupport::run_process(command(args), options);
}

ProcessResult Workspace::run_raw(const std::vector<std::string>& args, double timeout_seconds) const {
  std::vector<std::string> argv{DUCTWORK_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return testsupport::run_process(argv, process_options(timeout_seconds));
}

std::string Workspace::trigger(const std::string& pipeline, const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"trigger", pipeline};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run(argv);
  EXPECT_EQ(r.exit_code, 0) << "trigger " << pipeline << ": " << r.describe();
  EXPECT_TRUE(is_single_uuid_line(r.out)) << "trigger stdout must be exactly the id and a newline, got: [" << r.out
                                          << "]";
  if (r.exit_code != 0 || r.out.empty()) return "";
  return r.out.substr(0, r.out.find('\n'));
}

void Workspace::drain(double timeout_seconds) const {
  ProcessResult r = run({"start", "--drain"}, timeout_seconds);
  EXPECT_EQ(r.exit_code, 0) << "start --drain: " << r.describe();
  EXPECT_FALSE(r.timed_out) << "start --drain did not finish";
}

json Workspace::status(const std::string& id) const {
  ProcessResult r = run({"status", id, "--json"});
  EXPECT_EQ(r.exit_code, 0) << "status " << id << ": " << r.describe();
  if (r.exit_code != 0) return nullptr;
  return parse_json(r.out, "status --json");
}

json Workspace::list(const std::vector<std::string>& extra) const {
  std::vector<std::string> argv{"list", "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessResult r = run(argv);
  EXPECT_EQ(r.exit_code, 0) << "list: " << r.describe();
  if (r.exit_code != 0) return nullptr;
  return parse_json(r.out, "list --json");
}

DbSnapshot Workspace::snapshot() const {
  DbSnapshot snap;
  if (pg_) {
    snap.exists = pg_->has_table("schema_migrations");
    if (!snap.exists) return snap;
    for (const char* table : kTables) {
      snap.counts += std::string(snap.counts.empty() ? "" : " ") + table + "=" +
                     pg_->scalar(std::string("SELECT count(*) FROM ") + table);
    }
    snap.rows = every_row();
    return snap;
  }
  snap.exists = testsupport::file_exists(db_path());
  if (!snap.exists) return snap;
  std::string sql = "SELECT ";
  bool first = true;
  for (const char* table : kTables) {
    sql += std::string(first ? "" : " || ' ' || ") + "'" + table + "=' || (SELECT count(*) FROM " + table + ")";
    first = false;
  }
  snap.counts = this->sql(sql + ";");
  snap.rows = every_row();
  return snap;
}

std::string Workspace::every_row() const {
  // Each row as one text value behind its table's name, the lot sorted, so
  // two readings of the same contents are the same text. Tables are read
  // from the catalog: one a migration adds is covered without a change here.
  std::string select;
  auto add_table = [&](const std::string& table, const std::string& row_text) {
    select += (select.empty() ? "" : " UNION ALL ") + std::string("SELECT '") + table + "|' || " + row_text +
              " AS r FROM " + table + " x";
  };
  if (pg_ || !database_url_.empty()) {
    std::stringstream tables(
        sql("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE' AND table_name <> 'processes' ORDER BY 1"));
    for (std::string table; std::getline(tables, table);) add_table(table, "x::text");
  } else {
    // SQLite has no row-as-text: each column quoted (quote() marks NULL,
    // text, numbers and blobs apart), joined by commas.
    std::stringstream columns(
        sql("SELECT m.name || '|' || p.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'processes' ORDER BY m.name, p.cid;"));
    std::string table, row_text;
    for (std::string line; std::getline(columns, line);) {
      const std::string name = line.substr(0, line.find('|'));
      const std::string column = "\"" + line.substr(line.find('|') + 1) + "\"";
      if (name != table) {
        if (!table.empty()) add_table(table, row_text);
        table = name;
        row_text.clear();
      }
      row_text += (row_text.empty() ? "" : " || ',' || ") + std::string("quote(x.") + column + ")";
    }
    if (!table.empty()) add_table(table, row_text);
  }
  EXPECT_FALSE(select.empty()) << "the database has no tables";
  if (select.empty()) return "";
  return sql(select + " ORDER BY 1;");
}

bool Workspace::database_created() const {
  return pg_ ? pg_->has_table("schema_migrations") : testsupport::file_exists(db_path());
}

std::string Workspace::sql(const std::string& query) const {
  if (!database_url_.empty()) return testsupport::pg_query(database_url_, query);
  if (pg_) return pg_->query(query);
  if (!testsupport::file_exists(db_path())) return "";
  static const std::string sqlite3 = find_on_path("sqlite3");
  EXPECT_FALSE(sqlite3.empty()) << "sqlite3 is installed by packaging/install-deps.sh";
  ProcessResult r = testsupport::run_process({sqlite3, "-batch", db_path(), query});
  EXPECT_EQ(r.exit_code, 0) << "sqlite3: " << r.describe();
  return r.out;
}

void log_queue_rows(Workspace& ws) {
  ProcessResult migrated = ws.run({"migrate"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.describe();
  const char* table = "CREATE TABLE queued_log (execution_id TEXT, started_at TEXT, created_at TEXT, priority INTEGER); ";
  ws.sql(std::string(table) +
         (testsupport::on_postgresql()
              ? "CREATE FUNCTION log_queued() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO queued_log "
                "VALUES (NEW.execution_id, NEW.started_at, NEW.created_at, NEW.priority); RETURN NEW; END $$; "
                "CREATE TRIGGER log_queued AFTER INSERT ON availabilities FOR EACH ROW EXECUTE FUNCTION log_queued();"
              : "CREATE TRIGGER log_queued AFTER INSERT ON availabilities BEGIN INSERT INTO queued_log VALUES "
                "(NEW.execution_id, NEW.started_at, NEW.created_at, NEW.priority); END;"));
}

std::string dangling_references(const Workspace& ws) {
  struct Reference {
    const char* table;
    const char* column;
    const char* parent;
  };
  static const Reference kReferences[] = {
      {"runs", "pipeline_id", "pipelines"},         {"branches", "run_id", "runs"},
      {"branch_links", "parent_branch_id", "branches"}, {"branch_links", "child_branch_id", "branches"},
      {"steps", "run_id", "runs"},                  {"steps", "branch_id", "branches"},
      {"steps", "source_step_id", "steps"},         {"jobs", "step_id", "steps"},
      {"executions", "job_id", "jobs"},             {"availabilities", "execution_id", "executions"},
      {"transitions", "branch_id", "branches"},     {"transitions", "in_step_id", "steps"},
      {"transitions", "out_step_id", "steps"},      {"advancements", "transition_id", "transitions"},
      {"tuples", "run_id", "runs"},                 {"fan_in_arrivals", "barrier_branch_id", "branches"},
      {"fan_in_arrivals", "branch_id", "branches"}, {"fan_in_arrivals", "step_id", "steps"},
      {"on_halt_calls", "run_id", "runs"}};
  std::string query;
  for (const Reference& r : kReferences) {
    if (!query.empty()) query += " UNION ALL ";
    query += std::string("SELECT '") + r.table + "." + r.column + " -> " + r.parent + ": ' || COUNT(*) FROM " +
             r.table + " WHERE " + r.column + " IS NOT NULL AND " + r.column + " NOT IN (SELECT id FROM " +
             r.parent + ")";
  }
  const std::string counts = ws.sql(query);
  std::string dangling;
  size_t start = 0;
  while (start < counts.size()) {
    size_t end = counts.find('\n', start);
    if (end == std::string::npos) end = counts.size();
    const std::string line = counts.substr(start, end - start);
    if (!line.empty() && line.compare(line.size() - 3, 3, ": 0") != 0) dangling += line + "\n";
    start = end + 1;
  }
  return dangling;
}

json parse_json(const std::string& text, const std::string& what) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    ADD_FAILURE() << what << " did not print valid JSON: [" << text << "]";
    return nullptr;
  }
  return doc;
}

const char* const kApprovalDefinition =
    "pipeline: Approval\n"
    "steps:\n"
    "  - start: Echo\n"
    "  - divide:\n"
    "    - [Inc, {dampen: Sum}]\n"
    "    - [Inc, Inc]\n"
    "  - combine: Sum\n";

std::string chain_definition(const std::string& name, const std::vector<std::string>& steps) {
  std::string text = "pipeline: " + name + "\nsteps:\n";
  for (size_t i = 0; i < steps.size(); ++i) text += std::string(i == 0 ? "  - start: " : "  - chain: ") + steps[i] + "\n";
  return text;
}

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string d;
  while (std::getline(dirs, d, ':')) {
    std::string candidate = (d.empty() ? "." : d) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool is_single_uuid_line(const std::string& text) {
  static const std::regex uuid_line("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$");
  return std::regex_match(text, uuid_line);
}

bool a_later_run_completes(const Workspace& ws, const std::string& pipeline, const std::vector<std::string>& args,
                           double seconds) {
  const std::string id = ws.trigger(pipeline, args);
  if (id.empty()) return false;
  return eventually(seconds, [&] {
    json doc = ws.status(id);
    return doc.is_object() && doc["status"] == "completed";
  });
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

int64_t process_rows(const Workspace& ws) {
  if (ws.pg()) {
    if (!ws.pg()->has_table("processes")) return -1;
    return std::stoll(ws.pg()->scalar("SELECT count(*) FROM processes"));
  }
  std::string sqlite = find_on_path("sqlite3");
  if (sqlite.empty()) return -1;
  if (!ws.database_created()) return -1;
  auto r = testsupport::run_process({sqlite, ws.db_path(), "SELECT COUNT(*) FROM processes"});
  try {
    return std::stoll(r.out);
  } catch (const std::exception&) {
    return -1;  // not migrated yet
  }
}

void with_fixture_plugin(Workspace& ws, const std::string& library, ConfigOptions options) {
  namespace fs = std::filesystem;
  std::string plugins = ws.file("plugins");
  fs::create_directories(plugins);
  fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/" + library, plugins + "/" + library,
                fs::copy_options::overwrite_existing);
  fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins + "/libductwork_testkit.so",
                fs::copy_options::overwrite_existing);
  options.plugins_directory = plugins;
  ws.write_config(options);
}

std::string python_steps_script() {
  return std::string(DUCTWORK_SOURCE_DIR) + "/tests/fixtures/process_steps/py_steps.py";
}

int step_processes_of(const Workspace& ws) {
  namespace fs = std::filesystem;
  const std::string mark = "DWTEST_WORKSPACE=" + ws.dir();
  int n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at = 0; at < env.size();) {
      size_t end = env.find('\0', at);
      if (end == std::string::npos) end = env.size();
      if (env.compare(at, end - at, mark) == 0) {
        ++n;
        break;
      }
      at = end + 1;
    }
  }
  return n;
}

std::string python_sdk_dir() { return std::string(DUCTWORK_SOURCE_DIR) + "/sdk/python"; }

void with_python_steps(Workspace& ws, ConfigOptions options, const std::string& manifest_extra) {
  namespace fs = std::filesystem;
  std::string plugins = ws.file("plugins");
  fs::create_directories(plugins);
  fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins + "/libductwork_testkit.so",
                fs::copy_options::overwrite_existing);
  testsupport::write_file(
      plugins + "/py.steps.yml",
      "command: [python3, -u, \"" + python_steps_script() + "\"]\n"
      "environment: {PYTHONPATH: \"" + python_sdk_dir() + "\", PYTHONDONTWRITEBYTECODE: \"1\", DWTEST_WORKSPACE: \"" + ws.dir() + "\"}\n"
      "steps: [PyInc, PyDouble, PySum, PyRange, PyFail, PyFatal, PyEcho, PyContext, PyFailOnce, PyWaitForCancel,\n"
      "        PySleepPid, PyIgnoreTimeout]\n" + manifest_extra);
  options.plugins_directory = plugins;
  ws.write_config(options);
}

double db_seconds(const std::string& text) {
  std::tm tm{};
  double fraction = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    ADD_FAILURE() << "not a database time: '" << text << "'";
    return 0;
  }
  if (text[static_cast<size_t>(consumed)] == '.') fraction = std::atof(text.c_str() + consumed);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + fraction;
}

}  // namespace ductwork::it
