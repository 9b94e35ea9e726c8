// A host that died without removing its rows — the whole process tree
// killed at once, SIGXFSZ, the OOM killer — leaves rows whose processes no
// longer exist. Before: the next host on the machine waited the whole
// supervisor.reaper_timeout (300 s) for them while `health` already said
// "process is gone" (issue 41, item 14). Now a host reaps such rows of its
// own machine when it starts.
#include <signal.h>

#include "harness.h"

namespace ductwork::it {
namespace {

class GoneHostTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoneHostTest, TheNextHostRecoversTheClaimsOfAHostWhoseProcessesAreGone) {
  ConfigOptions options;
  options.extra = "forking: " + GetParam() + "\nsupervisor: {polling_timeout: 0.1, reaper_timeout: 300}\n";
  Workspace ws(options);
  ws.define("gated.yml", chain_definition("Gated", {"Gate", "Inc"}));
  const std::string gate = ws.file("gate");
  const std::string id = ws.trigger("Gated", {json{{"file", gate}, {"value", 1}}.dump()});
  {
    testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
    ASSERT_TRUE(eventually(20, [&] {
      json doc = ws.status(id);
      return doc.is_object() && doc["runs"][0]["steps"][0]["status"] == "in_progress";
    })) << host.stdout_so_far();
    ::kill(-host.pid(), SIGKILL);  // the whole process group, children too
    host.wait(10);
  }
  ASSERT_TRUE(eventually(10, [&] { return ws.run({"health"}).out.find("process is gone") != std::string::npos; }));
  ASSERT_GT(process_rows(ws), 0) << "the dead host's rows are left behind";

  ws.write("gate", "open");
  testsupport::Subprocess next(ws.command({"start", "--drain"}), ws.process_options(60));
  ProcessResult r = next.wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(r.seconds, 30) << "the claims were recovered at start, not after reaper_timeout";
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"][0]["error_klass"], "ProcessCrash") << doc.dump(2);
  EXPECT_NE(r.out.find("Process of a host that ended without stopping reaped at start"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Modes, GoneHostTest, ::testing::Values("fork", "none"));

}  // namespace
}  // namespace ductwork::it
