// Definition files, the canonical JSON and the SDK builder: three ways to
// write a pipeline, one compiled result, and every rule with its message.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "engine/catalog.h"
#include "definition_errors.h"
#include "engine/definition_loader.h"
#include "temp_dir.h"
#include "util/logger.h"

namespace ductwork {
namespace {

std::string error_of(const std::string& text) { return definition_error_of(text); }

// The one node of class `klass` (fails the test when there is not exactly one).
std::string node_of(const Definition& d, const std::string& klass) {
  std::string found;
  int count = 0;
  for (const auto& node : d.nodes) {
    if (d.edge(node).klass == klass) {
      found = node;
      ++count;
    }
  }
  EXPECT_EQ(count, 1) << klass;
  return found;
}

Definition from_builder(const Pipeline& p) {
  return Definition::from_json(parse_json(p.dump()), p.name(), "builder " + p.name());
}

// A file and the builder give the same text and hash; the JSON round-trips
// through strict from_json; the builder's own text (less "pipeline") is
// the same canonical text too.
void expect_one_result(const std::string& yaml, const Pipeline& p) {
  Definition from_file = compile_definition_text(yaml, "one.yml");
  Definition built = from_builder(p);
  EXPECT_EQ(from_file.canonical_text(), built.canonical_text());
  EXPECT_EQ(from_file.sha1(), built.sha1());
  EXPECT_EQ(from_file.nodes, built.nodes);
  Definition back = Definition::from_json(from_file.to_json(), from_file.pipeline, "snapshot");
  EXPECT_EQ(back.canonical_text(), from_file.canonical_text());
  Json sdk_doc = parse_json(p.dump());
  EXPECT_EQ(sdk_doc["pipeline"].as_string(), from_file.pipeline);
  sdk_doc.as_object().erase("pipeline");
  EXPECT_EQ(sdk_doc.dump(), from_file.canonical_text());
}

// --- the file grammar ------------------------------------------------------

TEST(Definition, ChainCompilesToCanonicalJson) {
  Definition d = compile_definition_text("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n  - chain: A\n", "p.yml");
  ASSERT_EQ(d.nodes.size(), 3u);
  EXPECT_EQ(d.nodes[0].rfind("A.", 0), 0u);
  EXPECT_EQ(d.nodes[0].size(), 10u);  // "A." + 8 hex
  EXPECT_NE(d.nodes[0], d.nodes[2]);  // same class twice: distinct nodes
  Json doc = d.to_json();
  EXPECT_EQ(doc["edges"][d.nodes[0]]["type"].as_string(), "chain");
  EXPECT_EQ(doc["edges"][d.nodes[0]]["to"], Json::array({d.nodes[1]}));
  EXPECT_EQ(doc["edges"][d.nodes[2]], Json::object({{"klass", "A"}}));
  EXPECT_EQ(d.step_classes(), (std::vector<std::string>{"A", "B"}));
}

TEST(Definition, NodeNamesAreFnv1aOfPipelineOrdinalAndClass) {
  // FNV-1a 32 of "IncTwice:0:Inc" and "IncTwice:1:Inc" (docs/definitions.md).
  Definition d = compile_definition_text("pipeline: IncTwice\nsteps:\n  - start: Inc\n  - chain: Inc\n", "p.yml");
  EXPECT_EQ(d.nodes, (std::vector<std::string>{"Inc.4e2b4251", "Inc.ad9c4b06"}));
  EXPECT_EQ(d.canonical_text(),
            R"({"edges":{"Inc.4e2b4251":{"klass":"Inc","to":["Inc.ad9c4b06"],"type":"chain"},)"
            R"("Inc.ad9c4b06":{"klass":"Inc"}},"metadata":{},"nodes":["Inc.4e2b4251","Inc.ad9c4b06"]})");
}

TEST(Definition, CompilingTwiceGivesTheSameGraphAndSha) {
  std::string text = "pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [C, D]]\n  - combine: E\n";
  EXPECT_EQ(compile_definition_text(text, "x").sha1(), compile_definition_text(text, "y").sha1());
}

TEST(Definition, JsonFilesUseTheSameGrammar) {
  Definition d = compile_definition_text(R"({"pipeline":"J","steps":[{"start":"A"},{"chain":"B"}]})", "j.json");
  EXPECT_EQ(d.pipeline, "J");
  EXPECT_EQ(d.nodes.size(), 2u);
  Definition full = compile_definition_text(
      R"({"pipeline":"J","on_halt":"H","steps":[{"start":"A"},{"divide":["B",["C","D"]]},{"combine":"E"},)"
      R"({"divert":{"k":"F","otherwise":["G",{"expand":"X"},{"collapse":"Y"}]}},{"converge":"Z"}]})",
      "j.json");
  EXPECT_EQ(full.nodes.size(), 10u);
  EXPECT_EQ(full.on_halt, "H");
}

TEST(Definition, DivideAndCombine) {
  Definition d = compile_definition_text(
      "pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [C, D]]\n  - combine: E\n", "p.yml");
  Json doc = d.to_json()["edges"];
  std::string a = node_of(d, "A"), b = node_of(d, "B"), c = node_of(d, "C"), dd = node_of(d, "D"),
              e = node_of(d, "E");
  EXPECT_EQ(d.nodes, (std::vector<std::string>{a, b, c, dd, e}));  // targets first, then the branch's chain
  EXPECT_EQ(doc[a], Json::object({{"klass", "A"}, {"type", "divide"}, {"to", Json::array({b, c})}}));
  EXPECT_EQ(doc[c], Json::object({{"klass", "C"}, {"type", "chain"}, {"to", Json::array({dd})}}));
  // Every branch end joins the combine, naming the node that divided.
  EXPECT_EQ(doc[b], Json::object({{"klass", "B"}, {"type", "combine"}, {"to", Json::array({e})},
                                 {"barrier_node", a}}));
  EXPECT_EQ(doc[dd], Json::object({{"klass", "D"}, {"type", "combine"}, {"to", Json::array({e})},
                                  {"barrier_node", a}}));
  EXPECT_EQ(doc[e], Json::object({{"klass", "E"}}));
  EXPECT_EQ(d.edge(b).barrier_nodes, std::vector<std::string>{a});
}

TEST(Definition, ExpandAndCollapse) {
  Definition d = compile_definition_text(
      "pipeline: P\nsteps:\n  - start: A\n  - expand: B\n  - chain: C\n  - collapse: D\n", "p.yml");
  Json doc = d.to_json()["edges"];
  std::string a = node_of(d, "A"), b = node_of(d, "B"), c = node_of(d, "C"), dd = node_of(d, "D");
  EXPECT_EQ(doc[a], Json::object({{"klass", "A"}, {"type", "expand"}, {"to", Json::array({b})}}));
  EXPECT_EQ(doc[b], Json::object({{"klass", "B"}, {"type", "chain"}, {"to", Json::array({c})}}));
  EXPECT_EQ(doc[c], Json::object({{"klass", "C"}, {"type", "collapse"}, {"to", Json::array({dd})},
                                  {"barrier_node", a}}));
}

TEST(Definition, DivertAndConverge) {
  Definition d = compile_definition_text(
      "pipeline: P\nsteps:\n  - start: A\n  - divert: {premium: Pr, otherwise: [St, Audit]}\n  - converge: Done\n",
      "p.yml");
  Json doc = d.to_json()["edges"];
  std::string a = node_of(d, "A"), pr = node_of(d, "Pr"), st = node_of(d, "St"), audit = node_of(d, "Audit"),
              done = node_of(d, "Done");
  EXPECT_EQ(d.nodes, (std::vector<std::string>{a, pr, st, audit, done}));  // routes in file order
  EXPECT_EQ(doc[a], Json::object({{"klass", "A"}, {"type", "divert"},
                                  {"to", Json::object({{"otherwise", st}, {"premium", pr}})}}));
  EXPECT_EQ(d.edge(a).routes, (std::map<std::string, std::string>{{"otherwise", st}, {"premium", pr}}));
  EXPECT_EQ(d.edge(a).to, (std::vector<std::string>{st, pr}));  // in key order
  EXPECT_EQ(doc[pr], Json::object({{"klass", "Pr"}, {"type", "converge"}, {"to", Json::array({done})}}));
  EXPECT_EQ(doc[st], Json::object({{"klass", "St"}, {"type", "chain"}, {"to", Json::array({audit})}}));
  EXPECT_EQ(doc[audit], Json::object({{"klass", "Audit"}, {"type", "converge"}, {"to", Json::array({done})}}));
}

TEST(Definition, OnHaltIsMetadataAndAStepClass) {
  Definition d = compile_definition_text("pipeline: P\non_halt: Notify\nsteps:\n  - start: A\n", "p.yml");
  EXPECT_EQ(d.on_halt, "Notify");
  EXPECT_EQ(d.to_json()["metadata"], Json::object({{"on_halt", Json::object({{"klass", "Notify"}})}}));
  EXPECT_EQ(d.step_classes(), (std::vector<std::string>{"A", "Notify"}));
}

TEST(Definition, BranchesNestEveryConstruct) {
  std::string yaml = R"(pipeline: Nest
steps:
  - start: A
  - divide:
      - [B, {expand: C}, {collapse: D}]
      - - E
        - divide: [F, G]
        - combine: H
      - - I
        - divert: {x: J, otherwise: K}
        - converge: L
  - combine: M
)";
  Definition d = compile_definition_text(yaml, "nest.yml");
  EXPECT_EQ(d.nodes.size(), 13u);
  EXPECT_EQ(d.edge(node_of(d, "C")).type, "collapse");
  EXPECT_EQ(d.edge(node_of(d, "C")).barrier_nodes, std::vector<std::string>{node_of(d, "B")});
  EXPECT_EQ(d.edge(node_of(d, "F")).barrier_nodes, std::vector<std::string>{node_of(d, "E")});
  // The branch ends (D, H, L) combine on the outer divide.
  for (const char* end : {"D", "H", "L"}) {
    EXPECT_EQ(d.edge(node_of(d, end)).type, "combine") << end;
    EXPECT_EQ(d.edge(node_of(d, end)).barrier_nodes, std::vector<std::string>{node_of(d, "A")}) << end;
  }
  std::vector<std::string> classes = d.step_classes();
  EXPECT_EQ(classes.size(), 13u);
}

TEST(Definition, OpenFanOutsAtTheEndOfStepsSimplyEnd) {
  Definition d = compile_definition_text("pipeline: P\nsteps:\n  - start: A\n  - expand: B\n", "p.yml");
  EXPECT_EQ(d.edge(node_of(d, "B")).type, "");
}

// --- one result: file == builder ---------------------------------------

TEST(DefinitionOneResult, EnrichUserDataFromSpec) {
  Pipeline p("EnrichUserData");
  p.start("QueryUsers")
      .expand("LoadUserData")
      .divide({"FetchFromSourceA", "FetchFromSourceB"}, [](std::vector<Branch>& b) { b[1].chain("NormalizeB"); })
      .combine("CollateUserData")
      .chain("UpdateUserData")
      .collapse("ReportSuccess")
      .on_halt("NotifyOps");
  expect_one_result(R"(pipeline: EnrichUserData
on_halt: NotifyOps
steps:
  - start: QueryUsers
  - expand: LoadUserData
  - divide:                 # each entry is one branch: a step or a chain of steps
      - FetchFromSourceA
      - [FetchFromSourceB, NormalizeB]
  - combine: CollateUserData
  - chain: UpdateUserData
  - collapse: ReportSuccess
)",
                    p);
}

TEST(DefinitionOneResult, DivertWithAChainedOtherwise) {
  Pipeline p("Route");
  p.start("Classify")
      .divert({{"premium", "PremiumPath"}, {"otherwise", "StandardPath"}},
              [](std::vector<Branch>& b) { b[1].chain("Audit"); })
      .converge("Done");
  expect_one_result(
      "pipeline: Route\nsteps:\n  - start: Classify\n"
      "  - divert: {premium: PremiumPath, otherwise: [StandardPath, Audit]}\n  - converge: Done\n",
      p);
}

TEST(DefinitionOneResult, NestedExpandCollapseWithSeveralTransitions) {
  Pipeline p("Nested");
  p.start("Orgs").expand("Teams").chain("Load").expand("Users").chain("Score").collapse("TeamScore").chain("Rank")
      .collapse("OrgReport").expand("Again").collapse("Final");
  expect_one_result(R"(pipeline: Nested
steps:
  - start: Orgs
  - expand: Teams
  - chain: Load
  - expand: Users
  - chain: Score
  - collapse: TeamScore
  - chain: Rank
  - collapse: OrgReport
  - expand: Again
  - collapse: Final
)",
                    p);
  Definition d = from_builder(p);
  EXPECT_EQ(d.edge(node_of(d, "Score")).barrier_nodes, std::vector<std::string>{node_of(d, "Load")});
  EXPECT_EQ(d.edge(node_of(d, "Rank")).barrier_nodes, std::vector<std::string>{node_of(d, "Orgs")});
  EXPECT_EQ(d.edge(node_of(d, "Again")).barrier_nodes, std::vector<std::string>{node_of(d, "OrgReport")});
}

TEST(DefinitionOneResult, DivideWithBranchesOfDifferentLengths) {
  Pipeline p("Uneven");
  p.start("A")
      .divide({"B", "C", "F"},
              [](std::vector<Branch>& b) {
                b[1].chain("D").chain("E");
                b[2].chain("G");
              })
      .combine("H");
  expect_one_result(R"(pipeline: Uneven
steps:
  - start: A
  - divide:
      - B
      - [C, D, E]
      - - F
        - G
  - combine: H
)",
                    p);
}

TEST(DefinitionOneResult, DivertInsideExpand) {
  Pipeline p("PerItem");
  p.start("List")
      .expand("Inspect")
      .divert({{"big", "Split"}, {"small", "Keep"}, {"otherwise", "Drop"}},
              [](std::vector<Branch>& b) { b[0].expand("Piece").collapse("Join"); })
      .converge("Tag")
      .collapse("Summary");
  expect_one_result(R"(pipeline: PerItem
steps:
  - start: List
  - expand: Inspect
  - divert:
      big: [Split, {expand: Piece}, {collapse: Join}]
      small: Keep
      otherwise: Drop
  - converge: Tag
  - collapse: Summary
)",
                    p);
  Definition d = from_builder(p);
  EXPECT_EQ(d.edge(node_of(d, "Tag")).barrier_nodes, std::vector<std::string>{node_of(d, "List")});
}

TEST(DefinitionOneResult, DivideWithoutBlockAndFanInOverSeveralEnds) {
  Pipeline p("Wide");
  p.start("A").divide({"B", "C"}).expand("D").collapse("E").combine("F");
  expect_one_result(
      "pipeline: Wide\nsteps:\n  - start: A\n  - divide: [B, C]\n  - expand: D\n  - collapse: E\n"
      "  - combine: F\n",
      p);
  Definition d = from_builder(p);
  // Two nodes expanded together: the collapse names both.
  EXPECT_EQ(d.edge(node_of(d, "D")).barrier_nodes, (std::vector<std::string>{node_of(d, "B"), node_of(d, "C")}));
  EXPECT_TRUE(d.to_json()["edges"][node_of(d, "D")]["barrier_node"].is_array());
}

TEST(DefinitionOneResult, ExactCanonicalTextOfTheDocsExample) {
  Pipeline p("Checkout");
  p.start("Charge").divert({{"gift", "Wrap"}, {"otherwise", "Ship"}}).converge("Receipt").on_halt("Refund");
  std::string yaml =
      "pipeline: Checkout\non_halt: Refund\nsteps:\n  - start: Charge\n"
      "  - divert: {gift: Wrap, otherwise: Ship}\n  - converge: Receipt\n";
  expect_one_result(yaml, p);
  Definition d = compile_definition_text(yaml, "checkout.yml");
  EXPECT_EQ(d.canonical_text(),
            R"({"edges":{"Charge.e3d22053":{"klass":"Charge","to":{"gift":"Wrap.c080f742",)"
            R"("otherwise":"Ship.ff3e1a0b"},)"
            R"("type":"divert"},"Receipt.22eea4f0":{"klass":"Receipt"},"Ship.ff3e1a0b":{"klass":"Ship","to":)"
            R"(["Receipt.22eea4f0"],"type":"converge"},"Wrap.c080f742":{"klass":"Wrap","to":["Receipt.22eea4f0"],)"
            R"("type":"converge"}},"metadata":{"on_halt":{"klass":"Refund"}},"nodes":["Charge.e3d22053",)"
            R"("Wrap.c080f742","Ship.ff3e1a0b","Receipt.22eea4f0"]})");
  EXPECT_EQ(d.sha1(), "981fbb19b53701815ce120404df801da7ea6c1d8");
}

TEST(DefinitionOneResult, TheFullLanguageFixture) {
  std::string path = std::string(DUCTWORK_SOURCE_DIR) + "/tests/fixtures/definitions/full_language.yml";
  Pipeline p("FullLanguage");
  p.on_halt("RecordHalt")
      .start("Range")
      .expand("Inc")
      .divide({"Double", "Inc", "Echo"},
              [](std::vector<Branch>& b) {
                b[1].chain("Double");
                b[2].divert({{"3", "Double"}, {"otherwise", "Echo"}}, [](std::vector<Branch>& r) { r[1].chain("Inc"); })
                    .converge("Echo");
              })
      .combine("Sum")
      .collapse("Sum")
      .divert({{"0", "Echo"}, {"otherwise", "Inc"}},
              [](std::vector<Branch>& b) { b[1].expand("Range").collapse("Sum"); })
      .converge("Echo");
  expect_one_result(testsupport::read_file(path), p);
  DefinitionSet set = load_definition_directory(std::string(DUCTWORK_SOURCE_DIR) + "/tests/fixtures/definitions");
  ASSERT_NE(set.find("FullLanguage"), nullptr);
  EXPECT_EQ(set.find("FullLanguage")->sha1(), from_builder(p).sha1());
}

// --- file rules and their messages --------------------------------------

TEST(DefinitionRules, StartNameAndShapeRules) {
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - chain: A\n"),
            "defs/p.yml:3: pipeline P: the first entry must be 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - start: B\n"),
            "defs/p.yml:4: pipeline P: exactly one 'start', and it comes first");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [C, {start: D}]]\n"),
            "defs/p.yml:4: pipeline P: exactly one 'start', and it comes first");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - bogus: B\n"),
            "defs/p.yml:4: pipeline P: unknown keyword 'bogus' (expected chain, divide, combine, expand, collapse, "
            "divert, converge, dampen, await or invoke)");
  EXPECT_EQ(error_of("steps:\n  - start: A\n"), "defs/p.yml:1: 'pipeline' must name the pipeline");
  EXPECT_EQ(error_of("pipeline: P\nsteps: []\n"),
            "defs/p.yml:2: pipeline P: 'steps' must be a non-empty list starting with '- start: StepName'");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: [A, B]\n"),
            "defs/p.yml:3: pipeline P: 'start' takes one step name");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - chain:\n"),
            "defs/p.yml:4: pipeline P: 'chain' takes one step name");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: 'A B'\n"),
            "defs/p.yml:3: pipeline P: step name 'A B' may only contain letters, digits, '_', ':' and '-'");
  EXPECT_EQ(error_of("pipeline: P\nextra: 1\nsteps:\n  - start: A\n"),
            "defs/p.yml:2: unknown key 'extra' (expected 'pipeline', 'steps', 'on_halt', 'priority', "
            "'concurrency', 'rate_limit' and 'schedules')");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n    chain: B\n"),
            "defs/p.yml:3: pipeline P: each entry of 'steps' is one 'keyword: StepName' pair");
  EXPECT_EQ(error_of("- just a list\n"), "defs/p.yml:1: a definition file must be a map with 'pipeline' and 'steps'");
  std::string e = error_of("pipeline: P\nsteps: [start: A\n");
  EXPECT_EQ(e.rfind("defs/p.yml:", 0), 0u) << e;
  EXPECT_NE(e.find("not valid YAML/JSON"), std::string::npos) << e;
}

TEST(DefinitionRules, FanInsCloseTheInnermostFanOutOfTheirKind) {
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - combine: B\n"),
            "defs/p.yml:4: pipeline P: 'combine' needs an open 'divide'");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - collapse: B\n"),
            "defs/p.yml:4: pipeline P: 'collapse' needs an open 'expand'");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - converge: B\n"),
            "defs/p.yml:4: pipeline P: 'converge' needs an open 'divert'");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, C]\n  - expand: D\n  - combine: E\n"),
            "defs/p.yml:6: pipeline P: ambiguous 'combine': the innermost open fan-out is an 'expand' (close it "
            "with 'collapse' first)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - expand: B\n  - divide: [C]\n  - collapse: E\n"),
            "defs/p.yml:6: pipeline P: ambiguous 'collapse': the innermost open fan-out is a 'divide' (close it "
            "with 'combine' first)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divert: {otherwise: B}\n  - combine: E\n"),
            "defs/p.yml:5: pipeline P: ambiguous 'combine': the innermost open fan-out is a 'divert' (close it "
            "with 'converge' first)");
}

TEST(DefinitionRules, DivertNeedsOtherwise) {
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divert: {premium: B, standard: C}\n"),
            "defs/p.yml:4: pipeline P: 'divert' needs an 'otherwise' target");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divert: [B, C]\n"),
            "defs/p.yml:4: pipeline P: 'divert' takes a map of routing key -> branch, with an 'otherwise' key");
}

TEST(DefinitionRules, BranchRules) {
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [C, {expand: D}]]\n"),
            "defs/p.yml:4: pipeline P: branch 2 of 'divide' leaves an 'expand' open (close it inside the branch)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divert: {otherwise: [C, {divide: [D]}]}\n"),
            "defs/p.yml:4: pipeline P: branch 1 ('otherwise') of 'divert' leaves a 'divide' open (close it inside "
            "the branch)");
  // A branch may not close a fan-out opened outside it.
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - expand: X\n  - divide: [B, [C, {collapse: D}]]\n"),
            "defs/p.yml:5: pipeline P: 'collapse' needs an open 'expand'");
  // An error inside a block-style branch names that entry's line.
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide:\n      - B\n      - - C\n        - "
                     "combine: D\n"),
            "defs/p.yml:7: pipeline P: 'combine' needs an open 'divide'");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [{chain: C}]]\n"),
            "defs/p.yml:4: pipeline P: a branch list starts with a bare step name (the branch's first step)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, []]\n"),
            "defs/p.yml:4: pipeline P: a branch of 'divide' is a step name or a list starting with one");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: []\n"),
            "defs/p.yml:4: pipeline P: 'divide' takes a list of branches (each a step name or a list starting "
            "with one)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: B\n"),
            "defs/p.yml:4: pipeline P: 'divide' takes a list of branches (each a step name or a list starting "
            "with one)");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [C, [D]]]\n"),
            "defs/p.yml:4: pipeline P: each later entry of a branch is a step name (chain) or one 'keyword: "
            "StepName' pair");
  EXPECT_EQ(error_of("pipeline: P\nsteps:\n  - start: A\n  - divide: [B, 'C D']\n"),
            "defs/p.yml:4: pipeline P: step name 'C D' may only contain letters, digits, '_', ':' and '-'");
}

TEST(DefinitionRules, OnHaltNamesOneStep) {
  EXPECT_EQ(error_of("pipeline: P\non_halt: [A]\nsteps:\n  - start: A\n"),
            "defs/p.yml:2: pipeline P: 'on_halt' takes one step name");
  EXPECT_EQ(error_of("pipeline: P\non_halt: 'x y'\nsteps:\n  - start: A\n"),
            "defs/p.yml:2: pipeline P: step name 'x y' may only contain letters, digits, '_', ':' and '-'");
}

// --- canonical JSON rules (plugin-exported definitions) --------------------

// A valid canonical document (from the builder) to break one rule at a time.
Json sample() {
  Pipeline p("S");
  p.start("A").expand("B").divide({"C", "D"}).combine("E").collapse("F")
      .divert({{"k", "G"}, {"otherwise", "H"}}).converge("I").on_halt("Z");
  return parse_json(p.dump());
}

std::string json_error_of(const Json& doc, bool strict = true) {
  try {
    Definition::from_json(doc, "S", "plugin x (/p/x.so)", strict);
  } catch (const DefinitionError& e) {
    return e.what();
  }
  return "(no error)";
}

// The node of class `klass` in a canonical document.
std::string named(const Json& doc, const std::string& klass) {
  for (const auto& [node, edge] : doc["edges"].as_object()) {
    if (edge["klass"].as_string() == klass) return node;
  }
  ADD_FAILURE() << klass;
  return "";
}

TEST(DefinitionJson, SampleIsValidAndRoundTrips) {
  Json doc = sample();
  Definition d = Definition::from_json(doc, "S", "plugin x");
  doc.as_object().erase("pipeline");
  EXPECT_EQ(d.to_json(), doc);
  EXPECT_EQ(d.on_halt, "Z");
}

TEST(DefinitionJson, EdgeTypesAndTargets) {
  const std::string prefix = "plugin x (/p/x.so): pipeline S: ";
  Json doc = sample();
  std::string a = named(doc, "A"), b = named(doc, "B"), c = named(doc, "C"), e = named(doc, "E"),
              f = named(doc, "F"), i = named(doc, "I");

  Json d = doc;
  d["edges"][a]["type"] = "jump";
  EXPECT_EQ(json_error_of(d), prefix + "node " + a +
                                  ": unknown edge type 'jump' (expected chain, divide, combine, expand, collapse, "
                                  "divert, converge, dampen, await or invoke)");
  EXPECT_EQ(json_error_of(d, /*strict=*/false), "(no error)");  // snapshots: routing halts it instead

  d = doc;
  d["edges"][a]["to"] = Json::array({"Nope.00000000"});
  EXPECT_EQ(json_error_of(d), prefix + "node " + a + ": targets Nope.00000000, which is not in \"nodes\"");

  d = doc;
  d["edges"][i] = Json::object({{"klass", "I"}, {"type", "chain"}, {"to", Json::array({a})}});
  EXPECT_EQ(json_error_of(d),
            prefix + "node " + i + ": targets the start node " + a + " (nothing may lead back to nodes[0])");

  d = doc;
  d["edges"][e]["to"] = Json::array({f, i});
  EXPECT_EQ(json_error_of(d), prefix + "node " + e + ": a 'collapse' edge has exactly one target");

  d = doc;
  d["edges"][b]["to"] = Json::array();
  EXPECT_EQ(json_error_of(d), prefix + "edge of " + b + " must list its targets in \"to\"");

  d = doc;
  d["edges"][i]["to"] = Json::array({f});
  EXPECT_EQ(json_error_of(d), prefix + "node " + i + ": \"to\" without a \"type\"");

  d = doc;
  d["nodes"].push_back(c);
  EXPECT_EQ(json_error_of(d), prefix + "node " + c + ": listed twice in \"nodes\"");

  d = doc;
  d["nodes"].push_back("Extra.00000000");
  EXPECT_EQ(json_error_of(d), prefix + "node Extra.00000000 has no entry in \"edges\"");

  d = doc;
  d["edges"]["Extra.00000000"] = Json::object({{"klass", "Extra"}});
  EXPECT_EQ(json_error_of(d), prefix + "\"edges\" has an entry for Extra.00000000, which is not in \"nodes\"");

  d = doc;
  d["edges"][c]["klass"] = "Bad Name";
  EXPECT_EQ(json_error_of(d),
            prefix + "node " + c + ": step name 'Bad Name' may only contain letters, digits, '_', ':' and '-'");

  d = doc;
  d["nodes"] = Json::array();
  EXPECT_EQ(json_error_of(d), prefix + "\"nodes\" must be a non-empty list (nodes[0] is the start)");
}

TEST(DefinitionJson, DivertIsAMapWithOtherwise) {
  const std::string prefix = "plugin x (/p/x.so): pipeline S: ";
  Json doc = sample();
  std::string f = named(doc, "F"), g = named(doc, "G"), h = named(doc, "H");
  Json d = doc;
  d["edges"][f]["to"] = Json::array({g, h});
  EXPECT_EQ(json_error_of(d),
            prefix + "node " + f + ": a 'divert' edge's \"to\" must be an object of routing key -> node");
  d = doc;
  d["edges"][f]["to"] = Json::object({{"k", g}, {"other", h}});
  EXPECT_EQ(json_error_of(d), prefix + "node " + f + ": 'divert' needs an 'otherwise' target");
}

TEST(DefinitionJson, FanInsNameTheirFanOutNodes) {
  const std::string prefix = "plugin x (/p/x.so): pipeline S: ";
  Json doc = sample();
  std::string a = named(doc, "A"), b = named(doc, "B"), c = named(doc, "C"), e = named(doc, "E");

  Json d = doc;
  d["edges"][e].as_object().erase("barrier_node");  // E collapses A's expand (to F)
  EXPECT_EQ(json_error_of(d),
            prefix + "node " + e + ": a 'collapse' edge names the node(s) of its 'expand' in \"barrier_node\"");
  d = doc;
  d["edges"][e]["barrier_node"] = b;  // B divides, it does not expand
  EXPECT_EQ(json_error_of(d), prefix + "node " + e + ": barrier_node " + b +
                                  " does not carry an 'expand' edge (a 'collapse' closes an 'expand')");
  d = doc;
  d["edges"][c]["barrier_node"] = a;  // C combines B's divide
  EXPECT_EQ(json_error_of(d), prefix + "node " + c + ": barrier_node " + a +
                                  " does not carry a 'divide' edge (a 'combine' closes a 'divide')");
  d = doc;
  d["edges"][c]["barrier_node"] = Json::array({b, "Nope.00000000"});
  EXPECT_EQ(json_error_of(d), prefix + "node " + c + ": barrier_node Nope.00000000 is not in \"nodes\"");
  d = doc;
  d["edges"][a]["barrier_node"] = b;
  EXPECT_EQ(json_error_of(d), prefix + "node " + a + ": only 'collapse' and 'combine' edges have a \"barrier_node\"");
  d = doc;
  d["edges"][c]["barrier_node"] = 7;
  EXPECT_EQ(json_error_of(d), prefix + "node " + c + ": \"barrier_node\" must be a node name or a list of them");
}

TEST(DefinitionJson, OnHaltIsWellFormed) {
  const std::string prefix = "plugin x (/p/x.so): pipeline S: ";
  Json d = sample();
  d["metadata"]["on_halt"] = "Z";
  EXPECT_EQ(json_error_of(d), prefix + "metadata.on_halt must be {\"klass\": \"StepName\"}");
  d["metadata"]["on_halt"] = Json::object({{"klass", "a b"}});
  EXPECT_EQ(json_error_of(d),
            prefix + "metadata.on_halt: step name 'a b' may only contain letters, digits, '_', ':' and '-'");
  d["metadata"] = 3;
  EXPECT_EQ(json_error_of(d), prefix + "\"metadata\" must be an object");
}

// --- plugin-exported pipelines ------------------------------------------

TEST(DefinitionCatalog, PluginPipelinesAreValidatedStrictlyAndNameThePlugin) {
  Logger logger(stderr, Logger::Format::kJson, LogLevel::kError);
  PluginRegistry plugins;
  std::string path = std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libfixture_pipelines.so";
  ASSERT_TRUE(plugins.load_file(path, logger));
  testsupport::TempDir dir;
  dir.write("good.yml", "pipeline: FromFile\nsteps:\n  - start: A\n");

  std::vector<std::string> problems;
  DefinitionSet set = load_catalog(dir.path(), plugins, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "plugin pipelines (" + path +
                             "): pipeline HandWritten: node B.1: a 'collapse' edge names the node(s) of its 'expand' "
                             "in \"barrier_node\"");
  ASSERT_NE(set.find("FromFile"), nullptr);
  ASSERT_NE(set.find("BuiltByPlugin"), nullptr);
  EXPECT_EQ(set.find("HandWritten"), nullptr);
  EXPECT_EQ(set.sources.at("BuiltByPlugin"), "plugin pipelines (" + path + ")");
  // The builder in the plugin and the file compiler agree to the byte.
  Definition from_file = compile_definition_text(
      "pipeline: BuiltByPlugin\nsteps:\n  - start: A\n  - expand: B\n  - divert: {x: C, otherwise: D}\n"
      "  - converge: E\n  - collapse: F\n",
      "built.yml");
  EXPECT_EQ(set.find("BuiltByPlugin")->canonical_text(), from_file.canonical_text());

  // Without a problem list the broken pipeline stops the load.
  try {
    load_catalog(dir.path(), plugins);
    ADD_FAILURE() << "expected a DefinitionError";
  } catch (const DefinitionError& e) {
    EXPECT_EQ(std::string(e.what()), problems[0]);
  }
}

// --- directories ---------------------------------------------------------

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

TEST(Definition, DirectoryLoadCanCollectEveryBrokenFile) {
  testsupport::TempDir dir;
  dir.write("a.yml", "pipeline: A\nsteps:\n  - start: X\n  - combine: Y\n");
  dir.write("b.yml", "pipeline: B\nsteps:\n  - start: X\n");
  dir.write("c.yml", "pipeline: C\nsteps:\n  - start: X\n  - divert: {k: Y}\n");
  dir.write("d.yml", "pipeline: B\nsteps:\n  - start: Z\n");
  std::vector<std::string> problems;
  DefinitionSet set = load_definition_directory(dir.path(), &problems);
  EXPECT_EQ(set.pipelines.size(), 1u);
  EXPECT_NE(set.find("B"), nullptr);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], dir.path() + "/a.yml:4: pipeline A: 'combine' needs an open 'divide'");
  EXPECT_EQ(problems[1], dir.path() + "/c.yml:4: pipeline C: 'divert' needs an 'otherwise' target");
  EXPECT_NE(problems[2].find("already defined"), std::string::npos) << problems[2];
  // Without the list the first broken file throws.
  EXPECT_THROW(load_definition_directory(dir.path()), DefinitionError);
}

}  // namespace
}  // namespace ductwork

namespace ductwork {
namespace {

// Found by fuzz_definition (fuzz/regressions/definition/): a divert routing
// key that is not UTF-8 escaped the compiler as a JSON printing error.
TEST(Definition, ADivertRoutingKeyMustBeText) {
  std::string text = std::string("pipeline: P\nsteps:\n  - start: A\n  - divert:\n      \"k\xff\": B\n") +
                     "      otherwise: C\n  - converge: D\n";
  EXPECT_EQ(error_of(text), "defs/p.yml:4: pipeline P: 'divert' routing key 'k\\xff' is not valid UTF-8 text");
}

}  // namespace
}  // namespace ductwork
