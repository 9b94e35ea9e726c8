#include "flow_support.h"

namespace ductwork::it {

void trigger_keys(const Workspace& ws, const std::string& pipeline, int keys, int per_key, int ms) {
  std::string lines;
  for (int i = 0; i < per_key; ++i) {
    for (int k = 0; k < keys; ++k) lines += "[" + std::to_string(ms) + ", \"k" + std::to_string(k) + "\"]\n";
  }
  ProcessResult r = ws.run({"trigger", pipeline, "--from", ws.write(pipeline + "-runs.jsonl", lines)}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
}

int64_t sql_number(const Workspace& ws, const std::string& query) {
  const std::string out = ws.sql(query);
  return out.empty() ? -1 : std::stoll(out);
}

std::unique_ptr<testsupport::Subprocess> start_named_host(const Workspace& ws, const std::string& machine) {
  testsupport::ProcessOptions options = ws.process_options(240);
  options.env = {{"DUCTWORK_MACHINE_ID", machine}, {"XDG_CACHE_HOME", ws.dir() + "/.cache"}};
  return std::make_unique<testsupport::Subprocess>(ws.command({"start"}), options);
}

}  // namespace ductwork::it
