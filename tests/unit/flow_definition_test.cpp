// Flow control in a definition (issue 38): `priority:` and `concurrency:`
// in a file and Pipeline::priority / concurrency / pipeline_concurrency in
// the builder give one canonical text and hash, a definition without them
// keeps the hash it always had, and bad values are refused naming the rule
// (and the step). The engine's gate for a node, and the gate name a job's
// arguments give it.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "definition_errors.h"
#include "engine/definition_loader.h"
#include "engine/flow_control.h"
#include "store/sql/step_rows.h"
#include "util/json_pointer.h"

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

TEST(FlowDefinition, ConcurrencyBesideAStepAndForThePipelineAgreeWithTheBuilder) {
  const std::string yaml =
      "pipeline: P\nconcurrency: {limit: 5}\nsteps:\n  - start: A\n  - chain: Charge\n"
      "    concurrency: {limit: 2, key: /0/customer_id}\n  - chain: C\n    concurrency: 3\n";
  Definition file = compile_definition_text(yaml, "p.yml");
  Pipeline p("P");
  p.start("A").chain("Charge").concurrency(2, "/0/customer_id").chain("C").concurrency(3).pipeline_concurrency(5);
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), file.canonical_text());
  EXPECT_EQ(file.to_json()["metadata"], Json::object({{"concurrency", Json::object({{"limit", 5}})}}));
  const std::string charge = file.nodes[1], c = file.nodes[2];
  EXPECT_EQ(file.to_json()["edges"][charge]["concurrency"],
            Json::object({{"limit", 2}, {"key", "/0/customer_id"}}));
  // Read back from the snapshot (leniently, as a run's is), the same.
  Definition snapshot = Definition::from_json(file.to_json(), "", "run", /*strict=*/false);
  EXPECT_EQ(snapshot.canonical_text(), file.canonical_text());

  // The engine's gates: a node's own limit, else the pipeline's.
  auto gate = concurrency_gate(snapshot, "P", charge);
  ASSERT_TRUE(gate);
  EXPECT_EQ(gate->scope, "P/" + charge);
  EXPECT_EQ(gate->key, "/0/customer_id");
  EXPECT_EQ(gate->limit, 2);
  gate = concurrency_gate(snapshot, "P", file.nodes[0]);
  ASSERT_TRUE(gate);
  EXPECT_EQ(gate->scope, "P");
  EXPECT_EQ(gate->key, "");
  EXPECT_EQ(gate->limit, 5);
  EXPECT_EQ(concurrency_gate(snapshot, "P", c)->limit, 3);
  Definition plain = compile_definition_text("pipeline: Q\nsteps:\n  - start: A\n", "q.yml");
  EXPECT_FALSE(concurrency_gate(plain, "Q", plain.nodes[0]));
}

TEST(FlowDefinition, ABadConcurrencyIsRefusedNamingTheStep) {
  const std::string head = "pipeline: P\nsteps:\n  - start: A\n  - chain: Charge\n    concurrency: ";
  const std::string at = "defs/p.yml:5: pipeline P: step Charge: ";
  EXPECT_EQ(error_of(head + "0\n"), at + "'concurrency' takes a limit from 1 to 1000000, not 0");
  EXPECT_EQ(error_of(head + "{limit: -2}\n"), at + "'concurrency' takes a limit from 1 to 1000000, not -2");
  EXPECT_EQ(error_of(head + "{limit: 2, key: customer}\n"),
            at + "the key of 'concurrency' must be a JSON Pointer starting with '/' (e.g. '/0/customer_id'), not "
                 "'customer'");
  EXPECT_EQ(error_of(head + "{limit: 2, key: /a~2}\n"),
            at + "the key of 'concurrency' '/a~2' is not a JSON Pointer ('~' must be '~0' or '~1')");
  EXPECT_EQ(error_of(head + "{limit: 2, per: 3}\n"), at + "'concurrency' has no 'per' (limit, key)");
  EXPECT_EQ(error_of(head + "lots\n"),
            at + "'concurrency' takes {limit: N, key: /POINTER} (or just N), e.g. "
                 "'concurrency: {limit: 2, key: /0/customer_id}'");
  EXPECT_EQ(error_of("pipeline: P\nconcurrency: {limit: 0}\nsteps:\n  - start: A\n"),
            "defs/p.yml:2: pipeline P: the pipeline's 'concurrency' takes a limit from 1 to 1000000, not 0");
  Pipeline p("P");
  p.start("A").concurrency(1);
  EXPECT_THROW(p.concurrency(2), PipelineError);  // given twice for the step
  EXPECT_THROW(p.pipeline_concurrency(0), PipelineError);
  // A plugin's document with a bad limit is refused; a run's snapshot
  // reads it as no limit.
  Json doc = parse_json(p.dump());
  doc["edges"][doc["nodes"][0].as_string()]["concurrency"] = Json::object({{"limit", 0}});
  EXPECT_THROW(Definition::from_json(doc, "P", "plugin"), DefinitionError);
  EXPECT_FALSE(Definition::from_json(doc, "P", "run", /*strict=*/false).edges.begin()->second.concurrency);
}

TEST(FlowDefinition, AJsonPointerFindsItsValueOrNothing) {
  const Json doc = parse_json(R"([{"customer_id": 7, "a/b": "slash", "m~n": "tilde", "list": [1, 2]}, "x"])");
  EXPECT_EQ(resolve_json_pointer(doc, "")->dump(), doc.dump());
  EXPECT_EQ(resolve_json_pointer(doc, "/0/customer_id")->dump(), "7");
  EXPECT_EQ(resolve_json_pointer(doc, "/0/a~1b")->dump(), "\"slash\"");
  EXPECT_EQ(resolve_json_pointer(doc, "/0/m~0n")->dump(), "\"tilde\"");
  EXPECT_EQ(resolve_json_pointer(doc, "/0/list/1")->dump(), "2");
  EXPECT_EQ(resolve_json_pointer(doc, "/1")->dump(), "\"x\"");
  for (const char* nothing : {"/2", "/01", "/-", "/0/missing", "/1/x", "/0/list/9", "0"}) {
    EXPECT_EQ(resolve_json_pointer(doc, nothing), nullptr) << nothing;
  }
  // A job's gate: the scope, and the key's value as compact JSON (null
  // when the key finds nothing); no key: the scope alone.
  EXPECT_EQ(sql::flow_gate_name(GateSpec{"P/Charge.1", "/0/customer_id", 2}, R"([{"customer_id": "acme"}])"),
            "P/Charge.1 \"acme\"");
  EXPECT_EQ(sql::flow_gate_name(GateSpec{"P/Charge.1", "/0/customer_id", 2}, "[{}]"), "P/Charge.1 null");
  EXPECT_EQ(sql::flow_gate_name(GateSpec{"P", "", 1}, "[1]"), "P");
}

}  // namespace
}  // namespace ductwork
