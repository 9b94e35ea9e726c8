// The fluent pipeline builder (pipeline.hpp): the JSON each operation
// produces, branches, node naming, every rule with its message, and
// DUCTWORK_PIPELINE exporting through the plugin table. Built as C++17, like
// a plugin author's code.
#include <ductwork/step.hpp>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plugin_harness.h"

namespace buildertest {

ductwork::Pipeline checkout() {
  ductwork::Pipeline p("Checkout");
  p.start("Charge").divert({{"gift", "Wrap"}, {"otherwise", "Ship"}}).converge("Receipt").on_halt("Refund");
  return p;
}

// An expression on a temporary, a function call, and a lambda whose body has
// top-level commas (the macro is variadic).
DUCTWORK_PIPELINE(ductwork::Pipeline("Linear").start("A").chain("B"));
DUCTWORK_PIPELINE(checkout());
DUCTWORK_PIPELINE([] {
  ductwork::Pipeline p("Fan");
  std::vector<std::string> targets{"X", "Y"};
  p.start("S").divide(targets).combine("Z");
  return p;
}());

}  // namespace buildertest

namespace ductwork {
namespace {

std::string error_of(const std::function<void()>& build) {
  try {
    build();
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "(no error)";
}

// The node of class `klass` in a built document (exactly one expected).
std::string node_of(const Json& doc, const std::string& klass) {
  std::string found;
  int count = 0;
  for (const auto& [node, edge] : doc["edges"].as_object()) {
    if (edge["klass"] == Json(klass)) {
      found = node;
      ++count;
    }
  }
  EXPECT_EQ(count, 1) << klass;
  return found;
}

Json strings(const std::vector<std::string>& items) {
  Json out = Json::array();
  for (const auto& s : items) out.push_back(s);
  return out;
}

TEST(PipelineBuilder, StartAloneIsOneNodeWithoutEdge) {
  Pipeline p("One");
  p.start("A");
  // FNV-1a 32 of "One:0:A" is 0x4aa19bbc.
  EXPECT_EQ(p.dump(),
            R"({"edges":{"A.4aa19bbc":{"klass":"A"}},"metadata":{},"nodes":["A.4aa19bbc"],"pipeline":"One"})");
  EXPECT_EQ(p.name(), "One");
}

TEST(PipelineBuilder, ChainLinksTheEnd) {
  Pipeline p("P");
  p.start("A").chain("B").chain("A");
  Json doc = p.to_json();
  const auto& nodes = doc["nodes"].as_array();
  ASSERT_EQ(nodes.size(), 3u);
  std::string a0 = nodes[0].as_string(), b = nodes[1].as_string(), a1 = nodes[2].as_string();
  EXPECT_NE(a0, a1);
  EXPECT_EQ(doc["edges"][a0], Json::object({{"klass", "A"}, {"type", "chain"}, {"to", strings({b})}}));
  EXPECT_EQ(doc["edges"][b], Json::object({{"klass", "B"}, {"type", "chain"}, {"to", strings({a1})}}));
  EXPECT_EQ(doc["edges"][a1], Json::object({{"klass", "A"}}));
  EXPECT_EQ(doc["metadata"], Json::object());
}

TEST(PipelineBuilder, DivideAndCombine) {
  Pipeline p("P");
  p.start("A").divide({"B", "C"}).combine("D");
  Json doc = p.to_json();
  std::string a = node_of(doc, "A"), b = node_of(doc, "B"), c = node_of(doc, "C"), d = node_of(doc, "D");
  EXPECT_EQ(doc["nodes"], strings({a, b, c, d}));
  EXPECT_EQ(doc["edges"][a], Json::object({{"klass", "A"}, {"type", "divide"}, {"to", strings({b, c})}}));
  Json combine = Json::object({{"klass", "B"}, {"type", "combine"}, {"to", strings({d})}, {"barrier_node", a}});
  EXPECT_EQ(doc["edges"][b], combine);
  combine["klass"] = "C";
  EXPECT_EQ(doc["edges"][c], combine);
  EXPECT_EQ(doc["edges"][d], Json::object({{"klass", "D"}}));
}

TEST(PipelineBuilder, ExpandAndCollapse) {
  Pipeline p("P");
  p.start("A").expand("B").collapse("C");
  Json doc = p.to_json();
  std::string a = node_of(doc, "A"), b = node_of(doc, "B"), c = node_of(doc, "C");
  EXPECT_EQ(doc["edges"][a], Json::object({{"klass", "A"}, {"type", "expand"}, {"to", strings({b})}}));
  EXPECT_EQ(doc["edges"][b],
            Json::object({{"klass", "B"}, {"type", "collapse"}, {"to", strings({c})}, {"barrier_node", a}}));
}

TEST(PipelineBuilder, DivertIsAMapAndConvergeHasNoBarrier) {
  Pipeline p("P");
  p.start("A").divert({{"premium", "Pr"}, {"otherwise", "St"}}).converge("Done");
  Json doc = p.to_json();
  std::string a = node_of(doc, "A"), pr = node_of(doc, "Pr"), st = node_of(doc, "St"), done = node_of(doc, "Done");
  EXPECT_EQ(doc["nodes"], strings({a, pr, st, done}));  // nodes in the order given
  EXPECT_EQ(doc["edges"][a], Json::object({{"klass", "A"},
                                           {"type", "divert"},
                                           {"to", Json::object({{"premium", pr}, {"otherwise", st}})}}));
  EXPECT_EQ(doc["edges"][pr], Json::object({{"klass", "Pr"}, {"type", "converge"}, {"to", strings({done})}}));
  EXPECT_EQ(doc["edges"][st], Json::object({{"klass", "St"}, {"type", "converge"}, {"to", strings({done})}}));
}

TEST(PipelineBuilder, OnHaltIsMetadataAtAnyTime) {
  Pipeline p("P");
  p.on_halt("Notify").start("A");
  EXPECT_EQ(p.to_json()["metadata"], Json::object({{"on_halt", Json::object({{"klass", "Notify"}})}}));
}

TEST(PipelineBuilder, DivideBlockExtendsEachBranch) {
  Pipeline p("P");
  p.start("A")
      .divide({"B", "C", "D"},
              [](std::vector<Branch>& b) {
                ASSERT_EQ(b.size(), 3u);
                b[0].chain("B2").chain("B3");
                b[2].expand("E").collapse("F");
              })
      .combine("J");
  Json doc = p.to_json();
  std::string a = node_of(doc, "A"), b = node_of(doc, "B"), c = node_of(doc, "C"), d = node_of(doc, "D"),
              b2 = node_of(doc, "B2"), b3 = node_of(doc, "B3"), e = node_of(doc, "E"), f = node_of(doc, "F"),
              j = node_of(doc, "J");
  // Targets first, then each branch's nodes in the order the block made them.
  EXPECT_EQ(doc["nodes"], strings({a, b, c, d, b2, b3, e, f, j}));
  EXPECT_EQ(doc["edges"][b]["to"], strings({b2}));
  EXPECT_EQ(doc["edges"][d], Json::object({{"klass", "D"}, {"type", "expand"}, {"to", strings({e})}}));
  EXPECT_EQ(doc["edges"][e]["barrier_node"], Json(d));
  // Every branch end (B3, C, F) joins J and names A, the node that divided.
  for (const auto& end : {b3, c, f}) {
    EXPECT_EQ(doc["edges"][end]["type"], Json("combine")) << end;
    EXPECT_EQ(doc["edges"][end]["to"], strings({j})) << end;
    EXPECT_EQ(doc["edges"][end]["barrier_node"], Json(a)) << end;
  }
}

TEST(PipelineBuilder, DivertBlockExtendsEachRoute) {
  Pipeline p("P");
  p.start("A")
      .divert({{"premium", "Pr"}, {"otherwise", "St"}}, [](std::vector<Branch>& b) { b[1].chain("Audit"); })
      .converge("Done");
  Json doc = p.to_json();
  std::string st = node_of(doc, "St"), audit = node_of(doc, "Audit"), done = node_of(doc, "Done");
  EXPECT_EQ(doc["edges"][st], Json::object({{"klass", "St"}, {"type", "chain"}, {"to", strings({audit})}}));
  EXPECT_EQ(doc["edges"][audit], Json::object({{"klass", "Audit"}, {"type", "converge"}, {"to", strings({done})}}));
}

TEST(PipelineBuilder, BranchesNestEveryConstruct) {
  Pipeline p("P");
  p.start("A")
      .divide({"B", "C"},
              [](std::vector<Branch>& b) {
                b[0].divide({"D", "E"}, [](std::vector<Branch>& inner) { inner[0].chain("D2"); }).combine("F");
                b[1].divert({{"x", "G"}, {"otherwise", "H"}}).converge("I");
              })
      .combine("J");
  Json doc = p.to_json();
  EXPECT_EQ(doc["edges"][node_of(doc, "D2")]["barrier_node"], Json(node_of(doc, "B")));
  EXPECT_EQ(doc["edges"][node_of(doc, "F")]["barrier_node"], Json(node_of(doc, "A")));
  EXPECT_EQ(doc["edges"][node_of(doc, "I")]["barrier_node"], Json(node_of(doc, "A")));
  EXPECT_EQ(doc["edges"][node_of(doc, "J")], Json::object({{"klass", "J"}}));
}

TEST(PipelineBuilder, NestedExpandsCollapseInnermostFirst) {
  Pipeline p("P");
  p.start("A").expand("B").expand("C").collapse("D").chain("E").collapse("F").expand("G").chain("H").collapse("I");
  Json doc = p.to_json();
  EXPECT_EQ(doc["edges"][node_of(doc, "C")]["barrier_node"], Json(node_of(doc, "B")));
  EXPECT_EQ(doc["edges"][node_of(doc, "E")]["barrier_node"], Json(node_of(doc, "A")));
  EXPECT_EQ(doc["edges"][node_of(doc, "H")]["barrier_node"], Json(node_of(doc, "F")));
  EXPECT_EQ(doc["edges"][node_of(doc, "F")]["type"], Json("expand"));
}

TEST(PipelineBuilder, BarrierIsAListWhenSeveralNodesFannedOut) {
  Pipeline p("P");
  p.start("A").divide({"B", "C"}).expand("D").collapse("E");
  Json doc = p.to_json();
  std::string b = node_of(doc, "B"), c = node_of(doc, "C"), d = node_of(doc, "D");
  EXPECT_EQ(doc["edges"][b], Json::object({{"klass", "B"}, {"type", "expand"}, {"to", strings({d})}}));
  EXPECT_EQ(doc["edges"][c], Json::object({{"klass", "C"}, {"type", "expand"}, {"to", strings({d})}}));
  EXPECT_EQ(doc["edges"][d]["barrier_node"], strings({b, c}));

  Pipeline q("Q");  // a combine after a divide of several ends names them all
  q.start("A").divide({"B", "C"}).divide({"D"}).combine("E");
  Json qdoc = q.to_json();
  EXPECT_EQ(qdoc["edges"][node_of(qdoc, "D")]["barrier_node"], strings({node_of(qdoc, "B"), node_of(qdoc, "C")}));
}

TEST(PipelineBuilder, OpenFanOutsMayEndThePipeline) {
  Pipeline p("P");
  p.start("A").divide({"B", "C"}).expand("D");
  Json doc = p.to_json();
  EXPECT_EQ(doc["edges"][node_of(doc, "D")], Json::object({{"klass", "D"}}));
}

TEST(PipelineBuilder, BuildingTwiceGivesIdenticalText) {
  auto build = [] {
    Pipeline p("Same");
    p.start("A").expand("B").divide({"C", "D"}, [](std::vector<Branch>& b) { b[0].chain("E"); }).combine("F")
        .collapse("G").divert({{"k", "H"}, {"otherwise", "I"}}).converge("J").on_halt("K");
    return p.dump();
  };
  // Pinned: the canonical text is what runs store and definitions are
  // hashed by, so any change to node naming or layout must show here (and
  // would orphan the snapshots of runs in flight).
  const std::string pinned =
      R"JSON({"edges":{"A.a5a8ce68":{"klass":"A","to":["B.f22f29e2"],"type":"expand"},"B.f22f29e2":{"klass":"B","to":["C.6e97bbd8","D.0709743e"],"type":"divide"},"C.6e97bbd8":{"klass":"C","to":["E.3e592338"],"type":"chain"},"D.0709743e":{"barrier_node":"B.f22f29e2","klass":"D","to":["F.b179e6ba"],"type":"combine"},"E.3e592338":{"barrier_node":"B.f22f29e2","klass":"E","to":["F.b179e6ba"],"type":"combine"},"F.b179e6ba":{"barrier_node":"A.a5a8ce68","klass":"F","to":["G.860a12a8"],"type":"collapse"},"G.860a12a8":{"klass":"G","to":{"k":"H.ae7cadbe","otherwise":"I.05a3eca8"},"type":"divert"},"H.ae7cadbe":{"klass":"H","to":["J.40ecfa72"],"type":"converge"},"I.05a3eca8":{"klass":"I","to":["J.40ecfa72"],"type":"converge"},"J.40ecfa72":{"klass":"J"}},"metadata":{"on_halt":{"klass":"K"}},"nodes":["A.a5a8ce68","B.f22f29e2","C.6e97bbd8","D.0709743e","E.3e592338","F.b179e6ba","G.860a12a8","H.ae7cadbe","I.05a3eca8","J.40ecfa72"],"pipeline":"Same"})JSON";
  EXPECT_EQ(build(), pinned);
  EXPECT_EQ(build(), build());
  Pipeline copy = buildertest::checkout();  // copies are independent and identical
  Pipeline other = copy;
  other.chain("Extra");
  EXPECT_EQ(copy.dump(), buildertest::checkout().dump());
  EXPECT_NE(other.dump(), copy.dump());
}

TEST(PipelineBuilder, NodeNamesAreFnv1aOfPipelineOrdinalAndClass) {
  EXPECT_EQ(detail::fnv1a_32(""), 2166136261u);
  EXPECT_EQ(detail::fnv1a_32("a"), 0xe40c292cu);
  EXPECT_EQ(detail::node_name("One", 0, "A", 0), "A.4aa19bbc");  // FNV-1a("One:0:A")
  EXPECT_EQ(detail::node_name("One", 0, "A", 2), "A.89725740");  // FNV-1a("One:0:A:2")
}

TEST(PipelineBuilder, ATakenNameIsRehashed) {
  // In pipeline R63842, FNV-1a("R63842:284:A") == FNV-1a("R63842:1878:A")
  // (found by search), so node 1878 of class A takes its ":1" name.
  ASSERT_EQ(detail::node_name("R63842", 284, "A", 0), detail::node_name("R63842", 1878, "A", 0));
  Pipeline p("R63842");
  p.start("A");
  for (int i = 1; i <= 1878; ++i) p.chain("A");
  Json doc = p.to_json();
  ASSERT_EQ(doc["nodes"].size(), 1879u);
  EXPECT_EQ(doc["nodes"][284], Json(detail::node_name("R63842", 284, "A", 0)));
  EXPECT_EQ(doc["nodes"][1878], Json(detail::node_name("R63842", 1878, "A", 1)));
  EXPECT_EQ(doc["edges"].size(), 1879u);  // every node kept its own entry
  EXPECT_EQ(doc["edges"][doc["nodes"][1877].as_string()]["to"], Json::array({doc["nodes"][1878]}));
}

// --- rules ---------------------------------------------------------------

TEST(PipelineBuilderRules, StartComesFirstAndOnce) {
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").start("B"); }), "exactly one 'start', and it comes first");
  EXPECT_EQ(error_of([] { Pipeline("P").chain("A"); }),
            "'chain' before 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of([] { Pipeline("P").divide({"A"}); }),
            "'divide' before 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of([] { Pipeline("P").expand("A"); }),
            "'expand' before 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of([] { Pipeline("P").divert({{"otherwise", "A"}}); }),
            "'divert' before 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of([] { Pipeline("P").dump(); }),
            "pipeline P has no 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of([] { Pipeline("P").on_halt("H").to_json(); }),
            "pipeline P has no 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(error_of([] { Pipeline(""); }), "a pipeline needs a non-empty name");
}

TEST(PipelineBuilderRules, FanInsNeedTheirFanOut) {
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").combine("B"); }), "'combine' needs an open 'divide'");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").collapse("B"); }), "'collapse' needs an open 'expand'");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").converge("B"); }), "'converge' needs an open 'divert'");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divide({"B"}).combine("C").combine("D"); }),
            "'combine' needs an open 'divide'");
}

TEST(PipelineBuilderRules, AmbiguousFanInsNameTheInnermost) {
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divide({"B"}).expand("C").combine("D"); }),
            "ambiguous 'combine': the innermost open fan-out is an 'expand' (close it with 'collapse' first)");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").expand("B").divide({"C"}).collapse("D"); }),
            "ambiguous 'collapse': the innermost open fan-out is a 'divide' (close it with 'combine' first)");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").expand("B").divert({{"otherwise", "C"}}).collapse("D"); }),
            "ambiguous 'collapse': the innermost open fan-out is a 'divert' (close it with 'converge' first)");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divert({{"otherwise", "C"}}).expand("B").converge("D"); }),
            "ambiguous 'converge': the innermost open fan-out is an 'expand' (close it with 'collapse' first)");
}

TEST(PipelineBuilderRules, DivideAndDivertTargets) {
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divide({}); }), "'divide' needs at least one target");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divert({{"premium", "B"}}); }),
            "'divert' needs an 'otherwise' target");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divert({}); }), "'divert' needs an 'otherwise' target");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divert({{"k", "B"}, {"k", "C"}, {"otherwise", "D"}}); }),
            "'divert' has the routing key 'k' twice");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divert({{"", "B"}, {"otherwise", "D"}}); }),
            "a 'divert' routing key may not be empty");
}

TEST(PipelineBuilderRules, BranchesCloseWhatTheyOpen) {
  EXPECT_EQ(error_of([] {
              Pipeline("P").start("A").divide({"B", "C"}, [](std::vector<Branch>& b) { b[1].expand("D"); });
            }),
            "branch 2 of 'divide' leaves an 'expand' open (close it inside the branch)");
  EXPECT_EQ(error_of([] {
              Pipeline("P").start("A").divert({{"k", "B"}, {"otherwise", "C"}},
                                             [](std::vector<Branch>& b) { b[0].divide({"D"}); });
            }),
            "branch 1 ('k') of 'divert' leaves a 'divide' open (close it inside the branch)");
  EXPECT_EQ(error_of([] {
              Pipeline("P").start("A").divide({"B"}, [](std::vector<Branch>& b) {
                b[0].divert({{"otherwise", "C"}});
              });
            }),
            "branch 1 of 'divide' leaves a 'divert' open (close it inside the branch)");
  // A branch cannot close a fan-out opened outside it.
  EXPECT_EQ(error_of([] {
              Pipeline("P").start("A").expand("X").divide({"B"}, [](std::vector<Branch>& b) { b[0].collapse("C"); });
            }),
            "'collapse' needs an open 'expand'");
  EXPECT_EQ(error_of([] {
              Pipeline("P").start("A").divide({"B"}, [](std::vector<Branch>& b) { b.clear(); });
            }),
            "the block of 'divide' must not add or remove branches");
}

TEST(PipelineBuilderRules, StepNames) {
  EXPECT_EQ(error_of([] { Pipeline("P").start("Foo Bar"); }),
            "step name 'Foo Bar' may only contain letters, digits, '_', ':' and '-'");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").chain(""); }), "a step name may not be empty");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divide({"B", "c/d"}); }),
            "step name 'c/d' may only contain letters, digits, '_', ':' and '-'");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").divert({{"otherwise", "x.y"}}); }),
            "step name 'x.y' may only contain letters, digits, '_', ':' and '-'");
  EXPECT_EQ(error_of([] { Pipeline("P").on_halt("a b"); }),
            "step name 'a b' may only contain letters, digits, '_', ':' and '-'");
  EXPECT_EQ(error_of([] { Pipeline("P").start("A").on_halt("H").on_halt("I"); }),
            "'on_halt' is given twice (a pipeline has one on-halt step)");
  EXPECT_EQ(error_of([] { Pipeline("P").start("Billing::Charge-2_b"); }), "(no error)");
}

TEST(PipelineBuilderRules, ErrorsAreLogicErrors) {
  EXPECT_THROW(Pipeline("P").start("A").combine("B"), std::logic_error);
}

// --- DUCTWORK_PIPELINE through the plugin table --------------------------

TEST(PipelineBuilderPlugin, RegisteredPipelinesAreInTheTable) {
  test::FakeHost host;
  const dw_plugin* plugin = detail::init_plugin("buildertest", "1.0.0", host.api());
  ASSERT_NE(plugin, nullptr);
  ASSERT_EQ(plugin->pipeline_count, 3u);
  EXPECT_EQ(std::string(plugin->pipelines_json[0]),
            Pipeline("Linear").start("A").chain("B").dump());
  EXPECT_EQ(std::string(plugin->pipelines_json[1]), buildertest::checkout().dump());
  Json fan = Json::parse(plugin->pipelines_json[2]);
  EXPECT_EQ(fan["pipeline"], Json("Fan"));
  EXPECT_EQ(fan["nodes"].size(), 4u);
  Json checkout = Json::parse(plugin->pipelines_json[1]);
  EXPECT_EQ(checkout["metadata"]["on_halt"]["klass"], Json("Refund"));
}

TEST(PipelineBuilderPlugin, ABuilderErrorFailsTheTable) {
  test::FakeHost host;
  ASSERT_NE(detail::init_plugin("buildertest", "1.0.0", host.api()), nullptr);  // built before the bad one
  detail::pipeline_registry().push_back([] { return Pipeline("Bad").start("A").combine("B").dump(); });
  try {
    detail::PluginTable table("buildertest", "1.0.0");
    ADD_FAILURE() << "a builder error must fail the table";
  } catch (const PipelineError& e) {
    EXPECT_STREQ(e.what(), "'combine' needs an open 'divide'");
  }
  detail::pipeline_registry().pop_back();
}

}  // namespace
}  // namespace ductwork
