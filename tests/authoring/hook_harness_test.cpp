// <ductwork/testing.hpp>'s HookHarness: a step author runs the plugin's
// lifecycle hooks (DUCTWORK_HOOK) in a unit test, around steps run with
// StepHarness, as the host would run them in a worker process.
#include <atomic>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include <ductwork/testing.hpp>

namespace hooked {

// A "connection pool" a worker opens once and its steps use.
std::atomic<int> open_connections{0};
std::string opened_for;
bool refuse_to_open = false;

void open_pool(const ductwork::ProcessInfo& p) {
  if (refuse_to_open) throw std::runtime_error("database unreachable");
  open_connections = 4;
  opened_for = p.role() + " " + std::to_string(p.pid()) + " " +
               (p.pipelines().empty() ? std::string() : p.pipelines().front());
  p.log(ductwork::LogLevel::kInfo, "pool open");
}
void close_pool(const ductwork::ProcessInfo&) { open_connections = 0; }
void also_at_start(const ductwork::ProcessInfo&) {}
void flush_metrics(const ductwork::ProcessInfo&) { throw std::logic_error("flush failed"); }

class Query : public ductwork::Step {
 public:
  ductwork::Json execute(ductwork::StepContext&) override {
    if (open_connections.load() == 0) throw std::runtime_error("no pool: on_worker_start did not run");
    return open_connections.load();
  }
};
DUCTWORK_STEP(Query);
DUCTWORK_HOOK(on_worker_start, open_pool);
DUCTWORK_HOOK(on_worker_start, also_at_start);
DUCTWORK_HOOK(on_worker_stop, flush_metrics);
DUCTWORK_HOOK(on_worker_stop, close_pool);

}  // namespace hooked

namespace {

using ductwork::testing::HookHarness;
using ductwork::testing::HookResult;
using ductwork::testing::StepHarness;

TEST(HookHarnessTest, AStepUsesWhatItsWorkerStartHookOpenedAndTheStopHookClosesIt) {
  hooked::refuse_to_open = false;
  HookHarness hooks;
  hooks.pipelines({"Reports"});
  StepHarness step;
  EXPECT_FALSE(step.run<hooked::Query>().ok()) << "before the start hook the pool is closed";
  HookResult started = hooks.run("on_worker_start");
  ASSERT_TRUE(started.ok()) << started.error_message;
  EXPECT_EQ(started.ran, (std::vector<std::string>{"open_pool", "also_at_start"}));
  EXPECT_EQ(hooked::opened_for, "worker " + std::to_string(::getpid()) + " Reports");
  EXPECT_EQ(step.run<hooked::Query>().output(), 4);
  ASSERT_EQ(hooks.logs().size(), 1u);
  EXPECT_EQ(hooks.logs()[0].message, "pool open");
  // A stop event runs every hook, even after one failed.
  HookResult stopped = hooks.run("on_worker_stop");
  EXPECT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.failed_hook, "flush_metrics");
  EXPECT_EQ(stopped.error_klass, "std::logic_error");
  EXPECT_EQ(stopped.error_message, "flush failed");
  EXPECT_EQ(stopped.ran, (std::vector<std::string>{"flush_metrics", "close_pool"}));
  EXPECT_EQ(hooked::open_connections.load(), 0);
}

TEST(HookHarnessTest, AFailingStartHookStopsTheEventAsTheHostDoes) {
  hooked::refuse_to_open = true;
  HookHarness hooks;
  HookResult started = hooks.pid(77).run("on_worker_start");
  hooked::refuse_to_open = false;
  EXPECT_FALSE(started.ok());
  EXPECT_EQ(started.failed_hook, "open_pool");
  EXPECT_EQ(started.error_klass, "std::runtime_error");
  EXPECT_EQ(started.error_message, "database unreachable");
  EXPECT_FALSE(started.error_backtrace.empty());
  EXPECT_EQ(started.ran, std::vector<std::string>{"open_pool"}) << "the host runs nothing after a failed start hook";
}

TEST(HookHarnessTest, AnEventWithoutHooksRunsNothingAndAnUnknownOneIsRefused) {
  HookHarness hooks;
  HookResult none = hooks.run("on_supervisor_start");
  EXPECT_TRUE(none.ok());
  EXPECT_TRUE(none.ran.empty());
  EXPECT_THROW(hooks.run("on_lunch_start"), std::invalid_argument);
}

}  // namespace
