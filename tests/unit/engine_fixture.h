#pragma once

// An engine inside one process for deterministic tests: a migrated SQLite
// file, the real testkit plugin, and a JobWorker + Advancer driven step by
// step until neither finds anything to do.
#include <gtest/gtest.h>

#include "engine/advancer.h"
#include "engine/job_worker.h"
#include "engine/status_document.h"
#include "store/sqlite/sqlite_store.h"
#include "store_fixture.h"

namespace ductwork::test {

class EngineFixture : public ::testing::Test, public StoreFixture {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry.load_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", logger));
    store->register_process(process_id, 1, "m", "all");
  }

  void configure(const std::string& yaml) { config = parse_config("pipelines: '*'\n" + yaml, "test.yml", "/"); }

  // Runs a worker and an advancer until neither finds anything to do.
  void drain() {
    JobWorker worker("P", *store, registry, config, logger, wakeups, stats, process_id, cancelled);
    Advancer advancer({"P"}, *store, cache, config, logger, wakeups, process_id, &registry);
    for (int idle_rounds = 0, guard = 0; idle_rounds < 2 && guard < 100000; ++guard) {
      bool worked = worker.run_once();
      bool advanced = advancer.run_once() == BranchClaimResult::kClaimed;
      idle_rounds = (worked || advanced) ? 0 : idle_rounds + 1;
    }
  }

  // Triggers pipeline P (`steps_yaml` holds everything after its name) and drains.
  TriggeredPipeline run(const std::string& steps_yaml, const Json& args) {
    auto t = trigger(compile("pipeline: P\n" + steps_yaml), args);
    drain();
    return t;
  }

  Json report(const TriggeredPipeline& t) { return *pipeline_report(*store, t.pipeline_id); }

  // Steps of run `run_index` with class `klass`, in start order.
  static std::vector<Json> steps_of(const Json& doc, const std::string& klass, size_t run_index = 0) {
    std::vector<Json> out;
    for (const Json& s : doc["runs"][run_index]["steps"].as_array())
      if (s["klass"].as_string() == klass) out.push_back(s);
    return out;
  }

  // Runs `sqlite_sql` or `postgresql_sql`: the script for the dialect the
  // tests run on (triggers, functions).
  void exec_dialect(const std::string& sqlite_sql, const std::string& postgresql_sql) {
    auto& sql_store = dynamic_cast<sql::SqlStore&>(*store);
    auto held = sql_store.lock();
    sql_store.connection().exec_script(testsupport::on_postgresql() ? postgresql_sql : sqlite_sql);
  }

  // A single integer from `sql`, whose ?1 is bound to `arg`.
  int64_t count(const std::string& sql, const std::string& arg) {
    auto& sqlite = dynamic_cast<sql::SqlStore&>(*store);
    auto held = sqlite.lock();
    auto stmt = sqlite.connection().prepare(sql);
    stmt.bind(1, arg);
    stmt.step();
    return stmt.int64(0);
  }

  Logger logger{stderr, Logger::Format::kJson, LogLevel::kError};
  PluginRegistry registry;
  Config config = parse_config("pipelines: '*'\njob_worker: {retry_delay: 0}", "test.yml", "/");
  Wakeups wakeups{{"P"}};
  RuntimeStats stats;
  DefinitionCache cache;
  std::atomic<bool> cancelled{false};
  const std::string process_id = "engine-fixture";
};

}  // namespace ductwork::test
