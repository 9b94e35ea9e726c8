// Names that broke everything: an invalid UTF-8 pipeline name made every
// command fail with "cannot dump string: invalid UTF-8" (no file named), a
// name with a NUL byte passed validate and then restarted the worker child
// every second, and a symlink loop in a folder surfaced as a filesystem
// exception. Names are checked at load (letters, digits, '_', ':' and '-',
// at most 128 bytes), errors show bad bytes as \xNN, and unreadable entries
// are named.
#include <unistd.h>

#include <filesystem>

#include "harness.h"

namespace ductwork::it {
namespace {

void expect_named_in_validate(Workspace& ws, const std::string& file, const std::vector<std::string>& needles) {
  ProcessResult text = ws.run({"validate"});
  EXPECT_EQ(text.exit_code, 2) << text.describe();
  for (const auto& n : needles) EXPECT_NE(text.err.find(n), std::string::npos) << "lacks [" << n << "]: " << text.err;
  EXPECT_NE(text.err.find(file), std::string::npos) << text.err;
  // The JSON report is valid JSON even though the name is not valid text.
  ProcessResult doc = ws.run({"validate", "--json"});
  EXPECT_EQ(doc.exit_code, 2) << doc.describe();
  json report = parse_json(doc.out, "validate --json");
  ASSERT_TRUE(report.is_object()) << doc.out;
  EXPECT_EQ(report["ok"], false);
  EXPECT_NE(report["problems"].dump().find("may only contain"), std::string::npos) << report.dump(2);
}

TEST(NamesTest, APipelineNameThatIsNotPlainTextIsRefusedAtLoadNamingFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string("pipeline: Bad\xff") + "Name\n", "pipeline name 'Bad\\xffName' may only contain letters, digits"},
      {"pipeline: \"Nul\\0Name\"\n", "pipeline name 'Nul\\x00Name' may only contain"},
      {"pipeline: Two Words\n", "pipeline name 'Two Words' may only contain"},
  };
  for (const auto& [head, needle] : cases) {
    SCOPED_TRACE(head);
    Workspace ws(empty_database());
    ws.define("good.yml", chain_definition("Good", {"Inc"}));
    std::string file = ws.define("bad.yml", head + "steps:\n  - start: Inc\n");
    expect_named_in_validate(ws, file + ":1:", {needle});
    // The error names the file (it used to be a dump error naming
    // nothing); the folder's other pipelines still run (issue 41 item 8).
    ProcessResult missing = ws.run({"trigger", "Missing", "1"});
    EXPECT_EQ(missing.exit_code, 2) << missing.describe();
    EXPECT_NE(missing.err.find(file), std::string::npos) << missing.err;
    EXPECT_FALSE(ws.database_created()) << "nothing may be written";
    ProcessResult t = ws.run({"trigger", "Good", "1"});
    EXPECT_EQ(t.exit_code, 0) << t.describe() << t.err;
    ProcessResult s = ws.run({"start", "--drain"}, 20);
    EXPECT_EQ(s.exit_code, 0) << s.describe();
    EXPECT_NE(s.out.find("Definition refused; its pipeline is not served"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find(file), std::string::npos) << s.out;
  }
}

TEST(NamesTest, AStepNameWithBadBytesIsShownEscaped) {
  Workspace ws;
  std::string file = ws.define("bad.yml", "pipeline: P\nsteps:\n  - start: Inc\n  - chain: \"In\\u00e9\"\n");
  expect_named_in_validate(ws, file + ":4:", {"step name 'In\\xc3\\xa9' may only contain"});
}

TEST(NamesTest, ASymlinkLoopInTheDefinitionsFolderIsNamed) {
  Workspace ws;
  ws.define("good.yml", chain_definition("Good", {"Inc"}));
  std::string loop = ws.definitions_dir() + "/loop.yml";
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  ProcessResult r = ws.run({"validate"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find(loop + ": cannot read the definition file: Too many levels of symbolic links"),
            std::string::npos)
      << r.err;
  ProcessResult t = ws.run({"trigger", "Missing", "1"});
  EXPECT_EQ(t.exit_code, 2) << t.describe();
  EXPECT_NE(t.err.find("Too many levels of symbolic links"), std::string::npos) << t.err;
  EXPECT_EQ(ws.run({"trigger", "Good", "1"}).exit_code, 0) << "the loop costs the folder's other pipelines nothing";
}

TEST(NamesTest, ASymlinkLoopInThePluginsFolderIsARefusal) {
  Workspace probe;
  std::string dir = probe.file("plugins");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", dir + "/libductwork_testkit.so");
  std::string loop = dir + "/libloop.so";
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  ConfigOptions options;
  options.plugins_directory = dir;
  Workspace ws(options);
  ProcessResult r = ws.run({"plugins", "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  json doc = parse_json(r.out, "plugins --json");
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_EQ(doc["plugins"].size(), 1u) << "testkit still loads: " << doc.dump(2);
  ASSERT_EQ(doc["refused"].size(), 1u) << doc.dump(2);
  EXPECT_EQ(doc["refused"][0], loop + ": cannot be read: Too many levels of symbolic links");
}

}  // namespace
}  // namespace ductwork::it
