// Flow gates under the retention policy (issue 37, SPEC §16-17) through
// the real binary, both dialects: a pruner pass forgets the rows of
// concurrency and rate gates that have held nothing for longer than its
// interval, keeps a gate that holds a slot and one whose window still
// remembers a start, and a key named again after its row went is limited
// as before.
#include <signal.h>

#include "flow_support.h"

namespace ductwork::it {
namespace {

// Gate rows of the keys k0..k4 (concurrency, limit 1 per key).
const char* const kShortKeys =
    "SELECT count(*) FROM flow_gates WHERE gate NOT LIKE 'rate %' AND gate NOT LIKE '%long%'";

// Seconds from the Rated step's start to the database's clock now.
double seconds_since_rated_start(const Workspace& ws) {
  const std::string at = ws.sql(
      "SELECT MIN(a.started_at) FROM attempts a JOIN executions e ON e.id = a.execution_id JOIN jobs j "
      "ON j.id = e.job_id JOIN steps s ON s.id = j.step_id JOIN runs r ON r.id = s.run_id WHERE r.pipeline_klass = "
      "'Rated'");
  const std::string now = ws.sql(ws.pg() ? "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', "
                                           "'YYYY-MM-DD HH24:MI:SS.US')"
                                         : "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')");
  return db_seconds(now.substr(0, now.find('\n'))) - db_seconds(at.substr(0, at.find('\n')));
}

TEST(RetentionGatesTest, IdleGatesAreForgottenBusyOnesKeptAndAKeyNamedAgainIsLimitedAsBefore) {
  ConfigOptions options;
  options.job_workers = 4;
  options.extra = "forking: none\nsupervisor: {polling_timeout: 0.1}\n"
                  "retention: {completed: 3600, interval: 0.2}\n";
  Workspace ws(options);
  ws.define("keyed.yml", "pipeline: Keyed\nsteps:\n  - start: Sleep\n    concurrency: {limit: 1, key: /1}\n");
  ws.define("rated.yml", "pipeline: Rated\nsteps:\n  - start: Sleep\n    rate_limit: {limit: 2, per: 8, key: /1}\n");
  trigger_keys(ws, "Keyed", 5, 1, 10);
  ws.trigger("Keyed", {"6000", "\"long\""});
  ws.trigger("Rated", {"10", "\"r\""});
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(90));

  // The five short keys ran and their rows went; the long one still runs.
  ASSERT_TRUE(eventually(30, [&] {
    return sql_number(ws, "SELECT count(*) FROM pipelines WHERE status = 'completed'") == 6 &&
           sql_number(ws, kShortKeys) == 0;
  })) << ws.sql("SELECT gate, in_progress, idle_since FROM flow_gates") << host.stdout_so_far();
  // The long step sleeps 6 s. While its execution holds the slot, its
  // gate's row is there and counts it (one statement: one view of both; on
  // a machine slow enough to get here later, the row may rightly be gone).
  const std::string held = ws.sql(
      "SELECT (SELECT count(*) FROM executions WHERE gate LIKE '%long%' AND completed_at IS NULL), "
      "COALESCE((SELECT in_progress FROM flow_gates WHERE gate LIKE '%long%'), -1)");
  EXPECT_TRUE(held == "1|1\n" || held == "0|0\n" || held == "0|-1\n")
      << "an execution holds the slot of a gate whose row is gone or does not count it: " << held
      << ws.sql("SELECT gate, in_progress, idle_since FROM flow_gates");
  // The rate gate remembers its start for 8 s: its row stays as long.
  const bool rated_row = sql_number(ws, "SELECT count(*) FROM flow_gates WHERE gate LIKE 'rate %'") == 1;
  const double since = seconds_since_rated_start(ws);
  if (since < 7.5) {
    EXPECT_TRUE(rated_row) << "forgotten " << since << " s into its 8 s window";
  }

  // k0 named again: a new row, and still one at a time.
  trigger_keys(ws, "Keyed", 1, 2, 300);
  ASSERT_TRUE(eventually(30, [&] {
    return sql_number(ws, "SELECT count(*) FROM pipelines WHERE status = 'completed'") == 8;
  })) << host.stdout_so_far();
  const std::string k0 = ws.sql(
      "SELECT a.started_at, a.completed_at FROM attempts a JOIN executions e ON e.id = a.execution_id JOIN jobs j "
      "ON j.id = e.job_id WHERE CAST(j.input_args AS TEXT) LIKE '%300%' ORDER BY a.started_at");
  std::istringstream lines(k0);
  std::string first, second;
  ASSERT_TRUE(std::getline(lines, first) && std::getline(lines, second)) << k0;
  const std::string first_end = first.substr(first.find('|') + 1), second_start = second.substr(0, second.find('|'));
  EXPECT_LE(db_seconds(first_end), db_seconds(second_start)) << "two of k0 in flight at once:\n" << k0;

  // Once the long step ended and the window passed, nothing is left.
  EXPECT_TRUE(eventually(30, [&] { return sql_number(ws, "SELECT count(*) FROM flow_gates") == 0; }))
      << ws.sql("SELECT gate, in_progress, idle_since FROM flow_gates");
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM pipelines WHERE status = 'completed'"), 9);
  host.signal(SIGTERM);
  ProcessResult r = host.wait(30);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

}  // namespace
}  // namespace ductwork::it
