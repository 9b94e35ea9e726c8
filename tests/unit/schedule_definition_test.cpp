// Schedules in a definition (issue 39 item 1): the file's `schedules:` list
// and Pipeline::schedule give one canonical text with every option
// written; a definition without schedules keeps its SHA-1; bad entries are
// refused naming the line, the schedule and what was wrong.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "definition_errors.h"
#include "engine/definition_loader.h"

namespace ductwork {
namespace {

TEST(ScheduleDefinition, TheFileAndTheBuilderAgreeWithEveryOptionWritten) {
  const std::string yaml =
      "pipeline: Nightly\nsteps:\n  - start: A\nschedules:\n"
      "  - cron: \"30 2 * * *\"\n    timezone: Europe/Berlin\n"
      "    args: [{region: eu, n: 3, ratio: 0.5, on: true, none: null, quoted: \"7\"}, \"{{scheduled_at}}\"]\n"
      "    overlap: skip\n    catch_up: all\n    catch_up_limit: 24\n"
      "  - cron: '@hourly'\n";
  const Definition file = compile_definition_text(yaml, "nightly.yml");
  Schedule nightly;
  nightly.cron = "30 2 * * *";
  nightly.timezone = "Europe/Berlin";
  nightly.args = parse_json(R"([{"region":"eu","n":3,"ratio":0.5,"on":true,"none":null,"quoted":"7"},"{{scheduled_at}}"])");
  nightly.overlap = "skip";
  nightly.catch_up = "all";
  nightly.catch_up_limit = 24;
  Schedule hourly;
  hourly.cron = "@hourly";
  Pipeline p("Nightly");
  p.start("A").schedule(nightly).schedule(hourly);
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), file.canonical_text());
  ASSERT_EQ(file.schedules.size(), 2u);
  EXPECT_EQ(file.schedules[0].name, "30 2 * * *") << "the name defaults to the cron text";
  EXPECT_EQ(file.schedules[1].name, "@hourly");
  EXPECT_EQ(file.schedules[1].timezone, "UTC");
  EXPECT_EQ(file.schedules[1].overlap, "allow");
  EXPECT_EQ(file.schedules[1].catch_up, "latest");
  EXPECT_EQ(file.schedules[1].catch_up_limit, 10);
  EXPECT_EQ(file.to_json()["metadata"]["schedules"][0],
            parse_json(R"({"args":[{"n":3,"none":null,"on":true,"quoted":"7","ratio":0.5,"region":"eu"},)"
                       R"("{{scheduled_at}}"],"catch_up":"all","catch_up_limit":24,"cron":"30 2 * * *",)"
                       R"("name":"30 2 * * *","overlap":"skip","timezone":"Europe/Berlin"})"));
  // The canonical text reads back to the same definition.
  EXPECT_EQ(Definition::from_json(file.to_json(), "Nightly", "again").canonical_text(), file.canonical_text());
  // Without schedules the text (and so the SHA-1) is what it always was.
  EXPECT_EQ(compile_definition_text("pipeline: Nightly\nsteps:\n  - start: A\n", "n.yml").canonical_text(),
            R"({"edges":{")" + file.nodes[0] + R"(":{"klass":"A"}},"metadata":{},"nodes":[")" + file.nodes[0] +
                R"("]})");
}

TEST(ScheduleDefinition, BadEntriesAreRefusedNamingTheLineAndTheRule) {
  const std::string head = "pipeline: P\nsteps:\n  - start: A\nschedules:\n";
  EXPECT_EQ(definition_error_of(head + "  - cron: \"61 * * * *\"\n"),
            "defs/p.yml:5: pipeline P: cron '61 * * * *': the minute field has 61, outside 0-59");
  EXPECT_EQ(definition_error_of(head + "  - cron: \"0 0 30 2 *\"\n"), "defs/p.yml:5: pipeline P: cron '0 0 30 2 *' never fires");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    timezone: Europe/Atlantis\n"),
            "defs/p.yml:5: pipeline P: unknown time zone 'Europe/Atlantis' (an IANA name such as Europe/Berlin or "
            "UTC)");
  EXPECT_EQ(definition_error_of(head + "  - timezone: UTC\n"),
            "defs/p.yml:5: pipeline P: a schedule needs 'cron', e.g. 'cron: \"30 2 * * *\"'");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    overlap: queue\n"),
            "defs/p.yml:5: pipeline P: a schedule's 'overlap' takes allow, skip or cancel_previous, not 'queue'");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    catch_up: some\n"),
            "defs/p.yml:5: pipeline P: a schedule's 'catch_up' takes none, latest or all, not 'some'");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    catch_up_limit: 0\n"),
            "defs/p.yml:5: pipeline P: a schedule's 'catch_up_limit' takes a whole number from 1 to 1000, not 0");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    catch_up_limit: many\n"),
            "defs/p.yml:6: pipeline P: a schedule's 'catch_up_limit' takes a whole number, e.g. 24");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    args: {region: eu}\n"),
            "defs/p.yml:6: pipeline P: a schedule's 'args' must be a list (the trigger's arguments), e.g. "
            "'args: [{region: eu}]'");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    every: 5\n"),
            "defs/p.yml:6: pipeline P: unknown schedule key 'every' (expected cron, timezone, args, name, overlap, "
            "catch_up and catch_up_limit)");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n  - cron: '@daily'\n"),
            "defs/p.yml:6: pipeline P: two schedules are named '@daily' (give each its own 'name'; it defaults to "
            "the cron text)");
  EXPECT_EQ(definition_error_of(head + "  - '@daily'\n"),
            "defs/p.yml:5: pipeline P: each entry of 'schedules' is a map such as {cron: \"30 2 * * *\", timezone: "
            "Europe/Berlin, args: [...]}");
  EXPECT_EQ(definition_error_of(head + "  - cron: '@daily'\n    name: first\n  - cron: '@daily'\n    name: second\n"),
            "(no error)");
}

}  // namespace
}  // namespace ductwork
