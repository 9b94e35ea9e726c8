#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "engine/definition_loader.h"
#include "engine/job_policy.h"
#include "engine/recovery.h"
#include "engine/trigger.h"
#include "util/clock.h"
#include "store/store.h"
#include "temp_dir.h"
#include "test_database.h"

namespace ductwork::test {

// A crash recovery's plan: at most `max_crash` crashes, no delay.
inline CrashPlanner crash_policy(int max_crash) {
  return [max_crash](const ClaimedJob& job) {
    return after_crash(job.retry_count, job.crash_count, CrashPolicy{max_crash, 0.0});
  };
}

// A migrated database — a SQLite file in a temp directory, or a fresh
// PostgreSQL database when the suite runs on PostgreSQL (test_database.h) —
// with helpers to compile a definition and trigger it.
class StoreFixture {
 public:
  StoreFixture() {
    database.path = dir.file("test.sqlite3");
    if (testsupport::on_postgresql()) {
      pg = std::make_unique<testsupport::PgDatabase>();
      database.adapter = "postgresql";
      database.url = pg->url();
    }
    factory = make_store_factory(database, clock);
    store = factory->open();
    store->migrate();
  }

  static Definition compile(const std::string& yaml) { return compile_definition_text(yaml, "inline.yml"); }

  TriggeredPipeline trigger(const Definition& def, const Json& args) { return trigger_pipeline(*store, def, args); }

  testsupport::TempDir dir;
  std::unique_ptr<testsupport::PgDatabase> pg;  // outlives the stores below
  DatabaseConfig database;                       // what factory connects to
  // The database clock of every store the factory opens: advance() it
  // instead of waiting for a delay.
  std::shared_ptr<ShiftedClock> clock = std::make_shared<ShiftedClock>();
  std::unique_ptr<StoreFactory> factory;
  std::unique_ptr<Store> store;
};

}  // namespace ductwork::test
