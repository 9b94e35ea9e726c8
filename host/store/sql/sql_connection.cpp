#include "store/sql/sql_connection.h"

#include <algorithm>
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

namespace {

// Days from 1970-01-01 to the given proleptic Gregorian date (Howard
// Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Reads `digits` decimal digits at text[*at]; false when one is not a digit.
bool read_digits(std::string_view text, size_t* at, int digits, int* out) {
  if (*at + static_cast<size_t>(digits) > text.size()) return false;
  int value = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = text[*at + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *at += static_cast<size_t>(digits);
  *out = value;
  return true;
}

bool read_char(std::string_view text, size_t* at, char expected) {
  if (*at >= text.size() || text[*at] != expected) return false;
  ++*at;
  return true;
}

}  // namespace

// Parsed by hand: every claim reads two of these, and sscanf + timegm cost
// about ten thousand instructions a pair.
int64_t db_time_micros(std::string_view db_time) {
  size_t at = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  const bool ok = read_digits(db_time, &at, 4, &year) && read_char(db_time, &at, '-') &&
                  read_digits(db_time, &at, 2, &month) && read_char(db_time, &at, '-') &&
                  read_digits(db_time, &at, 2, &day) && read_char(db_time, &at, ' ') &&
                  read_digits(db_time, &at, 2, &hour) && read_char(db_time, &at, ':') &&
                  read_digits(db_time, &at, 2, &minute) && read_char(db_time, &at, ':') &&
                  read_digits(db_time, &at, 2, &second) && read_char(db_time, &at, '.');
  // The fraction: one to six digits, read as a fraction of a second.
  int micros = 0, digits = 0;
  while (ok && at < db_time.size() && digits < 6 && db_time[at] >= '0' && db_time[at] <= '9') {
    micros = micros * 10 + (db_time[at++] - '0');
    ++digits;
  }
  if (!ok || digits == 0 || at != db_time.size() || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60) {
    throw StoreError("not a database time: \"" + std::string(db_time) + "\"");
  }
  for (int i = digits; i < 6; ++i) micros *= 10;
  const int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return ((days * 24 + hour) * 60 + minute) * 60 * 1000000 + static_cast<int64_t>(second) * 1000000 + micros;
}

namespace {

// `db_time` moved by `micros` (the result stays after 1970).
std::string shifted(const std::string& db_time, int64_t micros) {
  int64_t total = std::max<int64_t>(db_time_micros(db_time) + micros, 0);
  std::time_t secs = static_cast<std::time_t>(total / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%06lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(total % 1000000));
  return buf;
}

}  // namespace

std::string add_seconds(const std::string& db_time, double seconds) {
  if (!(seconds > 0)) return db_time;
  return shifted(db_time, std::llround(seconds * 1e6));
}

std::string seconds_before(const std::string& db_time, double seconds) {
  if (!(seconds > 0)) return db_time;
  return shifted(db_time, -std::llround(std::min(seconds, 1e9) * 1e6));
}

void append_batch_statement(std::string& out, const Dialect& dialect, std::string_view sql) {
  static constexpr std::string_view kInsertInto = "INSERT INTO ", kUpdate = "UPDATE ";
  if (sql.substr(0, kInsertInto.size()) == kInsertInto) {
    out.append(dialect.batch_insert_into).append(sql.substr(kInsertInto.size()));
  } else if (sql.substr(0, kUpdate.size()) == kUpdate) {
    out.append(dialect.batch_update).append(sql.substr(kUpdate.size()));
  } else {
    out.append(sql);
  }
}

std::optional<int64_t> db_time_micros_if_valid(std::string_view db_time) {
  try {
    return db_time_micros(db_time);
  } catch (const StoreError&) {
    return std::nullopt;
  }
}

double seconds_between(const std::string& earlier, const std::string& later) {
  const std::optional<int64_t> from = db_time_micros_if_valid(earlier), to = db_time_micros_if_valid(later);
  return from && to ? static_cast<double>(*to - *from) / 1e6 : -1;
}

}  // namespace ductwork::sql
