// SIGHUP (a closed terminal, `systemctl reload`) reloads instead of killing
// the host. Before, it killed the supervisor at once (exit 129) and left a
// stale process row and a step `advancing`.
#include <signal.h>

#include <memory>

#include "harness.h"

namespace ductwork::it {
namespace {

// The step of `id` is running (its job was claimed and not finished).
bool step_running(const Workspace& ws, const std::string& id) {
  json doc = ws.status(id);
  return doc.is_object() && doc["runs"][0]["steps"][0]["status"] == "in_progress";
}

void expect_one_success(const Workspace& ws, const std::string& id) {
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 1u) << "the step in flight at the reload was not allowed to finish:\n"
                                   << executions.dump(2);
  EXPECT_EQ(executions[0]["result_type"], "success");
}

class SignalTest : public ::testing::Test {
 protected:
  // A workspace configured with `extra`, the Slow pipeline triggered with a
  // 1.5 s first step, and `ductwork start` running that step.
  void start_with_running_step(const std::string& extra) {
    ConfigOptions options;
    options.extra = extra + "supervisor: {polling_timeout: 0.1}\n";
    ws_ = std::make_unique<Workspace>(options);
    ws_->define("slow.yml", chain_definition("Slow", {"Sleep", "Inc"}));
    id_ = ws_->trigger("Slow", {"1500"});
    ASSERT_FALSE(id_.empty());
    host_ = std::make_unique<testsupport::Subprocess>(ws_->command({"start"}), ws_->process_options(60));
    ASSERT_TRUE(eventually(15, [&] { return step_running(*ws_, id_); })) << host_->stdout_so_far();
  }

  std::unique_ptr<Workspace> ws_;
  std::string id_;
  std::unique_ptr<testsupport::Subprocess> host_;
};

// Forking: the supervisor stays, its children stop gracefully (the running
// step finishes) and are started again.
TEST_F(SignalTest, SighupRestartsTheChildrenOfAForkingHostGracefully) {
  ASSERT_NO_FATAL_FAILURE(start_with_running_step(""));
  Workspace& ws = *ws_;
  const std::string& id = id_;
  testsupport::Subprocess& host = *host_;

  host.signal(SIGHUP);
  ASSERT_TRUE(eventually(20, [&] { return ws.status(id)["status"] == "completed"; })) << host.stdout_so_far();
  // Work triggered after the reload runs on the new children.
  std::string after = ws.trigger("Slow", {"10"});
  ASSERT_TRUE(eventually(20, [&] { return ws.status(after)["status"] == "completed"; })) << host.stdout_so_far();

  std::string logs = host.stdout_so_far();
  EXPECT_EQ(count_of(logs, "Reload requested"), 1u) << logs;
  EXPECT_GE(count_of(logs, "Child stopped for reload"), 2u) << "advancer and worker children: " << logs;
  EXPECT_EQ(count_of(logs, "Child exited"), 0u) << "no child died unexpectedly: " << logs;
  EXPECT_EQ(count_of(logs, "Supervisor started"), 1u) << "the supervisor itself stays: " << logs;

  host.signal(SIGTERM);
  ProcessResult stopped = host.wait(30);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  expect_one_success(ws, id);
  EXPECT_EQ(process_rows(ws), 0) << "a clean stop leaves no process row";
}

// Threaded: the host stops gracefully and starts again in the same process,
// picking up a definition added meanwhile.
TEST_F(SignalTest, SighupRestartsAThreadedHostInPlaceAndReadsNewDefinitions) {
  ASSERT_NO_FATAL_FAILURE(start_with_running_step("forking: none\n"));
  Workspace& ws = *ws_;
  const std::string& id = id_;
  testsupport::Subprocess& host = *host_;

  ws.define("added.yml", chain_definition("Added", {"Inc", "Double"}));
  host.signal(SIGHUP);
  ASSERT_TRUE(eventually(20, [&] { return count_of(host.stdout_so_far(), "\"Host started\"") == 2; }))
      << host.stdout_so_far();
  std::string added = ws.trigger("Added", {"20"});
  ASSERT_TRUE(eventually(20, [&] { return ws.status(added)["status"] == "completed"; })) << host.stdout_so_far();
  EXPECT_EQ(ws.status(added)["runs"][0]["steps"][1]["output"], 42);

  host.signal(SIGTERM);
  ProcessResult stopped = host.wait(30);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  std::string logs = stopped.out;
  EXPECT_EQ(count_of(logs, "Reload requested"), 1u) << logs;
  EXPECT_EQ(count_of(logs, "\"Host stopped\""), 2u) << logs;
  expect_one_success(ws, id);
  EXPECT_EQ(process_rows(ws), 0);
}

}  // namespace
}  // namespace ductwork::it
