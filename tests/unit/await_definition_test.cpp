// Waiting for an event in a definition (issue 39 item 3): `- await: STEP`
// with its keys and Pipeline::await give one canonical text; the snapshot
// reads back; bad entries are refused naming the line and the rule; event
// keys compare by JSON equality.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "definition_errors.h"
#include "engine/definition_loader.h"
#include "engine/events.h"

namespace ductwork {
namespace {

TEST(AwaitDefinition, TheFileAndTheBuilderAgree) {
  const std::string yaml =
      "pipeline: Shop\nsteps:\n  - start: Order\n  - await: Ship\n    event: payment.received\n"
      "    match: /order_id\n    timeout: 90.5\n    on_timeout: continue\n    delay: 2\n  - await: Close\n"
      "    event: closed\n";
  const Definition file = compile_definition_text(yaml, "shop.yml");
  Await paid;
  paid.event = "payment.received";
  paid.match = "/order_id";
  paid.timeout = 90.5;
  paid.on_timeout = "continue";
  Await closed;
  closed.event = "closed";
  Pipeline p("Shop");
  p.start("Order").await("Ship", paid).delay(2).await("Close", closed);
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), file.canonical_text());
  const Edge& first = file.edge(file.nodes[0]);
  EXPECT_EQ(first.type, "await");
  ASSERT_TRUE(first.await);
  EXPECT_EQ(first.await->event, "payment.received");
  EXPECT_EQ(first.await->match, "/order_id");
  EXPECT_EQ(first.await->timeout, 90.5);
  EXPECT_EQ(first.await->on_timeout, "continue");
  EXPECT_EQ(file.edge(file.nodes[1]).delay_seconds, 2) << "delay is the awaited step's own option";
  EXPECT_EQ(file.to_json()["edges"][file.nodes[1]]["await"], parse_json(R"({"event":"closed"})"));
  EXPECT_EQ(file.to_json()["edges"][file.nodes[0]]["await"],
            parse_json(R"({"event":"payment.received","match":"/order_id","on_timeout":"continue","timeout":90.5})"));
  EXPECT_EQ(Definition::from_json(file.to_json(), "Shop", "again").canonical_text(), file.canonical_text());
}

TEST(AwaitDefinition, BadEntriesAreRefusedNamingTheLineAndTheRule) {
  const std::string head = "pipeline: P\nsteps:\n  - start: A\n";
  EXPECT_EQ(definition_error_of(head + "  - await: B\n"),
            "defs/p.yml:4: pipeline P: 'await' needs 'event: NAME', the event it waits for");
  EXPECT_EQ(definition_error_of(head + "  - await: B\n    event: has space\n"),
            "defs/p.yml:4: pipeline P: 'await': an event name may only contain letters, digits, '_', ':', '-', '.' "
            "and '/'");
  EXPECT_EQ(definition_error_of(head + "  - await: B\n    event: e\n    match: id\n"),
            "defs/p.yml:4: pipeline P: the match of 'await' must be a JSON Pointer starting with '/' (e.g. "
            "'/0/customer_id'), not 'id'");
  EXPECT_EQ(definition_error_of(head + "  - await: B\n    event: e\n    timeout: soon\n"),
            "defs/p.yml:6: pipeline P: the 'timeout' of 'await' takes a number of seconds, e.g. 'timeout: 3600'");
  EXPECT_EQ(definition_error_of(head + "  - await: B\n    event: e\n    timeout: -1\n"),
            "defs/p.yml:4: pipeline P: 'await' takes 'timeout', a number of seconds >= 0 and <= 31622400 (0: no "
            "timeout)");
  EXPECT_EQ(definition_error_of(head + "  - await: B\n    event: e\n    on_timeout: continue\n"),
            "defs/p.yml:4: pipeline P: 'await' has 'on_timeout: continue' but no 'timeout'");
  EXPECT_EQ(definition_error_of(head + "  - chain: B\n    match: /x\n"),
            "defs/p.yml:5: pipeline P: 'match' goes with 'await: StepName' only");
  EXPECT_EQ(definition_error_of(head + "  - await: B\n    event: e\n    match: /x\n    timeout: 0\n"),
            "(no error)");
}

TEST(AwaitDefinition, AStoredSnapshotWithABrokenAwaitReadsLeniently) {
  const Json doc = parse_json(
      R"({"nodes":["A.1","B.2"],"edges":{"A.1":{"klass":"A","type":"await","to":["B.2"],"await":{"event":""}},)"
      R"("B.2":{"klass":"B"}}})");
  EXPECT_THROW(Definition::from_json(doc, "P", "plugin"), DefinitionError);
  const Definition lenient = Definition::from_json(doc, "P", "run 1", /*strict=*/false);
  EXPECT_FALSE(lenient.edge("A.1").await) << "routing halts such a branch as transition_invalid";
  const Json missing = parse_json(R"({"nodes":["A.1","B.2"],"edges":{"A.1":{"klass":"A","type":"await","to":["B.2"]},)"
                                  R"("B.2":{"klass":"B"}}})");
  try {
    Definition::from_json(missing, "P", "plugin");
    ADD_FAILURE() << "an await edge without its event was accepted";
  } catch (const DefinitionError& e) {
    EXPECT_EQ(std::string(e.what()), "plugin: pipeline P: node A.1: an 'await' edge names its event in \"await\"");
  }
}

TEST(EventKey, KeysCompareByJsonEquality) {
  EXPECT_EQ(event_key_text(parse_json("42")), event_key_text(parse_json("42.0")));
  EXPECT_EQ(event_key_text(parse_json("42")), "42");
  EXPECT_NE(event_key_text(parse_json("42")), event_key_text(parse_json("\"42\"")));
  EXPECT_EQ(event_key_text(parse_json(R"({"b": [1.0, 2], "a": null})")), event_key_text(parse_json(R"({"a":null,"b":[1,2]})")));
  EXPECT_NE(event_key_text(parse_json("1.5")), event_key_text(parse_json("1")));
  EXPECT_NE(event_key_text(parse_json("true")), event_key_text(parse_json("1")));
  EXPECT_EQ(event_key_text(parse_json("\"caf\\u00e9\"")), event_key_text(parse_json("\"café\"")));
}

}  // namespace
}  // namespace ductwork
