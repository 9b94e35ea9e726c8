// SPEC §12's /metrics through the real binary: Prometheus text that
// `promtool check metrics` accepts, counters that never go back when a
// child is killed and restarted, the database's gauges, and a threaded
// host's counts served by its HTTP process.
#include <signal.h>

#include "http_client.h"

namespace ductwork::it {
namespace {

// The value of the sample `series` (name and labels exactly as exposed) in
// a /metrics text; -1 when absent.
double sample(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// `promtool check metrics` on a scrape: the Prometheus project's own parser
// and linter. Empty when it passes, else what it said.
std::string promtool_problems(const Workspace& ws, const std::string& text) {
  const std::string promtool = find_on_path("promtool");
  if (promtool.empty()) return "promtool is not installed (packaging/install-deps.sh installs prometheus)";
  const std::string path = ws.write("scrape.txt", text);
  ProcessResult r = testsupport::run_process({"/bin/sh", "-c", promtool + " check metrics < " + path});
  return r.exit_code == 0 ? "" : r.describe() + "\n" + r.out + r.err;
}

TEST(MetricsTest, CountersParseAndNeverGoBackWhenAChildIsKilled) {
  Workspace ws(http_options());
  define_echo(ws);
  constexpr int kPipelines = 5;
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  const std::string& at = host.address();
  std::vector<std::string> ids;
  for (int i = 0; i < kPipelines; ++i) ids.push_back(ws.trigger("EchoTwice", {std::to_string(i)}));
  auto scrape = [&] { return get(at, "/metrics").body; };
  const std::string steps = "ductwork_steps_total{pipeline=\"EchoTwice\",step=\"Echo\",result=\"success\"}";
  const std::string finished = "ductwork_pipelines_finished_total{pipeline=\"EchoTwice\",status=\"completed\"}";
  // A run's end is counted after its last step's commit, by whichever loop
  // advanced it: both counts are waited for.
  ASSERT_TRUE(eventually(30, [&] {
    const std::string now = scrape();
    return sample(now, steps) == 2 * kPipelines && sample(now, finished) == kPipelines;
  })) << scrape();
  std::string text = scrape();
  EXPECT_EQ(promtool_problems(ws, text), "");
  EXPECT_EQ(sample(text, finished), kPipelines);
  EXPECT_EQ(sample(text, "ductwork_pipelines_triggered_total{pipeline=\"EchoTwice\"}"), kPipelines);
  EXPECT_EQ(sample(text, "ductwork_step_duration_seconds_count{pipeline=\"EchoTwice\",step=\"Echo\"}"), 2 * kPipelines);
  EXPECT_EQ(sample(text, "ductwork_step_duration_seconds_bucket{pipeline=\"EchoTwice\",step=\"Echo\",le=\"+Inf\"}"),
            2 * kPipelines);
  EXPECT_EQ(sample(text, "ductwork_step_queue_latency_seconds_count{pipeline=\"EchoTwice\"}"), 2 * kPipelines);
  EXPECT_GE(sample(text, "ductwork_advance_latency_seconds_count{pipeline=\"EchoTwice\"}"), kPipelines);
  EXPECT_EQ(sample(text, "ductwork_processes{role=\"supervisor\"}"), 1);
  EXPECT_EQ(sample(text, "ductwork_jobs_ready{pipeline=\"EchoTwice\"}"), -1) << "nothing is due: no series";
  EXPECT_NE(text.find("ductwork_build_info{version=\""), std::string::npos);

  // Kill the worker child: its counts stay in the total, and the restart is counted.
  json processes = get(at, "/api/v1/processes").doc();
  pid_t worker = 0;
  for (const auto& p : processes["processes"]) {
    if (p["role"] == "worker") worker = p["pid"].get<pid_t>();
  }
  ASSERT_GT(worker, 0) << processes.dump();
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  const std::string restarts = "ductwork_process_restarts_total{role=\"worker\",cause=\"signal\"}";
  ASSERT_TRUE(eventually(30, [&] { return sample(scrape(), restarts) == 1; })) << scrape();
  EXPECT_EQ(sample(scrape(), steps), 2 * kPipelines);
  // The restarted worker adds to the same series.
  std::string more = ws.trigger("EchoTwice", {"9"});
  EXPECT_TRUE(eventually(30, [&] { return sample(scrape(), steps) == 2 * kPipelines + 2; })) << scrape();
  EXPECT_EQ(promtool_problems(ws, scrape()), "");
  EXPECT_EQ(get(at, "/metrics", "").status, 401);
}

TEST(MetricsTest, GaugesShowTheQueueAndAThreadedHostCountsThroughItsServer) {
  Workspace ws(http_options());
  define_echo(ws);
  for (int i = 0; i < 3; ++i) ws.trigger("EchoTwice", {std::to_string(i)});
  {
    // Nothing runs them: three jobs due.
    Served serve(ws, {"serve"});
    ASSERT_FALSE(serve.address().empty());
    std::string text = get(serve.address(), "/metrics").body;
    EXPECT_EQ(sample(text, "ductwork_jobs_ready{pipeline=\"EchoTwice\"}"), 3) << text;
    EXPECT_EQ(sample(text, "ductwork_pipelines_triggered_total{pipeline=\"EchoTwice\"}"), 3) << text;
    EXPECT_EQ(promtool_problems(ws, text), "");
  }
  Served host(ws, {"start"}, {{"DUCTWORK_FORKING", "none"}});
  ASSERT_FALSE(host.address().empty());
  const std::string steps = "ductwork_steps_total{pipeline=\"EchoTwice\",step=\"Echo\",result=\"success\"}";
  EXPECT_TRUE(eventually(30, [&] { return sample(get(host.address(), "/metrics").body, steps) == 6; }))
      << get(host.address(), "/metrics").body;
}

}  // namespace
}  // namespace ductwork::it
