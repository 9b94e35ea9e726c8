// engine/prune_archive: one gzip member per append in the day's file, read
// back newest line first, and damage (a member cut short by a crash,
// garbage) skipped without losing the members after it.
#include "engine/prune_archive.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "temp_dir.h"

namespace ductwork {
namespace {

namespace fs = std::filesystem;
using testsupport::read_file;
using testsupport::TempDir;
using testsupport::write_file;

Json doc(const std::string& id, const std::string& status) {
  return Json::object({{"id", id}, {"status", status}, {"runs", Json::array()}});
}

TEST(PruneArchiveTest, FilesAreNamedByTheUtcDayAndAppendsAddMembers) {
  TempDir dir;
  ShiftedClock clock;
  PruneArchive archive(dir.file("a/b"), clock);
  EXPECT_TRUE(fs::is_directory(dir.file("a/b")));
  archive.append({doc("p1", "completed"), doc("p2", "halted")});
  const std::string first = archive.file_for_today();
  archive.append({doc("p3", "cancelled")});
  EXPECT_EQ(archive.file_for_today(), first);
  clock.advance(86400);  // tomorrow: a new file
  archive.append({doc("p1", "completed-again")});
  EXPECT_NE(archive.file_for_today(), first);
  EXPECT_EQ(fs::path(first).filename().string().size(), std::string("2026-12-06.jsonl.gz").size());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.file("a/b"))) files.push_back(e.path().filename().string());
  EXPECT_EQ(files.size(), 2u);

  EXPECT_EQ(find_archived(dir.file("a/b"), "p2"), doc("p2", "halted"));
  EXPECT_EQ(find_archived(dir.file("a/b"), "p3"), doc("p3", "cancelled"));
  // Archived on two days: the newest day's line wins.
  EXPECT_EQ(find_archived(dir.file("a/b"), "p1"), doc("p1", "completed-again"));
  // An id found only inside another document is not that document.
  EXPECT_FALSE(find_archived(dir.file("a/b"), "p").has_value());
  EXPECT_FALSE(find_archived(dir.file("a/b"), "completed").has_value());
}

TEST(PruneArchiveTest, AMemberCutShortOrGarbageIsSkippedAndTheMembersAfterItRead) {
  TempDir dir;
  PruneArchive archive(dir.path());
  archive.append({doc("before", "completed")});
  const std::string path = archive.file_for_today();
  const std::string whole = read_file(path);
  // Half a member, as a kill in the middle of an append leaves it, then
  // bytes that are no gzip at all.
  write_file(path, whole + whole.substr(0, whole.size() / 2) + std::string("\x1f\x8b\x08garbage\n", 11));
  archive.append({doc("after", "completed"), doc("before", "second")});
  EXPECT_EQ(find_archived(dir.path(), "after"), doc("after", "completed"));
  EXPECT_EQ(find_archived(dir.path(), "before"), doc("before", "second"));
  // A file that is nothing but garbage reads as holding nothing.
  write_file(dir.file("2000-01-01.jsonl.gz"), "not gzip at all");
  EXPECT_FALSE(find_archived(dir.path(), "elsewhere").has_value());
  EXPECT_EQ(find_archived(dir.path(), "after"), doc("after", "completed"));
}

TEST(PruneArchiveTest, FoldersThatCannotBeUsedAreRefusedNamingThem) {
  TempDir dir;
  write_file(dir.file("file"), "x");
  try {
    PruneArchive archive(dir.file("file/sub"));
    FAIL() << "a folder under a file";
  } catch (const ArchiveError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create archive folder " + dir.file("file/sub")), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(find_archived(dir.file("missing"), "p1"), ArchiveError);
  // Today's file cannot be written: the append throws, naming it.
  PruneArchive archive(dir.file("archive"));
  fs::create_directories(archive.file_for_today());
  try {
    archive.append({doc("p1", "completed")});
    FAIL() << "today's file is a folder";
  } catch (const ArchiveError& e) {
    EXPECT_NE(std::string(e.what()).find(archive.file_for_today()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ductwork
