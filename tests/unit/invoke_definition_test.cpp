// Child pipelines in a definition (issue 39 item 2): `- invoke: PIPELINE`
// with `on_child_halt:` and Pipeline::invoke give one canonical text; the
// invoked node stands for the child and is no step class; bad entries and
// snapshots are refused naming the rule; an unknown child is a problem of
// the definition set.
#include <gtest/gtest.h>

#include <algorithm>

#include <ductwork/pipeline.hpp>

#include "definition_errors.h"
#include "engine/catalog.h"
#include "engine/definition_loader.h"

namespace ductwork {
namespace {

TEST(InvokeDefinition, TheFileAndTheBuilderAgree) {
  const std::string yaml =
      "pipeline: Shop\nsteps:\n  - start: Order\n  - invoke: Fulfil\n    on_child_halt: continue\n"
      "  - chain: Notify\n  - invoke: Archive\n";
  const Definition file = compile_definition_text(yaml, "shop.yml");
  Invoke goes_on;
  goes_on.on_child_halt = "continue";
  Pipeline p("Shop");
  p.start("Order").invoke("Fulfil", goes_on).chain("Notify").invoke("Archive");
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), file.canonical_text());
  const Edge& order = file.edge(file.nodes[0]);
  EXPECT_EQ(order.type, "invoke");
  EXPECT_EQ(order.on_child_halt, "continue");
  const Edge& fulfil = file.edge(file.nodes[1]);
  EXPECT_EQ(fulfil.klass, "Fulfil");
  EXPECT_TRUE(fulfil.invoked);
  EXPECT_TRUE(fulfil.child_halt_continues);
  const Edge& archive = file.edge(file.nodes[3]);
  EXPECT_TRUE(archive.invoked);
  EXPECT_FALSE(archive.child_halt_continues) << "halt is the default";
  EXPECT_FALSE(file.to_json()["edges"][file.nodes[2]].contains("on_child_halt"));
  EXPECT_EQ(file.step_classes(), (std::vector<std::string>{"Order", "Notify"}));
  EXPECT_EQ(file.invoked_pipelines(), (std::vector<std::string>{"Fulfil", "Archive"}));
  EXPECT_EQ(Definition::from_json(file.to_json(), "Shop", "again").canonical_text(), file.canonical_text());
  // A definition without invokes keeps its text (and SHA-1).
  EXPECT_EQ(compile_definition_text("pipeline: S\nsteps:\n  - start: A\n  - chain: B\n", "s.yml").canonical_text()
                .find("on_child_halt"),
            std::string::npos);
}

TEST(InvokeDefinition, BadEntriesAreRefusedNamingTheLineAndTheRule) {
  const std::string head = "pipeline: P\nsteps:\n  - start: A\n";
  EXPECT_EQ(definition_error_of(head + "  - invoke: [B]\n"),
            "defs/p.yml:4: pipeline P: 'invoke' takes a pipeline name, e.g. 'invoke: Fulfil'");
  EXPECT_EQ(definition_error_of(head + "  - invoke: B\n    on_child_halt: later\n"),
            "defs/p.yml:4: pipeline P: 'invoke' takes 'on_child_halt: halt' or 'on_child_halt: continue', not "
            "'later'");
  EXPECT_EQ(definition_error_of(head + "  - chain: B\n    on_child_halt: continue\n"),
            "defs/p.yml:5: pipeline P: 'on_child_halt' goes with 'invoke: PipelineName' only");
  // The builder gives the option to the node standing for the child; the
  // definition refuses it.
  EXPECT_NE(definition_error_of(head + "  - invoke: B\n    timeout: 5\n").find(
                "invokes pipeline B and runs no step: 'timeout', 'delay', 'concurrency' and 'rate_limit' do not apply"),
            std::string::npos);
}

TEST(InvokeDefinition, SnapshotsAreCheckedStrictlyAndReadLeniently) {
  const Json bad = parse_json(
      R"({"nodes":["A.1","B.2"],"edges":{"A.1":{"klass":"A","type":"chain","to":["B.2"],"on_child_halt":"continue"},)"
      R"("B.2":{"klass":"B"}}})");
  try {
    Definition::from_json(bad, "P", "plugin");
    ADD_FAILURE() << "on_child_halt on a chain was accepted";
  } catch (const DefinitionError& e) {
    EXPECT_EQ(std::string(e.what()), "plugin: pipeline P: node A.1: \"on_child_halt\" on an edge that is not an 'invoke'");
  }
  EXPECT_NO_THROW(Definition::from_json(bad, "P", "run 1", /*strict=*/false));
}

TEST(InvokeDefinition, AnUnknownChildIsAProblemOfTheSet) {
  DefinitionSet set;
  set.add(compile_definition_text("pipeline: Parent\nsteps:\n  - start: A\n  - invoke: Chlid\n", "parent.yml"),
          "parent.yml");
  set.add(compile_definition_text("pipeline: Child\nsteps:\n  - start: A\n", "child.yml"), "child.yml");
  PluginRegistry none;
  std::vector<std::string> problems = check_steps_resolve(set, none);
  const std::string expected =
      "parent.yml: pipeline Parent: 'invoke: Chlid' names no pipeline defined here, did you mean 'Child'?";
  EXPECT_NE(std::find(problems.begin(), problems.end(), expected), problems.end()) << ::testing::PrintToString(problems);
  for (const std::string& problem : problems) {
    EXPECT_EQ(problem.find("step Chlid"), std::string::npos) << "the child was taken for a step class: " << problem;
  }
}

}  // namespace
}  // namespace ductwork
