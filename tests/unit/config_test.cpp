#include "config/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "temp_dir.h"

namespace ductwork {
namespace {

Config parse(const std::string& yaml) { return parse_config(yaml, "test.yml", "/base"); }

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Config, DefaultsFollowTheSpec) {
  Config c = parse("pipelines: '*'");
  EXPECT_TRUE(c.all_pipelines);
  EXPECT_EQ(c.job_worker.count.get("P"), 5);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "S"), 3);
  EXPECT_EQ(c.job_worker.max_crash.get("P", "S"), 10);
  EXPECT_DOUBLE_EQ(c.job_worker.polling_timeout.get("P"), 1.0);
  EXPECT_DOUBLE_EQ(c.job_worker.retry_delay, 10.0);
  EXPECT_EQ(c.pipeline_advancer.count, 3);
  EXPECT_EQ(c.pipeline_advancer.max_retry.get("P"), 10);
  EXPECT_DOUBLE_EQ(c.supervisor.reaper_timeout, 300.0);
  EXPECT_EQ(c.database.adapter, "sqlite");
  EXPECT_EQ(c.database.path, "/base/ductwork.sqlite3");
}

TEST(Config, RelativePathsResolveAgainstTheFileDirectory) {
  Config c = parse("pipelines: [A]\ndatabase: {path: data/x.db}\nplugins: {directory: /abs/plugins}");
  EXPECT_EQ(c.database.path, "/base/data/x.db");
  EXPECT_EQ(c.plugins_directory, "/abs/plugins");
  EXPECT_FALSE(c.all_pipelines);
  EXPECT_TRUE(c.runs_pipeline("A"));
  EXPECT_FALSE(c.runs_pipeline("B"));
}

TEST(Config, DurationsAcceptFractions) {
  Config c = parse("pipelines: '*'\njob_worker: {polling_timeout: 0.05, retry_delay: 0.25}");
  EXPECT_DOUBLE_EQ(c.job_worker.polling_timeout.get("X"), 0.05);
  EXPECT_DOUBLE_EQ(c.job_worker.retry_delay, 0.25);
}

TEST(Config, PerPipelineAndPerStepValues) {
  Config c = parse(
      "pipelines: '*'\n"
      "job_worker:\n"
      "  count: {default: 2, Big: 8}\n"
      "  max_retry: {default: 1, P: {default: 4, Flaky: 9}, Q: 6}\n");
  EXPECT_EQ(c.job_worker.count.get("Other"), 2);
  EXPECT_EQ(c.job_worker.count.get("Big"), 8);
  EXPECT_EQ(c.job_worker.max_retry.get("Other", "Flaky"), 1);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "Other"), 4);
  EXPECT_EQ(c.job_worker.max_retry.get("P", "Flaky"), 9);
  EXPECT_EQ(c.job_worker.max_retry.get("Q", "Flaky"), 6);
}

TEST(Config, UnknownKeyIsNamed) {
  std::string e = error_of("pipelines: '*'\njob_worker: {cuont: 2}");
  EXPECT_NE(e.find("job_worker.cuont"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("test.yml:2"), std::string::npos) << e;
}

TEST(Config, WrongShapesAreNamedWithTheExpectedShape) {
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {count: many}").find("job_worker.count: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {count: 0}").find("an integer from 1 to 1000, got 0"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\njob_worker: {retry_delay: -1}").find("job_worker.retry_delay"),
            std::string::npos);
  EXPECT_NE(error_of("pipelines: 5").find("pipelines"), std::string::npos);
  EXPECT_NE(error_of("database: {path: x}").find("pipelines: required"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\ndatabase: {adapter: oracle}").find("database.adapter"), std::string::npos);
  EXPECT_NE(error_of("pipelines: '*'\nlogger: {level: loud}").find("logger.level"), std::string::npos);
  EXPECT_NE(error_of("pipelines: [unclosed").find("not valid YAML"), std::string::npos);
}

TEST(Config, UnreadableFileIsAnError) {
  EXPECT_THROW(load_config("/nonexistent/ductwork.yml"), ConfigError);
  testsupport::TempDir dir;
  EXPECT_THROW(load_config(dir.path()), ConfigError);  // a directory is not a file
}

TEST(Config, LoadsAnExplicitFile) {
  testsupport::TempDir dir;
  std::string path = dir.write("conf/ductwork.yml", "pipelines: [A]\ndatabase: {path: db.sqlite3}\n");
  Config c = load_config(path);
  EXPECT_EQ(c.source, path);
  EXPECT_EQ(c.database.path, dir.path() + "/conf/db.sqlite3");
}

}  // namespace
}  // namespace ductwork
