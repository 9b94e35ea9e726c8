// The process step manifest reader (plugin/process_manifest.h): what a
// `*.steps.yml` says, and the refusals that name the line and the key.
#include "plugin/process_manifest.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "temp_dir.h"

namespace ductwork {
namespace {

namespace fs = std::filesystem;

class ProcessManifestTest : public ::testing::Test {
 protected:
  // Writes `text` as NAME and reads it.
  ProcessManifest read(const std::string& text, const std::string& name = "thumbs.steps.yml") {
    return read_process_manifest(dir.write(name, text));
  }
  // The refusal of `text`.
  std::string refusal(const std::string& text) {
    try {
      read(text);
    } catch (const ManifestError& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted: " << text;
    return "";
  }
  testsupport::TempDir dir;
};

TEST_F(ProcessManifestTest, ReadsTheCommandStepsEnvironmentAndFolder) {
  fs::create_directories(dir.file("work"));
  ProcessManifest m = read(
      "command: [sh, -c, \"exit 0\"]\nsteps: [Thumbnail, Resize]\ndirectory: work\n"
      "environment: {QUALITY: \"85\", MODE: fast}\nversion: \"1.2\"\n");
  EXPECT_EQ(m.name, "thumbs");  // the file name before .steps.yml
  EXPECT_EQ(m.version, "1.2");
  EXPECT_EQ(m.command, (std::vector<std::string>{"sh", "-c", "exit 0"}));
  EXPECT_EQ(fs::path(m.executable).filename(), "sh");
  EXPECT_TRUE(fs::path(m.executable).is_absolute());
  EXPECT_EQ(m.directory, fs::path(dir.file("work")).lexically_normal().string());
  EXPECT_EQ(m.steps, (std::vector<std::string>{"Thumbnail", "Resize"}));
  EXPECT_EQ(m.environment, (std::vector<std::pair<std::string, std::string>>{{"QUALITY", "85"}, {"MODE", "fast"}}));
  EXPECT_EQ(read("name: pics\ncommand: [sh]\nsteps: [A]\n").name, "pics");
}

TEST_F(ProcessManifestTest, APathCommandIsFoundAgainstItsFolder) {
  dir.write("serve.sh", "#!/bin/sh\n");
  fs::permissions(dir.file("serve.sh"), fs::perms::owner_all);
  EXPECT_EQ(read("command: [./serve.sh]\nsteps: [A]\n").executable,
            fs::path(dir.file("serve.sh")).lexically_normal().string());
  fs::permissions(dir.file("serve.sh"), fs::perms::owner_read);
  EXPECT_NE(refusal("command: [./serve.sh]\nsteps: [A]\n").find("./serve.sh is not an executable file"),
            std::string::npos);
}

TEST_F(ProcessManifestTest, RefusalsNameTheLineAndTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"command: [sh]\nsteps: [A]\ncomand: x\n", "line 3: unknown key 'comand', did you mean 'command'?"},
      {"steps: [A]\n", "command: missing"},
      {"command: sh\nsteps: [A]\n", "line 1: command: expected a non-empty list of strings, got \"sh\""},
      {"command: []\nsteps: [A]\n", "command: expected a non-empty list of strings, got an empty list"},
      {"command: [sh]\n", "steps: missing"},
      {"command: [sh]\nsteps: [A, A]\n", "steps: A is listed twice"},
      {"command: [sh]\nsteps: [\"bad name\"]\n", "bad name"},
      {"command: [sh]\nsteps: [A]\nenvironment: [X]\n", "line 3: environment: expected a map"},
      {"command: [sh]\nsteps: [A]\ndirectory: nowhere\n", "is not a folder"},
      {"command: [no-such-program-here]\nsteps: [A]\n", "no-such-program-here is not an executable on PATH"},
      {"- a list\n", "expected a map with command: and steps:"},
      {"command: [sh\n", "not valid YAML"},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_NE(refusal(text).find(expected), std::string::npos) << text << "\ngot: " << refusal(text);
  }
}

TEST_F(ProcessManifestTest, OnlyStepsYmlFilesAreManifests) {
  EXPECT_TRUE(is_process_manifest("/p/thumbs.steps.yml"));
  EXPECT_FALSE(is_process_manifest("/p/.steps.yml"));
  EXPECT_FALSE(is_process_manifest("/p/thumbs.yml"));
  EXPECT_FALSE(is_process_manifest("/p/libthumbs.so"));
}

}  // namespace
}  // namespace ductwork
