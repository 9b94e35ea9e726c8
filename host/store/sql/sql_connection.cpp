#include "store/sql/sql_connection.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace ductwork::sql {

Statement Connection::prepare(const std::string& sql, Planning planning) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.emplace(sql, compile(sql, planning)).first;
  StatementBackend* backend = it->second.get();
  if (backend->in_use) {
    throw std::logic_error("database " + name() + ": statement already in use (a nested use of the same SQL would "
                           "reset the outer one): " + sql);
  }
  backend->in_use = true;
  return Statement(backend);
}

void Connection::drop_statements() {
  for (const auto& [sql, backend] : cache_) {
    if (backend->in_use) throw std::logic_error("database " + name() + ": statements dropped while in use: " + sql);
  }
  cache_.clear();
}

void Connection::fail(const std::string& what, StoreFault fault) const {
  throw StoreError("database " + name() + ": " + what, fault);
}

std::string db_now(Connection& conn) {
  auto stmt = conn.prepare("SELECT dw_now()");
  stmt.step();
  return stmt.text(0);
}

int64_t db_time_micros(const std::string& db_time) {
  std::tm tm{};
  int micros = 0;
  if (std::sscanf(db_time.c_str(), "%d-%d-%d %d:%d:%d.%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &micros) != 7) {
    throw StoreError("not a database time: \"" + db_time + "\"");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000000 + micros;
}

std::string add_seconds(const std::string& db_time, double seconds) {
  if (!(seconds > 0)) return db_time;
  int64_t total = db_time_micros(db_time) + std::llround(seconds * 1e6);
  std::time_t secs = static_cast<std::time_t>(total / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%06lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(total % 1000000));
  return buf;
}

double seconds_between(const std::string& earlier, const std::string& later) {
  try {
    return static_cast<double>(db_time_micros(later) - db_time_micros(earlier)) / 1e6;
  } catch (const StoreError&) {
    return -1;
  }
}

}  // namespace ductwork::sql
