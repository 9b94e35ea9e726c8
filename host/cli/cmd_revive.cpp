// `ductwork revive PIPELINE_ID [--duplicate-context | --context-from RUN]`
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/run_policy.h"
#include "store/store_error.h"

namespace ductwork::cli {

int cmd_revive(const Args& args) {
  if (args.positionals.size() != 1) {
    throw BadInput("usage: ductwork revive PIPELINE_ID [--duplicate-context | --context-from RUN]");
  }
  ContextSource context;
  if (args.flag("duplicate-context")) context.kind = ContextSource::Kind::kNewestWithContext;
  if (const std::string* from = args.option("context-from")) {
    std::optional<int64_t> number = parse_run_number(*from);
    if (!number) throw BadInput("--context-from '" + *from + "' is not a run number (1 is the pipeline's first run)");
    context.kind = ContextSource::Kind::kRunNumber;
    context.run_number = *number;
  }
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  auto store = boot.open_store();
  std::string run_id;
  try {
    run_id = revive_pipeline(*store, args.positionals[0], context);
  } catch (const ReviveRefused& e) {
    throw BadInput(std::string("cannot revive: ") + e.what());
  } catch (const UnknownRun& e) {
    throw BadInput(std::string("cannot revive: --context-from: ") + e.what());
  }
  std::printf("%s\n", run_id.c_str());
  return kExitOk;
}

}  // namespace ductwork::cli
