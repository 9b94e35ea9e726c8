#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "engine/definition_loader.h"
#include "engine/trigger.h"
#include "store/store.h"
#include "temp_dir.h"

namespace ductwork::test {

// A migrated SQLite database in a temp directory, with helpers to compile a
// definition and trigger it.
class StoreFixture {
 public:
  StoreFixture() {
    DatabaseConfig db;
    db.path = dir.file("test.sqlite3");
    factory = make_store_factory(db);
    store = factory->open();
    store->migrate();
  }

  static Definition compile(const std::string& yaml) { return compile_definition_text(yaml, "inline.yml"); }

  TriggeredPipeline trigger(const Definition& def, const json& args) { return trigger_pipeline(*store, def, args); }

  testsupport::TempDir dir;
  std::unique_ptr<StoreFactory> factory;
  std::unique_ptr<Store> store;
};

}  // namespace ductwork::test
