// `start --drain` on a terminal shows a live progress line (runs finished of
// total, steps/s); with stdout redirected it prints JSON log lines only.
#include "harness.h"

namespace ductwork::it {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

TEST(ProgressTest, ATerminalGetsAProgressLineAndAPipeDoesNot) {
  std::string script = find_on_path("script");
  if (script.empty()) GTEST_SKIP() << "script(1) is needed to give the host a terminal";
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain2", {"Inc", "Inc"}));
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(ws.trigger("Chain2", {std::to_string(i)}).empty());

  std::string line;
  for (const auto& arg : ws.command({"start", "--drain"})) line += (line.empty() ? "" : " ") + shell_quote(arg);
  // script(1) runs the host on a pseudo-terminal and copies what it shows.
  testsupport::ProcessResult tty = testsupport::run_process({script, "-qec", line, "/dev/null"}, ws.process_options(30));
  ASSERT_EQ(tty.exit_code, 0) << tty.describe() << tty.err;
  EXPECT_NE(tty.out.find("runs 3/3 finished"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("steps/s"), std::string::npos) << tty.out;

  ASSERT_FALSE(ws.trigger("Chain2", {"9"}).empty());
  testsupport::ProcessResult piped = ws.run({"start", "--drain"});
  ASSERT_EQ(piped.exit_code, 0) << piped.describe();
  EXPECT_EQ(piped.out.find("steps/s"), std::string::npos) << "no progress line without a terminal";
  EXPECT_NE(piped.out.find("\"msg\":\"Drained: no run in progress\""), std::string::npos) << piped.out;
}

}  // namespace
}  // namespace ductwork::it
