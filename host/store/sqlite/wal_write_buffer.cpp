#include "store/sqlite/wal_write_buffer.h"

#include <sqlite3.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ductwork::sqlite {

namespace {

// Enough for the largest commit a worker's batch makes (a few hundred
// frames); a bigger transaction is written in pieces of this size.
constexpr size_t kBufferBytes = 4u << 20;
// The unix VFS writes at most 128 KiB - 1 bytes per call (os_unix.c masks
// the length with 0x1ffff), so a flush is written in pieces of this size.
constexpr size_t kWriteBytes = 0x1f000;
constexpr int kFrameHeaderBytes = 24;
// wal.c: the writer lock is the first of the -shm locks.
constexpr int kWalWriteLock = 0;

std::atomic<uint64_t> g_asked{0};
std::atomic<uint64_t> g_written{0};

sqlite3_vfs* g_real = nullptr;
sqlite3_vfs g_vfs;
sqlite3_io_methods g_methods[4];  // by the wrapped file's iVersion (1 – 3)

struct File {
  sqlite3_file base;
  sqlite3_file* real;
  bool is_wal;
  // A database file's -wal (to flush before its shared-memory locks move),
  // and a -wal's database file (to unlink on close). Either may be null.
  File* wal;
  File* db;
  char* buffer;
  sqlite3_int64 start;  // file offset of buffer[0]
  size_t length;
  bool flush_after_next_write;  // the last write was a commit frame's header
};

bool is_ours(const sqlite3_file* f) {
  return f != nullptr && f->pMethods >= &g_methods[0] && f->pMethods <= &g_methods[3];
}

File* self(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* real(sqlite3_file* f) { return self(f)->real; }
const sqlite3_io_methods* io(sqlite3_file* f) { return real(f)->pMethods; }

// Writes `length` bytes at `offset` in pieces the wrapped VFS accepts.
int write_through(sqlite3_file* real, const char* data, size_t length, sqlite3_int64 offset) {
  for (size_t done = 0; done < length;) {
    const size_t piece = length - done < kWriteBytes ? length - done : kWriteBytes;
    g_written.fetch_add(1, std::memory_order_relaxed);
    int rc =
        real->pMethods->xWrite(real, data + done, static_cast<int>(piece), offset + static_cast<sqlite3_int64>(done));
    if (rc != SQLITE_OK) return rc;
    done += piece;
  }
  return SQLITE_OK;
}

int flush(File* f) {
  if (f == nullptr || f->length == 0) return SQLITE_OK;
  const size_t length = f->length;
  f->length = 0;
  return write_through(f->real, f->buffer, length, f->start);
}

// The frame header of the last frame of a transaction names the database's
// size after the commit (bytes 4 – 7, big-endian); other frames have zero.
bool is_commit_frame_header(const void* data, int amount) {
  if (amount != kFrameHeaderBytes) return false;
  const auto* p = static_cast<const unsigned char*>(data);
  return (p[4] | p[5] | p[6] | p[7]) != 0;
}

int x_close(sqlite3_file* f) {
  File* s = self(f);
  int rc = flush(s);
  if (s->wal) s->wal->db = nullptr;
  if (s->db) s->db->wal = nullptr;
  int closed = io(f)->xClose(real(f));
  std::free(s->buffer);
  s->buffer = nullptr;
  return rc != SQLITE_OK ? rc : closed;
}

// Anything that looks at or moves the -wal sees the buffered bytes first.
template <typename Forward>
int after_flush(sqlite3_file* f, Forward forward) {
  int rc = flush(self(f));
  return rc != SQLITE_OK ? rc : forward(real(f));
}

int x_read(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
  return after_flush(f, [&](sqlite3_file* r) { return r->pMethods->xRead(r, out, amount, offset); });
}

int x_write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  File* s = self(f);
  if (!s->is_wal) return io(f)->xWrite(real(f), data, amount, offset);
  g_asked.fetch_add(1, std::memory_order_relaxed);
  const size_t n = static_cast<size_t>(amount);
  if (s->length > 0 && (offset != s->start + static_cast<sqlite3_int64>(s->length) || s->length + n > kBufferBytes)) {
    if (int rc = flush(s); rc != SQLITE_OK) return rc;
  }
  if (n > kBufferBytes) return write_through(real(f), static_cast<const char*>(data), n, offset);
  if (s->buffer == nullptr) {
    s->buffer = static_cast<char*>(std::malloc(kBufferBytes));
    if (s->buffer == nullptr) return SQLITE_IOERR_NOMEM;
  }
  if (s->length == 0) s->start = offset;
  std::memcpy(s->buffer + s->length, data, n);
  s->length += n;
  if (s->flush_after_next_write) {
    // The commit frame's page: the transaction is complete, write it now.
    s->flush_after_next_write = false;
    return flush(s);
  }
  s->flush_after_next_write = is_commit_frame_header(data, amount);
  return SQLITE_OK;
}

int x_truncate(sqlite3_file* f, sqlite3_int64 size) {
  return after_flush(f, [&](sqlite3_file* r) { return r->pMethods->xTruncate(r, size); });
}

int x_sync(sqlite3_file* f, int flags) {
  return after_flush(f, [&](sqlite3_file* r) { return r->pMethods->xSync(r, flags); });
}

int x_file_size(sqlite3_file* f, sqlite3_int64* size) {
  return after_flush(f, [&](sqlite3_file* r) { return r->pMethods->xFileSize(r, size); });
}

int x_lock(sqlite3_file* f, int level) { return io(f)->xLock(real(f), level); }
int x_unlock(sqlite3_file* f, int level) { return io(f)->xUnlock(real(f), level); }
int x_check_reserved_lock(sqlite3_file* f, int* out) { return io(f)->xCheckReservedLock(real(f), out); }

int x_file_control(sqlite3_file* f, int op, void* arg) {
  return after_flush(f, [&](sqlite3_file* r) { return r->pMethods->xFileControl(r, op, arg); });
}

int x_sector_size(sqlite3_file* f) { return io(f)->xSectorSize(real(f)); }
int x_device_characteristics(sqlite3_file* f) { return io(f)->xDeviceCharacteristics(real(f)); }

int x_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return io(f)->xShmMap(real(f), region, size, extend, out);
}

int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  File* s = self(f);
  if (s->wal && s->wal->length > 0 && (flags & SQLITE_SHM_UNLOCK) && offset <= kWalWriteLock &&
      kWalWriteLock < offset + n) {
    // The writer lock is let go with frames still buffered: a transaction
    // that rolled back. Written out as SQLite would have written them
    // (beyond the last commit, so ignored by every reader), never later,
    // when another writer may have used those offsets.
    flush(s->wal);
    s->wal->flush_after_next_write = false;
  }
  return io(f)->xShmLock(real(f), offset, n, flags);
}

void x_shm_barrier(sqlite3_file* f) {
  File* s = self(f);
  if (s->wal) flush(s->wal);  // empty after a commit; kept as a second guard
  io(f)->xShmBarrier(real(f));
}

int x_shm_unmap(sqlite3_file* f, int delete_flag) { return io(f)->xShmUnmap(real(f), delete_flag); }

int x_fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return after_flush(f, [&](sqlite3_file* r) { return r->pMethods->xFetch(r, offset, amount, out); });
}

int x_unfetch(sqlite3_file* f, sqlite3_int64 offset, void* page) { return io(f)->xUnfetch(real(f), offset, page); }

int x_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  File* s = self(f);
  std::memset(s, 0, sizeof(File));
  s->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(File));
  int rc = g_real->xOpen(g_real, name, s->real, flags, out_flags);
  const sqlite3_io_methods* methods = s->real->pMethods;
  if (methods == nullptr) {
    f->pMethods = nullptr;
    return rc;
  }
  const int version = methods->iVersion < 1 ? 1 : (methods->iVersion > 3 ? 3 : methods->iVersion);
  f->pMethods = &g_methods[version];
  if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && name != nullptr) {
    s->is_wal = true;
    sqlite3_file* db = sqlite3_database_file_object(name);
    if (is_ours(db)) {
      s->db = self(db);
      s->db->wal = s;
    }
  }
  return rc;
}

void fill_methods() {
  sqlite3_io_methods all{};
  all.xClose = x_close;
  all.xRead = x_read;
  all.xWrite = x_write;
  all.xTruncate = x_truncate;
  all.xSync = x_sync;
  all.xFileSize = x_file_size;
  all.xLock = x_lock;
  all.xUnlock = x_unlock;
  all.xCheckReservedLock = x_check_reserved_lock;
  all.xFileControl = x_file_control;
  all.xSectorSize = x_sector_size;
  all.xDeviceCharacteristics = x_device_characteristics;
  all.xShmMap = x_shm_map;  // version 2
  all.xShmLock = x_shm_lock;
  all.xShmBarrier = x_shm_barrier;
  all.xShmUnmap = x_shm_unmap;
  all.xFetch = x_fetch;  // version 3
  all.xUnfetch = x_unfetch;
  for (int version = 1; version <= 3; ++version) {
    sqlite3_io_methods& m = g_methods[version];
    m = all;
    m.iVersion = version;
    if (version < 2) {
      m.xShmMap = nullptr;
      m.xShmLock = nullptr;
      m.xShmBarrier = nullptr;
      m.xShmUnmap = nullptr;
    }
    if (version < 3) {
      m.xFetch = nullptr;
      m.xUnfetch = nullptr;
    }
  }
}

}  // namespace

void install_wal_write_buffer() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_real = sqlite3_vfs_find(nullptr);
    if (g_real == nullptr) return;
    fill_methods();
    g_vfs = *g_real;  // every other method (delete, access, time, …) is the platform's
    g_vfs.zName = "ductwork-wal-buffer";
    g_vfs.pNext = nullptr;
    g_vfs.szOsFile = static_cast<int>(sizeof(File)) + g_real->szOsFile;
    g_vfs.xOpen = x_open;
    sqlite3_vfs_register(&g_vfs, /*makeDflt=*/1);
  });
}

WalWriteCounts wal_write_counts() {
  return {g_asked.load(std::memory_order_relaxed), g_written.load(std::memory_order_relaxed)};
}

}  // namespace ductwork::sqlite
