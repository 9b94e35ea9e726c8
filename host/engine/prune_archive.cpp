#include "engine/prune_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "util/fault.h"

namespace ductwork {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSuffix = ".jsonl.gz";
// gzip's first three bytes (magic, deflate): where a member may start.
constexpr std::string_view kMemberStart("\x1f\x8b\x08", 3);
constexpr size_t kChunk = 1 << 16;

std::string reason(int error) { return std::strerror(error); }

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// `text` as one gzip member.
std::string gzip_member(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw ArchiveError("cannot start gzip compression");
  }
  std::string out;
  char buffer[kChunk];
  size_t at = 0;
  int rc = Z_OK;
  do {
    const size_t chunk = std::min<size_t>(text.size() - at, UINT_MAX / 2);
    const bool last = at + chunk == text.size();
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + at));
    z.avail_in = static_cast<uInt>(chunk);
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      rc = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      out.append(buffer, sizeof buffer - z.avail_out);
    } while (z.avail_out == 0);
    at += chunk;
  } while (at < text.size());
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw ArchiveError("gzip compression failed");
  return out;
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ArchiveError("cannot write archive " + path + ": " + reason(errno));
    at += static_cast<size_t>(n);
  }
}

void sync_folder(const std::string& directory) {
  FileDescriptor folder(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (folder.get() < 0 || ::fsync(folder.get()) != 0) {
    throw ArchiveError("cannot sync archive folder " + directory + ": " + reason(errno));
  }
}

// Each line of `text` that is the status document of `pipeline_id` goes
// to `found` (the later replaces the earlier).
void take_matching_lines(const std::string& text, const std::string& pipeline_id, std::optional<Json>* found) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (line.find(pipeline_id) != std::string_view::npos) {
      if (auto doc = try_parse_json(line); doc && doc->is_object()) {
        const Json* id = doc->find("id");
        if (id && id->is_string() && id->as_string() == pipeline_id) *found = std::move(*doc);
      }
    }
    start = end + 1;
  }
}

// Reads one archive file member by member; a member that does not inflate
// to its end with a good checksum is skipped, reading resumes at the next
// place a member may start.
class ArchiveFileReader {
 public:
  explicit ArchiveFileReader(const std::string& path) : path_(path), file_(path, std::ios::binary) {
    if (!file_) throw ArchiveError("cannot read archive " + path + ": " + reason(errno));
  }

  std::optional<Json> find(const std::string& pipeline_id) {
    std::optional<Json> found;
    while (!in_.empty() || fill()) {
      std::string text;
      size_t used = 0;
      if (inflate_member(&text, &used)) {
        take_matching_lines(text, pipeline_id, &found);
        in_.erase(0, used);
      } else if (!skip_to_next_member()) {
        break;
      }
    }
    return found;
  }

 private:
  bool fill() {
    if (eof_) return false;
    char buffer[kChunk];
    file_.read(buffer, sizeof buffer);
    const std::streamsize n = file_.gcount();
    if (n <= 0) {
      if (file_.bad()) throw ArchiveError("cannot read archive " + path_ + ": " + reason(errno));
      eof_ = true;
      return false;
    }
    in_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  // The member at in_[0], whole, into `text`; `used`: its length in in_.
  // False when it is damaged or cut short.
  bool inflate_member(std::string* text, size_t* used) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) throw ArchiveError("cannot start gzip decompression");
    char buffer[kChunk];
    int rc = Z_OK;
    while (true) {
      if (*used == in_.size() && !fill()) break;  // cut short
      const size_t available = std::min<size_t>(in_.size() - *used, UINT_MAX / 2);
      z.next_in = reinterpret_cast<Bytef*>(in_.data() + *used);
      z.avail_in = static_cast<uInt>(available);
      const size_t before = *used;
      const size_t written_before = text->size();
      do {
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        rc = inflate(&z, Z_NO_FLUSH);
        text->append(buffer, sizeof buffer - z.avail_out);
      } while (rc == Z_OK && z.avail_out == 0);
      *used = before + (available - z.avail_in);
      if (rc == Z_STREAM_END) break;
      if (rc != Z_OK && rc != Z_BUF_ERROR) break;  // damaged
      if (*used == before && text->size() == written_before && *used < in_.size()) {
        rc = Z_DATA_ERROR;  // no progress with input left
        break;
      }
    }
    inflateEnd(&z);
    return rc == Z_STREAM_END;
  }

  // Drops the damaged member's first byte and everything up to the next
  // place a member may start; false when the file has none.
  bool skip_to_next_member() {
    size_t from = 1;
    while (true) {
      const size_t next = in_.find(kMemberStart, from);
      if (next != std::string::npos) {
        in_.erase(0, next);
        return true;
      }
      // Keep what could be the start of a member cut by the buffer's end.
      const size_t keep = std::min(in_.size(), kMemberStart.size() - 1);
      in_.erase(0, in_.size() - keep);
      from = 0;
      if (!fill()) {
        in_.clear();
        return false;
      }
    }
  }

  std::string path_;
  std::ifstream file_;
  std::string in_;  // read, not yet consumed; in_[0] starts the current member
  bool eof_ = false;
};

}  // namespace

PruneArchive::PruneArchive(std::string directory, const Clock& clock) : directory_(std::move(directory)), clock_(clock) {
  std::error_code error;
  fs::create_directories(directory_, error);
  if (error) throw ArchiveError("cannot create archive folder " + directory_ + ": " + error.message());
  if (!fs::is_directory(directory_, error)) throw ArchiveError("archive " + directory_ + " is not a folder");
}

std::string PruneArchive::file_for_today() const {
  const std::time_t now = std::chrono::system_clock::to_time_t(clock_.wall());
  std::tm day{};
  gmtime_r(&now, &day);
  char name[32];
  std::strftime(name, sizeof name, "%Y-%m-%d", &day);
  return (fs::path(directory_) / (std::string(name) + kSuffix)).string();
}

void PruneArchive::append(const std::vector<Json>& documents) {
  if (documents.empty()) return;
  std::string lines;
  for (const Json& doc : documents) lines += doc.dump() + "\n";
  const std::string member = gzip_member(lines);
  const std::string path = file_for_today();
  bool created = true;
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  }
  if (fd < 0) throw ArchiveError("cannot open archive " + path + ": " + reason(errno));
  FileDescriptor file(fd);
  struct stat before {};
  if (::fstat(fd, &before) != 0) throw ArchiveError("cannot read archive " + path + ": " + reason(errno));
  try {
    // In two writes: the durability suite kills a prune between them, as a
    // crash in the middle of an append would leave the file.
    const size_t half = member.size() / 2;
    write_all(fd, member.substr(0, half), path);
    fault_point("inside_archive_append");
    write_all(fd, member.substr(half), path);
    if (::fsync(fd) != 0) throw ArchiveError("cannot sync archive " + path + ": " + reason(errno));
  } catch (const ArchiveError&) {
    // A full disk: take the partial member back, so the file stays whole.
    if (::ftruncate(fd, before.st_size) != 0) {
      // Left as it is: readers skip a damaged member.
    }
    throw;
  }
  if (created) sync_folder(directory_);
}

std::optional<Json> find_archived(const std::string& directory, const std::string& pipeline_id) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) throw ArchiveError("archive folder " + directory + " does not exist");
  std::vector<std::string> files;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() > std::strlen(kSuffix) && name.compare(name.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0) {
      files.push_back(it->path().string());
    }
  }
  if (error) throw ArchiveError("cannot read archive folder " + directory + ": " + error.message());
  std::sort(files.rbegin(), files.rend());  // newest day first
  for (const std::string& file : files) {
    if (auto doc = ArchiveFileReader(file).find(pipeline_id)) return doc;
  }
  return std::nullopt;
}

}  // namespace ductwork
