// The archive of pruned pipelines (issue 37 item 4): `prune --archive DIR`
// and `retention.archive` append each pruned pipeline's status document to
// DIR/YYYY-MM-DD.jsonl.gz before its rows go, `status ID --archive DIR`
// reads it back, and an archive that cannot be written deletes nothing.
// Both dialects, through the real binary.
#include <zlib.h>

#include <ctime>
#include <filesystem>
#include <set>

#include "harness.h"

namespace ductwork::it {
namespace {

namespace fs = std::filesystem;

std::string utc_day() {
  const std::time_t now = std::time(nullptr);
  std::tm day{};
  gmtime_r(&now, &day);
  char name[16];
  std::strftime(name, sizeof name, "%Y-%m-%d", &day);
  return name;
}

// The archive files in `dir`, by name.
std::vector<std::string> archive_files(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The documents of an archive file, one per line, as `gzip -d` reads it.
std::vector<json> archived_documents(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot open " + path);
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  int error = Z_OK;
  const char* message = gzerror(file, &error);
  const std::string reason = message ? message : "";
  gzclose(file);
  if (n < 0 || (error != Z_OK && error != Z_BUF_ERROR)) throw std::runtime_error(path + ": " + reason);
  std::vector<json> docs;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) throw std::runtime_error(path + ": a line without its newline");
    docs.push_back(json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  return docs;
}

class PruneArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_.define("done.yml", chain_definition("Done", {"Inc", "Inc"}));
    ws_.define("fails.yml", chain_definition("Fails", {"FailPermanently"}));
    ws_.define("approval.yml", kApprovalDefinition);
    finished_ = {ws_.trigger("Done", {"1"}), ws_.trigger("Done", {"2"}), ws_.trigger("Fails", {"\"x\""})};
    dampened_ = ws_.trigger("Approval", {"1"});
    ws_.drain();
    for (const std::string& id : finished_) documents_[id] = ws_.status(id);
    ASSERT_EQ(documents_[finished_[2]]["status"], "halted");
  }

  Workspace ws_;
  std::vector<std::string> finished_;
  std::string dampened_;
  std::map<std::string, json> documents_;
};

TEST_F(PruneArchiveTest, EveryPrunedPipelineIsArchivedAsItsStatusDocumentAndReadsBack) {
  const std::string dir = ws_.file("archive/nested");
  ProcessResult dry = ws_.run({"prune", "--dry-run", "--archive", dir});
  ASSERT_EQ(dry.exit_code, 0) << dry.describe();
  EXPECT_TRUE(archive_files(dir).empty()) << "a dry run archives nothing";

  const std::string day = utc_day();
  ProcessResult r = ws_.run({"prune", "--archive", dir});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("3 pipeline(s) pruned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("archived in " + dir + "\n"), std::string::npos) << r.out;
  const std::vector<std::string> files = archive_files(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0] == day + ".jsonl.gz" || files[0] == utc_day() + ".jsonl.gz") << files[0];

  // One line per pruned pipeline: the document `status --json` gave.
  std::map<std::string, json> archived;
  for (const json& doc : archived_documents(dir + "/" + files[0])) archived[doc["id"].get<std::string>()] = doc;
  EXPECT_EQ(archived, documents_);

  for (const std::string& id : finished_) {
    EXPECT_EQ(ws_.run({"status", id}).exit_code, 2) << "pruned";
    ProcessResult read = ws_.run({"status", id, "--archive", dir, "--json"});
    ASSERT_EQ(read.exit_code, 0) << read.describe();
    EXPECT_EQ(json::parse(read.out), documents_[id]);
    ProcessResult text = ws_.run({"status", id, "--archive", dir});
    EXPECT_NE(text.out.find("pipeline " + id + "  "), std::string::npos) << text.out;
  }
  ProcessResult missing = ws_.run({"status", dampened_, "--archive", dir});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("pipeline id '" + dampened_ + "' is not in the archive " + dir), std::string::npos)
      << missing.err;
  ProcessResult no_folder = ws_.run({"status", finished_[0], "--archive", ws_.file("nowhere")});
  EXPECT_EQ(no_folder.exit_code, 2);
  EXPECT_NE(no_folder.err.find("archive folder " + ws_.file("nowhere") + " does not exist"), std::string::npos)
      << no_folder.err;
  EXPECT_EQ(ws_.run({"status", finished_[0], "--archive", dir, "--summary"}).exit_code, 2);
}

TEST_F(PruneArchiveTest, TheConfiguredArchiveTakesEveryPruneOfTheCommandAndOfTheHost) {
  ConfigOptions options;
  options.extra =
      "forking: none\nsupervisor: {polling_timeout: 0.1}\n"
      "retention: {completed: 0.2, interval: 0.2, archive: kept}\n";
  ws_.write_config(options);
  // On demand: the configured folder, relative to ductwork.yml.
  ProcessResult r = ws_.run({"prune", "--status", "halted"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("archived in " + ws_.file("kept")), std::string::npos) << r.out;
  // Inside `ductwork start`: the completed ones, past their age.
  testsupport::Subprocess host(ws_.command({"start"}), ws_.process_options(60));
  ASSERT_TRUE(eventually(30, [&] {
    return ws_.run({"status", finished_[0]}).exit_code == 2 && ws_.run({"status", finished_[1]}).exit_code == 2;
  })) << host.stdout_so_far();
  host.signal(SIGTERM);
  ProcessResult stopped = host.wait(30);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  for (const std::string& id : finished_) {
    ProcessResult read = ws_.run({"status", id, "--archive", ws_.file("kept"), "--json"});
    ASSERT_EQ(read.exit_code, 0) << read.describe();
    EXPECT_EQ(json::parse(read.out), documents_[id]);
  }
  EXPECT_EQ(ws_.status(dampened_)["status"], "dampened");
}

TEST_F(PruneArchiveTest, AnArchiveThatCannotBeWrittenDeletesNothing) {
  const DbSnapshot before = ws_.snapshot();
  // A folder that cannot be made: refused before anything is read.
  ws_.write("plain-file", "not a folder");
  ProcessResult bad = ws_.run({"prune", "--archive", ws_.file("plain-file/archive")});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_NE(bad.err.find("cannot create archive folder " + ws_.file("plain-file/archive")), std::string::npos)
      << bad.err;
  EXPECT_EQ(ws_.run({"prune", "--archive", ""}).exit_code, 2);
  // Today's file cannot be opened (a folder stands in its place): the
  // batch's delete rolls back, the command fails naming the file.
  const std::string dir = ws_.file("archive");
  fs::create_directories(dir + "/" + utc_day() + ".jsonl.gz");
  ProcessResult failed = ws_.run({"prune", "--archive", dir});
  EXPECT_EQ(failed.exit_code, 1) << failed.describe();
  EXPECT_NE(failed.err.find("cannot open archive " + dir + "/"), std::string::npos) << failed.err;
  EXPECT_EQ(ws_.snapshot(), before);
  for (const std::string& id : finished_) EXPECT_EQ(ws_.status(id), documents_[id]);
}

}  // namespace
}  // namespace ductwork::it
