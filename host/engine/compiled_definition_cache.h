#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace ductwork {

// Compiled definitions by the content of their file, so a command does not
// pay for compiling every unchanged definition file on every call (YAML
// parsing and the SDK's builder cost about five times what reading the
// canonical JSON back does). Entries live in one folder, one file each,
// named by the SHA-1 of the definition file's text together with the
// identity of this ductwork binary (a rebuilt compiler never reads an old
// entry). Only files that compiled are cached: a broken file is compiled
// (and reported) every time.
//
// An entry's first line is a checksum of its key and its document, so an
// entry that does not belong to the file's text (copied under another
// key, edited, cut short) is never trusted: get() ignores it, and the file
// is compiled and the entry rewritten.
//
// Every failure of the cache itself (no folder, unreadable, corrupt or
// mismatching entry, full disk) falls back to compiling; it is never an
// error.
class CompiledDefinitionCache {
 public:
  // A cache in `folder`; "" disables it.
  explicit CompiledDefinitionCache(std::string folder);

  // $XDG_CACHE_HOME/ductwork/definitions, else $HOME/.cache/ductwork/
  // definitions, else "" (no cache: e.g. a service without a home).
  static std::string default_folder();

  // The key of a definition file's text.
  std::string key(const std::string& text) const;
  // The stored document ({"pipeline": name, "definition": canonical}) text,
  // when an entry for `key` exists and its checksum matches.
  std::optional<std::string> get(const std::string& key) const;
  // Stores it (atomically: a temporary file renamed into place, mode 0600).
  void put(const std::string& key, const std::string& document) const;

  const std::string& folder() const { return folder_; }

  // Entries kept; writing one more removes the oldest.
  static constexpr std::size_t kMaxEntries = 1000;
  // An entry longer than this is not read (a definition file is at most
  // 1 MiB; its compiled form is about the same size).
  static constexpr std::size_t kMaxEntryBytes = 16u << 20;

 private:
  void prune() const;

  std::string folder_;
  std::string binary_identity_;
};

}  // namespace ductwork
