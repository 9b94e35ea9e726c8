#pragma once

#include <cstdint>

namespace ductwork::sqlite {

// A SQLite VFS that wraps the platform's default one and gathers the
// writes a commit makes to its -wal file into one write.
//
// SQLite appends a commit to the WAL as a 24-byte frame header and a page,
// one write() each: a one-step commit touching 30 pages is 60 system calls,
// and on this project's 2-core VMs a system call costs about 2 µs (one
// 124 KB write costs 10 µs against 117 µs for the 60 small ones). The
// wrapper keeps contiguous WAL writes in a buffer and writes them out
//   * right after the page of a commit frame (a frame header whose
//     "database size after commit" field is not zero), so the commit is in
//     the file before SQLite publishes it in the shared WAL index, and the
//     write's error is the commit's error;
//   * before anything else touches the WAL file (read, sync, truncate, size,
//     file control, close), when the buffer is full, and before a write
//     elsewhere in the file.
// Frames not yet written when a process dies belong to a transaction that
// never committed, which is what SQLite's recovery assumes of them anyway.
// Every other file (the database, its -shm) passes straight through.
//
// Installed once per process as the default VFS, before the first open.
void install_wal_write_buffer();

// Writes the wrapper made to -wal files and the writes SQLite asked of it,
// since the process started (for tests and benchmarks).
struct WalWriteCounts {
  uint64_t asked = 0;
  uint64_t written = 0;
};
WalWriteCounts wal_write_counts();

}  // namespace ductwork::sqlite
