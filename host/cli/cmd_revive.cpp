// `ductwork revive PIPELINE_ID [--duplicate-context]`
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/run_policy.h"
#include "store/store_error.h"

namespace ductwork::cli {

int cmd_revive(const Args& args) {
  if (args.positionals.size() != 1) throw BadInput("usage: ductwork revive PIPELINE_ID [--duplicate-context]");
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  auto store = boot.open_store();
  std::string run_id;
  try {
    run_id = revive_pipeline(*store, args.positionals[0], args.flag("duplicate-context"));
  } catch (const ReviveRefused& e) {
    throw BadInput(std::string("cannot revive: ") + e.what());
  }
  std::printf("%s\n", run_id.c_str());
  return kExitOk;
}

}  // namespace ductwork::cli
