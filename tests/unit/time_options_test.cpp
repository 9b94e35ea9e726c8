// SPEC §13 in the pipeline language: `timeout:` and `delay:` beside a step's
// keyword, `dampen: STEP`, and the builder's .timeout() / .delay() /
// .dampen(): one canonical text and SHA-1 whichever way it is written, and
// every misuse refused with a message naming it.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "config/config.h"
#include "definition_errors.h"
#include "engine/definition_loader.h"
#include "engine/job_policy.h"

namespace ductwork {
namespace {

std::string error_of(const std::string& text) { return definition_error_of(text); }

std::string builder_error(const std::function<void()>& build) {
  try {
    build();
  } catch (const PipelineError& e) {
    return e.what();
  }
  return "(no error)";
}

Definition from_builder(const Pipeline& p) {
  return Definition::from_json(parse_json(p.dump()), p.name(), "builder " + p.name());
}

// The one node of class `klass`.
const Edge& edge_of(const Definition& d, const std::string& klass) {
  for (const auto& node : d.nodes) {
    if (d.edge(node).klass == klass) return d.edge(node);
  }
  throw std::runtime_error("no node of class " + klass);
}

TEST(TimeOptions, FileAndBuilderGiveTheSameTextAndHash) {
  const std::string yaml =
      "pipeline: Media\n"
      "steps:\n"
      "  - start: Upload\n"
      "    delay: 2\n"
      "  - chain: Transcode\n"
      "    timeout: 600\n"
      "    delay: 0.5\n"
      "  - expand: Thumbnail\n"
      "    timeout: 30\n"
      "  - collapse: Gallery\n"
      "  - dampen: Publish\n"
      "    delay: 1\n";
  Pipeline p("Media");
  p.start("Upload").delay(2).chain("Transcode").timeout(600).delay(0.5).expand("Thumbnail").timeout(30).collapse(
      "Gallery").dampen("Publish").delay(1);
  Definition file = compile_definition_text(yaml, "media.yml");
  Definition built = from_builder(p);
  EXPECT_EQ(file.canonical_text(), built.canonical_text());
  EXPECT_EQ(file.sha1(), built.sha1());
  Json sdk_doc = parse_json(p.dump());
  sdk_doc.as_object().erase("pipeline");
  EXPECT_EQ(sdk_doc.dump(), file.canonical_text()) << "the SDK writes the canonical text itself";

  EXPECT_EQ(edge_of(file, "Upload").delay_seconds, 2);
  EXPECT_EQ(edge_of(file, "Upload").timeout_seconds, 0);
  EXPECT_EQ(edge_of(file, "Transcode").timeout_seconds, 600);
  EXPECT_EQ(edge_of(file, "Transcode").delay_seconds, 0.5);
  EXPECT_EQ(edge_of(file, "Thumbnail").timeout_seconds, 30);
  EXPECT_EQ(edge_of(file, "Gallery").type, "dampen");
  EXPECT_EQ(edge_of(file, "Publish").delay_seconds, 1);
  // Whole seconds are integers in the text, fractions stay fractions.
  const std::string text = file.canonical_text();
  EXPECT_NE(text.find("\"timeout\":600,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"delay\":0.5"), std::string::npos) << text;
  // A snapshot reads back to the same text.
  EXPECT_EQ(Definition::from_json(file.to_json(), "Media", "snapshot").canonical_text(), text);
}

TEST(TimeOptions, OptionsDoNotChangeTheNodeNames) {
  Definition plain = compile_definition_text("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n", "p.yml");
  Definition timed =
      compile_definition_text("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n    timeout: 5\n", "p.yml");
  EXPECT_EQ(plain.nodes, timed.nodes);
  EXPECT_NE(plain.sha1(), timed.sha1()) << "a timeout is part of the definition, so of its hash";
}

TEST(TimeOptions, ADivideOptionAppliesToEveryBranchStart) {
  Definition d = compile_definition_text(
      "pipeline: P\nsteps:\n  - start: A\n  - divide: [B, [C, D]]\n    timeout: 7\n  - combine: E\n", "p.yml");
  EXPECT_EQ(edge_of(d, "B").timeout_seconds, 7);
  EXPECT_EQ(edge_of(d, "C").timeout_seconds, 7);
  EXPECT_EQ(edge_of(d, "D").timeout_seconds, 0) << "only the steps the entry named";
  Pipeline p("P");
  p.start("A").divide({"B", "C"}, [](std::vector<Branch>& b) { b[1].chain("D").timeout(3); }).timeout(7).combine("E");
  Definition built = from_builder(p);
  EXPECT_EQ(edge_of(built, "B").timeout_seconds, 7);
  EXPECT_EQ(edge_of(built, "D").timeout_seconds, 3);
}

TEST(TimeOptions, DampenInsideADivideBranch) {
  Definition d = compile_definition_text(
      "pipeline: P\nsteps:\n  - start: A\n  - divide:\n    - [B, {dampen: Approve}]\n    - C\n  - combine: E\n",
      "p.yml");
  EXPECT_EQ(edge_of(d, "B").type, "dampen");
  EXPECT_EQ(d.edge(edge_of(d, "B").to.front()).klass, "Approve");
  EXPECT_EQ(edge_of(d, "Approve").type, "combine");
}

TEST(TimeOptions, BadOptionsAreRefusedWithTheirLine) {
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n    timeout: soon\n").find(
                "defs/p.yml:5: pipeline P: 'timeout' takes a number of seconds"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n    delay: -1\n").find(
                "'delay' must be a number of seconds > 0"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: A\n  - timeout: 3\n").find(
                "an entry with 'timeout' or 'delay' also needs its 'keyword: StepName'"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: A\n  - chain: B\n    expand: C\n").find(
                "each entry of 'steps' is one 'keyword: StepName' pair"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: A\n  - dampen: [B]\n").find("'dampen' takes one step name"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline: P\nsteps:\n  - start: A\n  - wait: B\n").find(
                "(expected chain, divide, combine, expand, collapse, divert, converge, dampen, await or invoke)"),
            std::string::npos);
}

TEST(TimeOptions, BuilderRefusesMisuse) {
  EXPECT_EQ(builder_error([] { Pipeline("P").timeout(3); }),
            "'timeout' before 'start' (exactly one 'start', and it comes first)");
  EXPECT_EQ(builder_error([] { Pipeline("P").start("A").timeout(0); }),
            "'timeout' must be a number of seconds > 0 and <= 31622400");
  EXPECT_EQ(builder_error([] { Pipeline("P").start("A").delay(1).delay(2); }), "'delay' is given twice for step A");
  EXPECT_EQ(builder_error([] { Pipeline("P").start("A").dampen("bad name"); }),
            "step name 'bad name' may only contain letters, digits, '_', ':' and '-'");
}

TEST(TimeOptions, AStoredSnapshotWithABadOptionReadsLeniently) {
  Json doc = parse_json(R"({"metadata":{},"nodes":["A.1"],"edges":{"A.1":{"klass":"A","timeout":"x"}}})");
  EXPECT_THROW(Definition::from_json(doc, "P", "plugin"), DefinitionError);
  Definition lenient = Definition::from_json(doc, "P", "run", /*strict=*/false);
  EXPECT_EQ(lenient.edge("A.1").timeout_seconds, 0);
}

TEST(TimeOptions, ConfigGivenForThePipelineWinsOverTheDefinition) {
  Config config = parse_config(
      "pipelines: '*'\njob_worker:\n  timeout: {default: 100, Media: {default: 50, Transcode: 20}}\n  timeout_grace: {Media: 2}\n",
      "ductwork.yml", "/tmp");
  EXPECT_EQ(effective_step_timeout(config, "Media", "Transcode", 600), 20) << "per step";
  EXPECT_EQ(effective_step_timeout(config, "Media", "Upload", 600), 50) << "per pipeline";
  EXPECT_EQ(effective_step_timeout(config, "Other", "X", 600), 600) << "the definition over the default";
  EXPECT_EQ(effective_step_timeout(config, "Other", "X", 0), 100) << "the default when the definition has none";
  EXPECT_EQ(config.job_worker.timeout_grace.get("Media", "Transcode"), 2);
  EXPECT_EQ(config.job_worker.timeout_grace.get("Other"), 10) << "default grace";
  Config none = parse_config("pipelines: '*'\n", "ductwork.yml", "/tmp");
  EXPECT_EQ(effective_step_timeout(none, "P", "S", 0), 0) << "no timeout unless one is given";
}

TEST(TimeOptions, ConfigRefusesABadTimeout) {
  try {
    parse_config("pipelines: '*'\njob_worker:\n  timeout: forever\n", "ductwork.yml", "/tmp");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("job_worker.timeout"), std::string::npos) << e.what();
  }
}

TEST(TimeOptions, StepTimeoutErrorSaysWhatHappened) {
  ErrorInfo ignored = step_timeout_error("Transcode", 2.5, false);
  EXPECT_EQ(ignored.klass, "StepTimeout");
  EXPECT_TRUE(ignored.retryable) << "counted against the retry budget like any error";
  EXPECT_NE(ignored.message.find("timeout of 2.5 s"), std::string::npos) << ignored.message;
  EXPECT_NE(ignored.message.find("ignored cancellation"), std::string::npos) << ignored.message;
  EXPECT_NE(step_timeout_error("T", 1, true).message.find("its result is ignored"), std::string::npos);
}

}  // namespace
}  // namespace ductwork
