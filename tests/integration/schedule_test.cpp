// Cron schedules (issue 39 item 1) through the real binary, both dialects:
// ticks missed while no host ran are caught up once each by three hosts
// racing, after a host died inside its tick decision (a fault checkpoint
// before the commit) leaving nothing half-written; each pipeline runs with
// its tick as its argument; `ductwork schedules [--json]` shows next and
// last ticks; a schedule that breaks a rule is refused by validate naming
// the line.
#include <ctime>

#include "flow_support.h"
#include "headless_browser.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

// The database's form of the instant `seconds_ago` seconds before now.
std::string db_time_ago(int seconds_ago) {
  const std::time_t t = std::time(nullptr) - seconds_ago;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S.000000", &tm);
  return text;
}

const char* const kMinutely =
    "pipeline: Every\nsteps:\n  - start: Echo\nschedules:\n  - cron: '* * * * *'\n    name: minutely\n"
    "    catch_up: all\n    catch_up_limit: 5\n    args: ['{{scheduled_at}}']\n";

TEST(ScheduleTest, MissedTicksAreCaughtUpOnceByThreeHostsAfterOneDiedMidTick) {
  Workspace ws;
  ws.define("every.yml", kMinutely);
  ASSERT_EQ(ws.run({"migrate"}).exit_code, 0);
  // The schedule was first seen half an hour ago, and no host ran since.
  ws.sql("INSERT INTO schedules (pipeline_klass, name, first_seen_at) VALUES ('Every', 'minutely', '" +
         db_time_ago(1800) + "')");
  {
    testsupport::ProcessOptions options = ws.process_options(60);
    options.env = {{"DUCTWORK_FAULT", "schedule_tick_before_commit:exit"}};
    testsupport::Subprocess dying(ws.command({"start"}), options);
    const ProcessResult died = dying.wait(60);
    EXPECT_EQ(died.exit_code, 1) << died.describe();
    ::kill(-dying.pid(), SIGKILL);  // its workers, if it forked any
  }
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM pipelines"), 0) << "the dead host's tick left no pipeline";
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM schedule_ticks"), 0) << "nor a tick row";
  auto b = start_named_host(ws, "machine-b");
  auto c = start_named_host(ws, "machine-c");
  auto d = start_named_host(ws, "machine-d");
  ASSERT_TRUE(eventually(60, [&] {
    return sql_number(ws, "SELECT count(*) FROM pipelines WHERE status = 'completed'") >= 5 &&
           sql_number(ws, "SELECT count(*) FROM pipelines WHERE status <> 'completed'") == 0;
  })) << ws.sql("SELECT status, count(*) FROM pipelines GROUP BY status") << b->stderr_so_far();
  for (auto* host : {b.get(), c.get(), d.get()}) ::kill(host->pid(), SIGTERM);
  for (auto* host : {b.get(), c.get(), d.get()}) host->wait(60);
  // Five missed ticks, and one more per minute that passed meanwhile.
  const int64_t pipelines = sql_number(ws, "SELECT count(*) FROM pipelines");
  EXPECT_GE(pipelines, 5);
  EXPECT_LE(pipelines, 7);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM schedule_ticks WHERE outcome = 'triggered'"), pipelines);
  EXPECT_EQ(sql_number(ws, "SELECT count(DISTINCT tick_at) FROM schedule_ticks"), pipelines);
  // Each pipeline ran with its own tick, a minute apart.
  std::istringstream rows(ws.sql("SELECT tick_at, pipeline_id FROM schedule_ticks ORDER BY tick_at"));
  std::string previous;
  for (std::string line; std::getline(rows, line);) {
    const std::string tick = line.substr(0, line.find('|'));
    const std::string id = line.substr(line.find('|') + 1);
    const json step = ws.status(id)["runs"][0]["steps"][0];
    const std::string rfc = tick.substr(0, 10) + "T" + tick.substr(11, 8) + "Z";
    EXPECT_EQ(step["input"], json::array({rfc})) << id;
    EXPECT_EQ(step["output"], rfc) << id;  // Echo gives back its one argument
    const json by = ws.status(id)["scheduled_by"];
    EXPECT_EQ(by["schedule"], "minutely") << id;
    EXPECT_EQ(by["tick"], tick) << id;
    EXPECT_EQ(tick.substr(17, 2), "00") << tick;
    EXPECT_LT(previous, tick);
    previous = tick;
  }
  const ProcessResult listed = ws.run({"schedules", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.describe();
  const json doc = parse_json(listed.out, "schedules --json");
  ASSERT_EQ(doc["schedules"].size(), 1u) << listed.out;
  const json& s = doc["schedules"][0];
  EXPECT_EQ(s["pipeline"], "Every");
  EXPECT_EQ(s["name"], "minutely");
  EXPECT_EQ(s["cron"], "* * * * *");
  EXPECT_EQ(s["timezone"], "UTC");
  EXPECT_EQ(s["catch_up"], "all");
  EXPECT_EQ(s["catch_up_limit"], 5);
  EXPECT_EQ(s["overlap"], "allow");
  EXPECT_EQ(s["paused"], false);
  EXPECT_EQ(s["last_outcome"], "triggered");
  EXPECT_EQ(s["last_tick"], previous.substr(0, 10) + "T" + previous.substr(11, 8) + "Z");
  EXPECT_TRUE(s["last_pipeline_id"].is_string());
  ASSERT_TRUE(s["next_tick"].is_string());
  EXPECT_GT(s["next_tick"].get<std::string>(), s["last_tick"].get<std::string>());
  const ProcessResult text = ws.run({"schedules"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("minutely"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("triggered " + s["last_pipeline_id"].get<std::string>()), std::string::npos) << text.out;
}

TEST(ScheduleTest, ABrokenScheduleIsRefusedNamingTheLineAndNothingRuns) {
  Workspace ws;
  ws.define("every.yml",
            "pipeline: Every\nsteps:\n  - start: Echo\nschedules:\n  - cron: '0 25 * * *'\n    timezone: UTC\n");
  const ProcessResult validate = ws.run({"validate"});
  EXPECT_EQ(validate.exit_code, 2) << validate.describe();
  EXPECT_NE((validate.out + validate.err).find("every.yml:5: pipeline Every: cron '0 25 * * *': the hour field has 25, outside 0-23"),
            std::string::npos)
      << validate.describe();
  ws.define("every.yml", "pipeline: Every\nsteps:\n  - start: Echo\nschedules:\n  - cron: '@daily'\n"
                         "    timezone: Moon/Tranquility\n");
  const ProcessResult zone = ws.run({"validate"});
  EXPECT_EQ(zone.exit_code, 2) << zone.describe();
  EXPECT_NE((zone.out + zone.err).find("every.yml:5: pipeline Every: unknown time zone 'Moon/Tranquility'"), std::string::npos)
      << zone.describe();
  const ProcessResult none = ws.run({"schedules"});
  EXPECT_EQ(none.exit_code, 0) << none.describe();
  EXPECT_NE(none.out.find("no schedules"), std::string::npos) << none.out;
  EXPECT_EQ(ws.run({"schedules", "extra"}).exit_code, 2);
}

// GET /api/v1/schedules says what `schedules --json` says, and the
// dashboard's overview shows each schedule with its next and last ticks
// (headless Chromium, screenshot kept).
TEST(ScheduleTest, TheApiAndTheDashboardShowEachScheduleWithItsTicks) {
  Workspace ws(http_options());
  ws.define("every.yml", kMinutely);
  ws.define("nightly.yml",
            "pipeline: Nightly\nsteps:\n  - start: Echo\nschedules:\n  - cron: '30 2 * * *'\n"
            "    timezone: Europe/Berlin\n    name: nightly\n    overlap: skip\n");
  ASSERT_EQ(ws.run({"migrate"}).exit_code, 0);
  ws.sql("INSERT INTO schedules (pipeline_klass, name, first_seen_at) VALUES ('Every', 'minutely', '" +
         db_time_ago(600) + "')");
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty());
  ASSERT_TRUE(eventually(60, [&] {
    return sql_number(ws, "SELECT count(*) FROM pipelines WHERE status = 'completed'") >= 5;
  })) << ws.sql("SELECT status, count(*) FROM pipelines GROUP BY status");
  const Reply reply = get(host.address(), "/api/v1/schedules");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json api = json::parse(reply.body);
  ASSERT_EQ(api["schedules"].size(), 2u) << reply.body;
  const json& every = api["schedules"][0];
  const json& nightly = api["schedules"][1];
  EXPECT_EQ(every["pipeline"], "Every");
  EXPECT_EQ(every["last_outcome"], "triggered");
  EXPECT_EQ(nightly["pipeline"], "Nightly");
  EXPECT_EQ(nightly["timezone"], "Europe/Berlin");
  EXPECT_EQ(nightly["overlap"], "skip");
  EXPECT_TRUE(nightly["last_tick"].is_null()) << "a new schedule fires nothing from before it was seen";
  ASSERT_TRUE(nightly["next_tick"].is_string());
  // 02:30 in Berlin is 01:30Z in winter, 00:30Z in summer.
  const std::string next = nightly["next_tick"].get<std::string>();
  EXPECT_TRUE(next.substr(11) == "01:30:00Z" || next.substr(11) == "00:30:00Z") << next;
  EXPECT_EQ(get(host.address(), "/api/v1/schedules", "").status, 401);
  const ProcessResult cli = ws.run({"schedules", "--json"});
  ASSERT_EQ(cli.exit_code, 0);
  json from_cli = json::parse(cli.out);
  json from_api = api;
  // A tick may have fired between the two reads: compare what stays.
  for (json* doc : {&from_cli, &from_api}) {
    for (json& s : (*doc)["schedules"]) {
      for (const char* moving : {"last_tick", "last_pipeline_id", "next_tick"}) s.erase(moving);
    }
  }
  EXPECT_EQ(from_cli, from_api);

  auto dashboard = serve_open_dashboard(ws, http_options());
  ASSERT_FALSE(dashboard->address().empty()) << dashboard->process().stdout_so_far();
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + dashboard->address() + "/ui"));
  const std::string rows = table_rows(browser, "schedules");
  std::istringstream lines(rows);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(first.substr(0, first.find('|', first.find('|', first.find('|') + 1) + 1)), "Every|minutely|* * * * *")
      << rows;
  EXPECT_NE(first.find("|triggered"), std::string::npos) << rows;
  EXPECT_EQ(second, "Nightly|nightly|30 2 * * *|Europe/Berlin|" + next + "|-|-") << rows;
  keep_screenshot(browser, "schedules-overview");
  host.stop();
}

}  // namespace
}  // namespace ductwork::it
