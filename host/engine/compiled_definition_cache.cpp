#include "engine/compiled_definition_cache.h"

#include <Poco/DigestEngine.h>
#include <Poco/SHA1Engine.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>
#include <vector>

#include "util/bounded_read.h"

namespace ductwork {
namespace fs = std::filesystem;
namespace {

// Bump when the compiler's output for the same text changes in a way a
// binary identity would not show (it always does across builds).
constexpr const char* kFormat = "ductwork-definition-cache-2";

// The running binary's size and modification time: a rebuilt binary gets
// new entries.
std::string binary_identity() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "unknown";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

bool make_private_folder(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder, ec)) return false;
  ::chmod(folder.c_str(), 0700);
  return ::access(folder.c_str(), W_OK | X_OK) == 0;
}

// What an entry's first line must say: the SHA-1 of its key (itself the
// hash of the definition file's text) and the document that follows.
std::string checksum(const std::string& key, const std::string& document) {
  Poco::SHA1Engine engine;
  engine.update(key);
  engine.update('\0');
  engine.update(document);
  return Poco::DigestEngine::digestToHex(engine.digest());
}

}  // namespace

CompiledDefinitionCache::CompiledDefinitionCache(std::string folder) : folder_(std::move(folder)) {
  if (!folder_.empty() && !make_private_folder(folder_)) folder_.clear();
  if (!folder_.empty()) binary_identity_ = binary_identity();
}

std::string CompiledDefinitionCache::default_folder() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/ductwork/definitions";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/ductwork/definitions";
  return "";
}

std::string CompiledDefinitionCache::key(const std::string& text) const {
  Poco::SHA1Engine engine;
  engine.update(std::string(kFormat));
  engine.update('\0');
  engine.update(binary_identity_);
  engine.update('\0');
  engine.update(text);
  return Poco::DigestEngine::digestToHex(engine.digest());
}

std::optional<std::string> CompiledDefinitionCache::get(const std::string& key) const {
  if (folder_.empty()) return std::nullopt;
  BoundedFile entry = read_bounded_file(folder_ + "/" + key + ".json", kMaxEntryBytes);
  if (entry.error != 0 || entry.too_large) return std::nullopt;
  // An entry is trusted only when it was written for this key: one copied
  // under another file's name, edited, or cut short is compiled again.
  const std::size_t newline = entry.text.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  std::string document = entry.text.substr(newline + 1);
  if (entry.text.compare(0, newline, checksum(key, document)) != 0) return std::nullopt;
  return document;
}

void CompiledDefinitionCache::put(const std::string& key, const std::string& document) const {
  if (folder_.empty()) return;
  std::string final_path = folder_ + "/" + key + ".json";
  std::string temp = final_path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string entry = checksum(key, document) + "\n" + document;
  const char* data = entry.data();
  std::size_t left = entry.size();
  bool ok = true;
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n <= 0) {
      ok = false;
      break;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), final_path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return;
  }
  prune();
}

void CompiledDefinitionCache::prune() const {
  // Entries are only written when a file changed (or the binary did), so
  // listing the folder here is rare; keep the newest kMaxEntries.
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  std::error_code ec;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code time_ec;
    auto when = it->last_write_time(time_ec);
    if (!time_ec) entries.emplace_back(when, it->path());
  }
  if (entries.size() <= kMaxEntries) return;
  std::sort(entries.begin(), entries.end());
  for (std::size_t i = 0; i + kMaxEntries < entries.size(); ++i) fs::remove(entries[i].second, ec);
}

}  // namespace ductwork
