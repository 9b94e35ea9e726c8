// `ductwork new-plugin [--python] NAME [DIR]`: the folder it writes, and its refusals
// (exit 2, nothing written). That the folder builds and its test passes
// against the packaged SDK is tests/authoring/package_test.sh.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "harness.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(NewPluginTest, WritesAStepATestAPipelineAndCMakeWithTheNameFilledIn) {
  Workspace ws;
  ProcessResult r = ws.run_raw({"new-plugin", "order_mail"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path dir = fs::path(ws.dir()) / "order_mail";
  for (const char* file : {"CMakeLists.txt", "src/plugin.cpp", "src/steps.cpp", "test/steps_test.cpp",
                           "pipelines/order_mail.yml", "ductwork.yml", "README.md"}) {
    EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
    EXPECT_NE(r.out.find(file), std::string::npos) << "not listed: " << file << "\n" << r.out;
    EXPECT_EQ(read_file(dir / file).find('@'), std::string::npos) << "placeholder left in " << file;
  }
  EXPECT_NE(read_file(dir / "src/steps.cpp").find("class OrderMailGreet"), std::string::npos);
  EXPECT_NE(read_file(dir / "src/steps.cpp").find("namespace order_mail"), std::string::npos);
  EXPECT_NE(read_file(dir / "CMakeLists.txt").find("find_package(DuctworkSDK 1 CONFIG REQUIRED)"), std::string::npos);
  EXPECT_NE(read_file(dir / "CMakeLists.txt").find("ductwork_add_plugin(order_mail"), std::string::npos);
  EXPECT_NE(read_file(dir / "test/steps_test.cpp").find("#include <ductwork/testing.hpp>"), std::string::npos);
  EXPECT_NE(read_file(dir / "pipelines/order_mail.yml").find("pipeline: OrderMail"), std::string::npos);
  // Nothing else was left beside it (the staging folder is renamed into place).
  EXPECT_EQ(entries(ws.dir()), 2u) << "expected only ductwork.yml and order_mail/";
}

TEST(NewPluginTest, WritesIntoAGivenFolderThatIsEmpty) {
  Workspace ws;
  fs::create_directories(fs::path(ws.dir()) / "empty");
  ProcessResult r = ws.run_raw({"new-plugin", "billing", "empty"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(fs::path(ws.dir()) / "empty/src/steps.cpp"));
  EXPECT_TRUE(fs::is_regular_file(fs::path(ws.dir()) / "empty/pipelines/billing.yml"));
}

TEST(NewPluginTest, RefusesBadNamesAndOccupiedFoldersWritingNothing) {
  Workspace ws;
  size_t before = entries(ws.dir());
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  ws.write("taken/keep.txt", "mine");
  ws.write("afile", "x");
  std::vector<Case> cases = {
      {{"new-plugin"}, "usage: ductwork new-plugin NAME [DIR]"},
      {{"new-plugin", "a", "b", "c"}, "usage: ductwork new-plugin NAME [DIR]"},
      {{"new-plugin", "Billing"}, "must start with a lower-case letter"},
      {{"new-plugin", "bill-ing"}, "hold only a-z, 0-9 and _"},
      {{"new-plugin", "9lives"}, "must start with a lower-case letter"},
      {{"new-plugin", "namespace"}, "is a C++ keyword"},
      {{"new-plugin", "billing", "taken"}, "exists and is not empty; nothing written"},
      {{"new-plugin", "billing", "afile"}, "exists and is not a folder"},
      {{"new-plugin", "billing", "no/such/parent"}, "does not exist"},
  };
  for (const Case& c : cases) {
    ProcessResult r = ws.run_raw(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back() << ": " << r.describe();
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ductwork new-plugin: "), std::string::npos) << r.err;
  }
  EXPECT_EQ(entries(ws.dir()), before + 2) << "only the two files this test wrote";
  EXPECT_EQ(entries(fs::path(ws.dir()) / "taken"), 1u);
  EXPECT_EQ(read_file(fs::path(ws.dir()) / "taken/keep.txt"), "mine");
}

// Issue 40: `new-plugin --python` to a running, unit-tested pipeline
// without C++: the folder's own unittest passes, and its ductwork.yml
// runs the pipeline through the real binary (python3 finds the SDK's
// module on PYTHONPATH, as it would where the SDK package installed it).
TEST(NewPluginTest, PythonWritesStepsTheirTestAndAPipelineThatRuns) {
  if (find_on_path("python3").empty()) GTEST_SKIP() << "python3 is not installed";
  Workspace ws;
  ProcessResult r = ws.run_raw({"new-plugin", "--python", "order_mail"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path dir = fs::path(ws.dir()) / "order_mail";
  for (const char* file : {"plugins/order_mail.steps.yml", "plugins/order_mail_steps.py",
                           "test/test_order_mail_steps.py", "pipelines/order_mail.yml", "ductwork.yml", "README.md"}) {
    EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
    EXPECT_NE(r.out.find(file), std::string::npos) << "not listed: " << file << "\n" << r.out;
    EXPECT_EQ(read_file(dir / file).find("@NAME@"), std::string::npos) << "placeholder left in " << file;
    EXPECT_EQ(read_file(dir / file).find("@CAMEL@"), std::string::npos) << "placeholder left in " << file;
  }
  EXPECT_NE(read_file(dir / "plugins/order_mail_steps.py").find("@step(\"OrderMailGreet\")"), std::string::npos);
  testsupport::ProcessOptions options;
  options.cwd = dir.string();
  options.env = {{"PYTHONPATH", python_sdk_dir()}};
  ProcessResult unit = testsupport::run_process({find_on_path("python3"), "-m", "unittest", "discover", "-s", "test"},
                                                options);
  EXPECT_EQ(unit.exit_code, 0) << unit.describe() << unit.err;
  EXPECT_NE(unit.err.find("Ran 3 tests"), std::string::npos) << unit.err;
  auto ductwork = [&](std::vector<std::string> args) {
    args.insert(args.begin(), DUCTWORK_BINARY);
    args.insert(args.end(), {"-c", "ductwork.yml"});
    return testsupport::run_process(args, options);
  };
  ASSERT_EQ(ductwork({"migrate"}).exit_code, 0);
  ProcessResult trigger = ductwork({"trigger", "OrderMail", "\"Ada\""});
  ASSERT_EQ(trigger.exit_code, 0) << trigger.err;
  const std::string id = trigger.out.substr(0, trigger.out.find('\n'));
  ProcessResult drain = ductwork({"start", "--drain"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err;
  json doc = parse_json(ductwork({"status", id, "--json"}).out, "status --json");
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], "HELLO, ADA!") << doc.dump(2);
}

}  // namespace
}  // namespace ductwork::it
