#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/clock.h"
#include "util/json.h"

namespace ductwork {

// The archive could not be written or read (a folder that cannot be
// created, a full disk, a file that is not an archive); the message names
// the path and the reason. A prune whose archive fails deletes nothing.
class ArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The archive of pruned pipelines (SPEC §16, `retention.archive`, `prune
// --archive`, docs/operations.md "Archive"): in folder DIR, one file per
// day of pruning (UTC), DIR/YYYY-MM-DD.jsonl.gz, each line one pipeline's
// status document (`status --json`, with its `id`). Each append is one
// gzip member (a file of several members is one gzip stream to `zcat`),
// written and fsynced, the folder too when the file is new, before the
// prune's delete commits: a pruned pipeline is always in the archive. A
// prune whose delete then fails leaves a pipeline archived and still there;
// it is archived again when it is pruned, and readers take its last line.
class PruneArchive {
 public:
  // Creates `directory` (and its parents) when missing; throws ArchiveError
  // when it cannot.
  explicit PruneArchive(std::string directory, const Clock& clock = Clock::system());

  // Appends one line per document to today's file and syncs it. Throws
  // ArchiveError; on a throw, what it wrote may be a damaged member, which
  // find_archived skips.
  void append(const std::vector<Json>& documents);

  const std::string& directory() const { return directory_; }
  // The file append writes to now.
  std::string file_for_today() const;

 private:
  std::string directory_;
  const Clock& clock_;
};

// The last archived status document of `pipeline_id` in `directory`
// (newest day first); nullopt when no file holds it. A member damaged by a
// crash in the middle of an append is skipped, the members after it read.
// Throws ArchiveError when the folder cannot be read.
std::optional<Json> find_archived(const std::string& directory, const std::string& pipeline_id);

}  // namespace ductwork
