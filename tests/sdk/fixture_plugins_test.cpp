// The deliberately bad fixture plugins are bad in exactly the intended way
// (the host's loader tests rely on it).
#include <string>

#include <gtest/gtest.h>

#include "plugin_harness.h"

namespace ductwork {
namespace {

using test::FakeHost;
using test::LoadedPlugin;

TEST(FixturePluginsTest, BadAbiReportsVersion999) {
  LoadedPlugin bad(DUCTWORK_TEST_FIXTURE_PLUGIN_DIR, "bad_abi");
  ASSERT_TRUE(bad.ok());
  auto version = reinterpret_cast<dw_abi_version_fn>(bad.symbol(DUCTWORK_ABI_VERSION_SYMBOL));
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version(), 999u);
  EXPECT_NE(bad.symbol(DUCTWORK_INIT_SYMBOL), nullptr);  // present, but never to be called
  FakeHost host;
  EXPECT_EQ(bad.init(host.api()), nullptr);  // the harness refuses it on the version
}

TEST(FixturePluginsDeathTest, BadAbiInitAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  LoadedPlugin bad(DUCTWORK_TEST_FIXTURE_PLUGIN_DIR, "bad_abi");
  ASSERT_TRUE(bad.ok());
  auto init = reinterpret_cast<dw_init_fn>(bad.symbol(DUCTWORK_INIT_SYMBOL));
  ASSERT_NE(init, nullptr);
  EXPECT_DEATH(init(nullptr), "");
}

TEST(FixturePluginsTest, NoEntryExportsNeitherEntryPoint) {
  LoadedPlugin none(DUCTWORK_TEST_FIXTURE_PLUGIN_DIR, "no_entry");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.symbol(DUCTWORK_ABI_VERSION_SYMBOL), nullptr);
  EXPECT_EQ(none.symbol(DUCTWORK_INIT_SYMBOL), nullptr);
  EXPECT_NE(none.symbol("not_a_ductwork_plugin"), nullptr);
}

TEST(FixturePluginsTest, DupStepExportsEcho) {
  LoadedPlugin dup(DUCTWORK_TEST_FIXTURE_PLUGIN_DIR, "dup_step");
  ASSERT_TRUE(dup.ok());
  FakeHost host;
  const dw_plugin* plugin = dup.init(host.api());
  ASSERT_NE(plugin, nullptr);
  EXPECT_STREQ(plugin->name, "dupstep");
  ASSERT_EQ(plugin->step_count, 1u);
  EXPECT_STREQ(plugin->steps[0]->name, "Echo");
  test::StepRun r = test::run_step(*plugin->steps[0], plugin->free_string, host, "[1]");
  EXPECT_EQ(r.output(), Json("dupstep"));
}

TEST(FixturePluginsTest, FixtureGoodSaysHello) {
  LoadedPlugin good(DUCTWORK_TEST_FIXTURE_PLUGIN_DIR, "fixture_good");
  ASSERT_TRUE(good.ok());
  FakeHost host;
  const dw_plugin* plugin = good.init(host.api());
  ASSERT_NE(plugin, nullptr);
  EXPECT_STREQ(plugin->name, "fixture");
  EXPECT_STREQ(plugin->version, "1.0.0");
  const dw_step_class* hello = test::find_step(*plugin, "FixtureHello");
  ASSERT_NE(hello, nullptr);
  test::StepRun r = test::run_step(*hello, plugin->free_string, host, "[]");
  EXPECT_EQ(r.rc, DW_EXECUTE_OK);
  EXPECT_EQ(r.output(), Json("hello"));
}

}  // namespace
}  // namespace ductwork
