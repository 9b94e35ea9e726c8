// The subprocess runner the integration tests read every host's output
// through: what several processes print at once must all be there, or a
// test counting log lines of a forking host fails for a line the runner lost.
#include "process_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace ductwork::it {
namespace {

TEST(ProcessRunnerTest, LinesFourProcessesPrintAtOnceAreAllKept) {
  // Four writers, one write() per line, all at the same time, into the
  // stdout the runner gave the shell (as a forking host's children share it).
  const int kLines = 20000;
  const std::string script = "for p in 1 2 3 4; do (i=0; while [ $i -lt " + std::to_string(kLines) +
                             " ]; do echo \"writer $p\"; i=$((i+1)); done) & done; wait";
  testsupport::ProcessOptions options;
  options.timeout_seconds = 120;
  testsupport::ProcessResult r = testsupport::run_process({"/bin/sh", "-c", script}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (int p = 1; p <= 4; ++p) {
    const std::string line = "writer " + std::to_string(p) + "\n";
    size_t count = 0;
    for (size_t at = r.out.find(line); at != std::string::npos; at = r.out.find(line, at + line.size())) ++count;
    EXPECT_EQ(count, static_cast<size_t>(kLines)) << "writer " << p;
  }
  EXPECT_EQ(r.out.size(), static_cast<size_t>(4 * kLines) * std::string("writer 1\n").size());
}

TEST(ProcessRunnerTest, TheTestsOwnDuctworkVariablesNeverReachAChild) {
  // A developer who exported DUCTWORK_DATABASE_URL, or a test script that
  // keeps a DUCTWORK_ setting of its own, must not point every spawned host
  // at another database or make it warn on stderr.
  ::setenv("DUCTWORK_DATABASE_URL", "sqlite:///elsewhere.sqlite3", 1);
  ::setenv("DUCTWORK_BUILD_DIR", "/somewhere", 1);
  ::setenv("DWTEST_RUNNER_KEEPS_THIS", "kept", 1);
  testsupport::ProcessOptions options;
  options.env = {{"DUCTWORK_LOG_LEVEL", "debug"}};
  testsupport::ProcessResult r = testsupport::run_process({"/usr/bin/env"}, options);
  ::unsetenv("DUCTWORK_DATABASE_URL");
  ::unsetenv("DUCTWORK_BUILD_DIR");
  ::unsetenv("DWTEST_RUNNER_KEEPS_THIS");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out.find("DUCTWORK_DATABASE_URL"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DUCTWORK_BUILD_DIR"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nDUCTWORK_LOG_LEVEL=debug\n"), std::string::npos) << "asked for in options.env:\n" << r.out;
  EXPECT_NE(r.out.find("DWTEST_RUNNER_KEEPS_THIS=kept"), std::string::npos) << "other variables pass:\n" << r.out;
}

}  // namespace
}  // namespace ductwork::it
