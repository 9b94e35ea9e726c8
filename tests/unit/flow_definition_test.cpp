// Flow control in a definition (issue 38): `priority:` in a file and
// Pipeline::priority in the builder give one canonical text and hash, a
// definition without it keeps the hash it always had, and bad values are
// refused naming the rule.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "definition_errors.h"
#include "engine/definition_loader.h"

namespace ductwork {
namespace {

std::string error_of(const std::string& text) { return definition_error_of(text); }

TEST(FlowDefinition, PriorityIsMetadataAndTheFileAndBuilderAgree) {
  Definition file = compile_definition_text("pipeline: P\npriority: 3\nsteps:\n  - start: A\n  - chain: B\n", "p.yml");
  EXPECT_EQ(file.priority, 3);
  EXPECT_EQ(file.to_json()["metadata"], Json::object({{"priority", 3}}));
  Pipeline p("P");
  p.start("A").chain("B").priority(3);
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), file.canonical_text());
  // The snapshot reads back with it.
  EXPECT_EQ(Definition::from_json(file.to_json(), "P", "snapshot").priority, 3);
}

TEST(FlowDefinition, WithoutPriorityTheHashIsTheOneItAlwaysWas) {
  const std::string yaml = "pipeline: P\nsteps:\n  - start: A\n  - chain: B\n";
  Definition plain = compile_definition_text(yaml, "p.yml");
  EXPECT_EQ(plain.priority, std::nullopt);
  EXPECT_EQ(plain.to_json()["metadata"], Json::object());
  Definition zero = compile_definition_text("pipeline: P\npriority: 0\nsteps:\n  - start: A\n  - chain: B\n", "p.yml");
  // Saying 0 is saying something: its own text and hash.
  EXPECT_NE(zero.sha1(), plain.sha1());
  EXPECT_EQ(zero.priority, 0);
  // A definition written before priorities existed hashes as it did.
  Pipeline p("P");
  p.start("A").chain("B");
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), plain.canonical_text());
}

TEST(FlowDefinition, ABadPriorityIsRefusedNamingTheRule) {
  const std::string rule = "'priority' takes a whole number from 0 (claimed first) to 9, e.g. 'priority: 3'";
  for (const char* bad : {"10", "-1", "1.5", "high", "[1]", ""}) {
    SCOPED_TRACE(bad);
    const std::string text = std::string("pipeline: P\npriority: ") + bad + "\nsteps:\n  - start: A\n";
    EXPECT_EQ(error_of(text), "defs/p.yml:2: pipeline P: " + rule);
  }
  Pipeline p("P");
  p.start("A");
  EXPECT_THROW(p.priority(10), PipelineError);
  p.priority(2);
  try {
    p.priority(3);
    ADD_FAILURE() << "a second priority was taken";
  } catch (const PipelineError& e) {
    EXPECT_STREQ(e.what(), "'priority' is given twice (a pipeline has one priority)");
  }
  // A plugin's document with a priority out of range is refused too.
  Json doc = parse_json(p.dump());
  doc["metadata"]["priority"] = 12;
  EXPECT_THROW(Definition::from_json(doc, "P", "plugin"), DefinitionError);
}

}  // namespace
}  // namespace ductwork
