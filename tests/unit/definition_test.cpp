#include <gtest/gtest.h>

#include "engine/definition_loader.h"
#include "temp_dir.h"

namespace ductwork {
namespace {

std::string error_of(const std::string& text) {
  try {
    compile_definition_text(text, "defs/p.yml");
  } catch (const DefinitionError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Definition, ChainCompilesToCanonicalJson) {
  Definition d = compile_definition_text("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n  - chain: A\n", "p.yml");
  ASSERT_EQ(d.nodes.size(), 3u);
  EXPECT_EQ(d.nodes[0].rfind("A.", 0), 0u);
  EXPECT_EQ(d.nodes[0].size(), 10u);  // "A." + 8 hex
  EXPECT_NE(d.nodes[0], d.nodes[2]);  // same class twice: distinct nodes
  json doc = d.to_json();
  EXPECT_EQ(doc["edges"][d.nodes[0]]["type"], "chain");
  EXPECT_EQ(doc["edges"][d.nodes[0]]["to"], json::array({d.nodes[1]}));
  EXPECT_EQ(doc["edges"][d.nodes[2]], json({{"klass", "A"}}));
  EXPECT_EQ(d.step_classes(), (std::vector<std::string>{"A", "B"}));
}

TEST(Definition, CompilingTwiceGivesTheSameGraphAndSha) {
  std::string text = "pipeline: P\nsteps:\n  - start: A\n  - chain: B\n";
  EXPECT_EQ(compile_definition_text(text, "x").sha1(), compile_definition_text(text, "y").sha1());
}

TEST(Definition, JsonFilesUseTheSameGrammar) {
  Definition d = compile_definition_text(R"({"pipeline":"J","steps":[{"start":"A"},{"chain":"B"}]})", "j.json");
  EXPECT_EQ(d.pipeline, "J");
  EXPECT_EQ(d.nodes.size(), 2u);
}

TEST(Definition, CanonicalRoundTrip) {
  Definition d = compile_definition_text("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n", "p.yml");
  Definition back = Definition::from_json(d.to_json(), "P", "snapshot");
  EXPECT_EQ(back.canonical_text(), d.canonical_text());
}

TEST(Definition, RulesAreEnforcedWithFileLineAndRule) {
  std::string e = error_of("pipeline: P\nsteps:\n  - chain: A\n");
  EXPECT_NE(e.find("defs/p.yml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("first entry must be 'start'"), std::string::npos) << e;

  e = error_of("pipeline: P\nsteps:\n  - start: A\n  - start: B\n");
  EXPECT_NE(e.find("exactly one 'start'"), std::string::npos) << e;

  e = error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, C]\n");
  EXPECT_NE(e.find("'divide' is not supported yet"), std::string::npos) << e;

  e = error_of("pipeline: P\nsteps:\n  - start: A\n  - bogus: B\n");
  EXPECT_NE(e.find("unknown keyword 'bogus'"), std::string::npos) << e;

  EXPECT_NE(error_of("steps:\n  - start: A\n").find("'pipeline' must name"), std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps: []\n").find("non-empty list"), std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: [A, B]\n").find("takes one step name"), std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: 'A B'\n").find("may only contain"), std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nextra: 1\nsteps:\n  - start: A\n").find("unknown key 'extra'"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps: [start: A\n").find("not valid YAML"), std::string::npos);
}

TEST(Definition, DirectoryLoadRejectsDuplicateNames) {
  testsupport::TempDir dir;
  dir.write("a.yml", "pipeline: P\nsteps:\n  - start: A\n");
  dir.write("b.yaml", "pipeline: P\nsteps:\n  - start: B\n");
  try {
    load_definition_directory(dir.path());
    FAIL() << "expected a duplicate-name error";
  } catch (const DefinitionError& e) {
    EXPECT_NE(std::string(e.what()).find("already defined in " + dir.path() + "/a.yml"), std::string::npos)
        << e.what();
  }
}

TEST(Definition, DirectoryLoadIgnoresOtherFilesAndMissingDirectory) {
  testsupport::TempDir dir;
  dir.write("a.yml", "pipeline: P\nsteps:\n  - start: A\n");
  dir.write("README.md", "not a definition");
  DefinitionSet set = load_definition_directory(dir.path());
  EXPECT_EQ(set.pipelines.size(), 1u);
  EXPECT_NE(set.find("P"), nullptr);
  EXPECT_TRUE(load_definition_directory(dir.file("missing")).pipelines.empty());
}

}  // namespace
}  // namespace ductwork
