// Conformance: one scenario per edge type and the combinations users write,
// run through the real forking host twice — once from a definition file,
// once as a pipeline a plugin exports through the SDK builder — and held to
// the same expected outputs, so both front ends give one behaviour.
#include <filesystem>
#include <map>

#include "harness.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

struct Scenario {
  std::string name;   // the plugin exports "Plugin<name>", the file defines "File<name>"
  std::string steps;  // the definition file's steps (and on_halt) in YAML
  std::string arg;    // the trigger argument (JSON)
  std::string status;
  json last_output;  // output of the fan-in / final step
};

const std::vector<Scenario> kScenarios = {
    {"ExpandCollapse", "steps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n", "5", "completed", 20},
    {"DivideCombine",
     "steps:\n  - start: Echo\n  - divide: [[Inc, Inc, Inc], Double, [Echo, Inc]]\n  - combine: Sum\n", "10",
     "completed", 13 + 20 + 11},
    {"DivertConverge",
     "steps:\n  - start: Route\n  - divert: {a: [Echo, Echo], otherwise: ContextGet}\n  - converge: Echo\n", "\"a\"",
     "completed", "a"},
    {"NestedExpand",
     "steps:\n  - start: Range\n  - expand: Inc\n  - chain: Range\n  - expand: Double\n  - collapse: Sum\n"
     "  - collapse: Sum\n",
     "3", "completed", 8},
    {"ExpandDivide",
     "steps:\n  - start: Range\n  - expand: Echo\n  - divide: [Inc, Double]\n  - combine: Sum\n  - collapse: Sum\n",
     "3", "completed", 12},
    {"DivertInExpand",
     "steps:\n  - start: Range\n  - expand: Route\n  - divert: {\"0\": Echo, otherwise: [Echo, Echo]}\n"
     "  - converge: Echo\n  - collapse: Echo\n",
     "3", "completed", json::array({"0", "1", "2"})},
    {"FailingBranch",
     "on_halt: RecordHalt\nsteps:\n  - start: Echo\n  - divide: [Fail, [Inc, Inc], Double]\n  - combine: Sum\n", "1",
     "halted", nullptr},
};

// What a run did, independent of ids and node names: every step as
// (klass, to_transition, status, input, output), sorted.
std::multiset<std::string> behaviour(const json& run) {
  std::multiset<std::string> out;
  for (const auto& s : run["steps"]) {
    out.insert(json::array({s["klass"], s["to_transition"], s["status"], s["input"], s["output"]}).dump());
  }
  for (const auto& b : run["branches"]) out.insert(json::array({"branch", b["status"], b["halt_reason"]}).dump());
  return out;
}

TEST(ConformanceTest, EveryScenarioBehavesTheSameFromAFileAndFromAPluginBuilder) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  Workspace ws(options);
  fs::create_directories(ws.file("plugins"));
  fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", ws.file("plugins/libtestkit.so"));
  fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libfixture_conformance.so",
                ws.file("plugins/libconformance.so"));
  options.plugins_directory = ws.file("plugins");
  ws.write_config(options);

  std::map<std::string, std::pair<std::string, std::string>> ids;  // scenario -> (file run, plugin run)
  for (const auto& sc : kScenarios) {
    std::string steps = sc.steps;
    std::string head;
    if (steps.rfind("on_halt", 0) == 0) {  // top-level keys first, then steps
      head = steps.substr(0, steps.find('\n') + 1);
      steps = steps.substr(head.size());
    }
    ws.define(sc.name + ".yml", "pipeline: File" + sc.name + "\n" + head + steps);
  }
  ProcessResult v = ws.run({"validate", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
  for (const auto& sc : kScenarios) {
    ids[sc.name] = {ws.trigger("File" + sc.name, {sc.arg}), ws.trigger("Plugin" + sc.name, {sc.arg})};
  }
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;

  for (const auto& sc : kScenarios) {
    SCOPED_TRACE(sc.name);
    json file_doc = ws.status(ids[sc.name].first);
    json plugin_doc = ws.status(ids[sc.name].second);
    ASSERT_EQ(file_doc["status"], sc.status) << file_doc.dump(1);
    ASSERT_EQ(plugin_doc["status"], sc.status) << plugin_doc.dump(1);
    const json& steps = file_doc["runs"][0]["steps"];
    if (!sc.last_output.is_null()) {
      // The step that finished last: a step's completion is stamped by the
      // transaction that records it, which starts after the step ran, so
      // completion times follow the graph. (Creation times need not: on
      // PostgreSQL a fan-in's step is stamped when its transaction began,
      // which may be before it waited for the last arrival's lock.)
      const json* last = nullptr;
      for (const json& step : steps) {
        if (step["completed_at"].is_string() &&
            (!last || step["completed_at"].get<std::string>() >= (*last)["completed_at"].get<std::string>())) {
          last = &step;
        }
      }
      ASSERT_NE(last, nullptr) << file_doc.dump(1);
      EXPECT_EQ((*last)["output"], sc.last_output) << file_doc.dump(1);
    }
    EXPECT_EQ(behaviour(file_doc["runs"][0]), behaviour(plugin_doc["runs"][0]));
  }
  // The failing scenario halted both runs with the failing branch's reason,
  // its siblings finished, and on_halt ran once per run.
  json halted = ws.status(ids["FailingBranch"].first);
  int halted_branches = 0, completed_branches = 0;
  for (const auto& b : halted["runs"][0]["branches"]) {
    if (b["status"] == "halted") {
      ++halted_branches;
      EXPECT_EQ(b["halt_reason"], "job_retries_exhausted");
    }
    completed_branches += b["status"] == "completed";
  }
  EXPECT_EQ(halted_branches, 1);
  EXPECT_EQ(completed_branches, 3);
  size_t on_halt_runs = 0;
  for (size_t at = r.out.find("on_halt step ran"); at != std::string::npos; at = r.out.find("on_halt step ran", at + 1))
    ++on_halt_runs;
  EXPECT_EQ(on_halt_runs, 2u) << r.out;
  EXPECT_EQ(dangling_references(ws), "");
}

TEST(ConformanceTest, DivertWithoutOtherwiseIsRejectedAtValidation) {
  Workspace ws;
  ws.define("bad.yml", "pipeline: Bad\nsteps:\n  - start: Route\n  - divert: {a: Echo}\n");
  ProcessResult r = ws.run({"validate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("otherwise"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.yml:4"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ductwork::it
