#include "plugin/plugin_registry.h"

#include "engine/step_invoker.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>

#include "temp_dir.h"

namespace ductwork {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/" + name; }
std::string plugin(const std::string& name) { return std::string(DUCTWORK_PLUGIN_DIR) + "/" + name; }

class PluginRegistryTest : public ::testing::Test {
 protected:
  Logger logger{stderr, Logger::Format::kJson, LogLevel::kError};
  PluginRegistry registry;
};

TEST_F(PluginRegistryTest, LoadsTheTestkitWithEveryStep) {
  ASSERT_TRUE(registry.load_file(plugin("libductwork_testkit.so"), logger));
  ASSERT_EQ(registry.plugins().size(), 1u);
  const auto& p = *registry.plugins()[0];
  EXPECT_EQ(p.name, "testkit");
  EXPECT_EQ(p.abi_version, DUCTWORK_ABI_VERSION);
  const std::vector<std::string> every = {"Echo",       "Inc",        "Double",     "Sum",        "Range",
                                          "Route",      "Fail",       "FailTimes",  "FailPermanently",
                                          "CrashTimes", "Segfault",   "Sleep",      "Gate",       "Pause",
                                          "ContextSet", "ContextGet", "RecordHalt", "RecordKey"};
  EXPECT_EQ(p.step_names, every) << "the testkit's steps, all of them, in export order";
  for (const auto& step : every) {
    const StepClass* cls = registry.find_step(step);
    ASSERT_NE(cls, nullptr) << step;
    EXPECT_EQ(cls->plugin, &p);
  }
  EXPECT_EQ(registry.find_step("NoSuchStep"), nullptr);
}

TEST_F(PluginRegistryTest, RefusesAnUnsupportedAbiVersionBeforeRunningIt) {
  // libbad_abi's init aborts: reaching it would kill this test.
  EXPECT_FALSE(registry.load_file(fixture("libbad_abi.so"), logger));
  ASSERT_EQ(registry.refusals().size(), 1u);
  EXPECT_NE(registry.refusals()[0].find("unsupported ABI version 999"), std::string::npos) << registry.refusals()[0];
  // Both versions are named, and which side is newer.
  EXPECT_NE(registry.refusals()[0].find("built for ABI version 999, newer than this host's ABI version " +
                                        std::to_string(DUCTWORK_ABI_VERSION)),
            std::string::npos)
      << registry.refusals()[0];
  EXPECT_TRUE(registry.plugins().empty());
}

// libabi_v1.so was built from the frozen first ABI-1 headers: a table
// without hooks, step classes without execute2. It loads as it always did.
TEST_F(PluginRegistryTest, APluginBuiltAgainstTheFirstAbi1HeadersLoadsWithoutHooksOrExecute2) {
  ASSERT_TRUE(registry.load_file(fixture("libabi_v1.so"), logger)) << ::testing::PrintToString(registry.refusals());
  const auto& p = *registry.plugins().at(0);
  EXPECT_EQ(p.name, "abi_v1");
  EXPECT_EQ(p.abi_version, 1u);
  EXPECT_TRUE(p.hooks.empty());
  EXPECT_LT(p.table->struct_size, sizeof(dw_plugin)) << "the old table ends before the hooks";
  const std::vector<std::string> steps = {"V1Double", "V1Context", "V1Log", "V1Fail", "V1Permanent"};
  EXPECT_EQ(p.step_names, steps);
  const StepClass* cls = registry.find_step("V1Double");
  ASSERT_NE(cls, nullptr);
  EXPECT_EQ(cls->abi->struct_size, offsetof(dw_step_class, execute2)) << "the old step class ends before execute2";
  EXPECT_EQ(p.pipelines_json.size(), 1u);
}

TEST_F(PluginRegistryTest, HooksAreListedInRegistrationOrderWithTheirEvents) {
  ASSERT_TRUE(registry.load_file(fixture("libfixture_hooks.so"), logger));
  const auto& p = *registry.plugins().at(0);
  std::vector<std::string> hooks;
  for (const auto& h : p.hooks) hooks.push_back(std::string(hook_event_name(h.event)) + " " + h.name);
  const std::vector<std::string> expected = {
      "on_supervisor_start supervisor_start", "on_supervisor_stop supervisor_stop",
      "on_advancer_start advancer_start",     "on_advancer_stop advancer_stop",
      "on_worker_start worker_start",         "on_worker_stop worker_stop"};
  EXPECT_EQ(hooks, expected);
  for (const auto& h : p.hooks) EXPECT_NE(h.abi, nullptr) << h.name;
  EXPECT_EQ(hook_event_of("on_worker_stop"), static_cast<uint32_t>(DW_ON_WORKER_STOP));
  EXPECT_EQ(hook_event_of("on_lunch"), 0u);
}

TEST_F(PluginRegistryTest, RefusesALibraryWithoutEntryPoints) {
  EXPECT_FALSE(registry.load_file(fixture("libno_entry.so"), logger));
  EXPECT_NE(registry.refusals().at(0).find("missing entry point"), std::string::npos);
}

// Two plugins exporting Echo both load: the bare name is ambiguous, and
// plugin:Step names the one meant (it used to keep the first and refuse the
// second plugin whole).
TEST_F(PluginRegistryTest, ASharedStepNameIsAmbiguousAndPluginQualifiedNamesResolveIt) {
  ASSERT_TRUE(registry.load_file(plugin("libductwork_testkit.so"), logger));
  ASSERT_TRUE(registry.load_file(fixture("libdup_step.so"), logger));
  EXPECT_TRUE(registry.refusals().empty());
  EXPECT_EQ(registry.find_step("Echo"), nullptr) << "a bare name two plugins export resolves to neither";
  ASSERT_EQ(registry.exporters("Echo").size(), 2u);
  EXPECT_EQ(registry.exporters("Echo")[0]->name, "testkit");
  EXPECT_EQ(registry.exporters("Echo")[1]->name, "dupstep");
  ASSERT_NE(registry.find_step("testkit:Echo"), nullptr);
  EXPECT_EQ(registry.find_step("testkit:Echo")->plugin->name, "testkit");
  ASSERT_NE(registry.find_step("dupstep:Echo"), nullptr);
  EXPECT_EQ(registry.find_step("dupstep:Echo")->plugin->name, "dupstep");
  EXPECT_EQ(registry.find_step("Inc")->plugin->name, "testkit") << "unshared names stay bare";
  EXPECT_EQ(registry.find_step("testkit:Inc")->plugin->name, "testkit") << "and may be qualified";
  EXPECT_EQ(registry.find_step("nosuch:Echo"), nullptr);
  EXPECT_EQ(registry.find_step("dupstep:Inc"), nullptr);
}

TEST_F(PluginRegistryTest, DirectoryLoadGoesOnPastRefusals) {
  testsupport::TempDir dir;
  for (const char* f : {"libbad_abi.so", "libno_entry.so", "libdup_step.so", "libfixture_good.so"}) {
    fs::copy_file(fixture(f), dir.file(f));
  }
  fs::copy_file(plugin("libductwork_testkit.so"), dir.file("libductwork_testkit.so"));
  dir.write("notes.txt", "ignored");
  registry.load_directory(dir.path(), logger);
  std::vector<std::string> names;
  for (const auto& p : registry.plugins()) names.push_back(p->name);
  // Name order: libbad_abi (refused), libductwork_testkit, libdup_step
  // (shares Echo), libfixture_good, libno_entry (refused).
  EXPECT_EQ(names, (std::vector<std::string>{"testkit", "dupstep", "fixture"}));
  ASSERT_EQ(registry.refusals().size(), 2u);
  EXPECT_NE(registry.refusals()[0].find("libbad_abi.so"), std::string::npos);
  EXPECT_NE(registry.refusals()[1].find("libno_entry.so"), std::string::npos);
  EXPECT_NE(registry.find_step("FixtureHello"), nullptr);
}

TEST_F(PluginRegistryTest, MissingDirectoryLoadsNothing) {
  registry.load_directory("/nonexistent/plugins", logger);
  EXPECT_TRUE(registry.plugins().empty());
  EXPECT_TRUE(registry.refusals().empty());
}

// Process step manifests (SPEC §19) load beside `.so` plugins; the probe's
// registry (check_handshakes) starts each command and refuses one that does
// not say hello; invoke_step without a worker's step processes says so.
TEST_F(PluginRegistryTest, AManifestLoadsBesideLibrariesAndItsHandshakeIsChecked) {
  testsupport::TempDir dir;
  fs::copy_file(plugin("libductwork_testkit.so"), dir.file("libductwork_testkit.so"));
  dir.write("hello.steps.yml",
            "command: [sh, -c, \"echo '{\\\"ductwork\\\": \\\"steps\\\", \\\"protocol\\\": 1, "
            "\\\"steps\\\": [\\\"Hello\\\"]}'; cat >/dev/null\"]\nsteps: [Hello]\n");
  dir.write("mute.steps.yml", "command: [sh, -c, \"sleep 30\"]\nsteps: [Mute]\n");
  registry.check_handshakes(0.5);
  registry.load_directory(dir.path(), logger);
  ASSERT_EQ(registry.plugins().size(), 2u) << (registry.refusals().empty() ? "" : registry.refusals()[0]);
  const StepClass* hello = registry.find_step("Hello");
  ASSERT_NE(hello, nullptr);
  ASSERT_NE(hello->plugin->manifest, nullptr);
  EXPECT_EQ(hello->plugin->name, "hello");
  EXPECT_EQ(hello->abi, nullptr);
  EXPECT_NE(registry.find_step("Inc"), nullptr);
  EXPECT_EQ(registry.find_step("Mute"), nullptr);
  ASSERT_EQ(registry.refusals().size(), 1u);
  EXPECT_NE(registry.refusals()[0].find("mute.steps.yml: its command sh did not answer the handshake within 0.5 s"),
            std::string::npos)
      << registry.refusals()[0];
  ClaimedJob job;
  job.klass = "Hello";
  job.args_json = "[]";
  StepCallScope scope;
  StepOutcome outcome = invoke_step(registry, job, scope);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.error.klass, "ductwork::ProcessStepUnavailable");
}

}  // namespace
}  // namespace ductwork
