// The PostgreSQL dialect's two pure pieces: placeholders written for SQLite
// (`?`, `?N`) rewritten to PostgreSQL's `$N`, and the connection URL turned
// into libpq's keyword form with a password-free name for messages.
#include <gtest/gtest.h>

#include "store/postgresql/pg_connection.h"
#include "store/store_error.h"

namespace ductwork::pg {
namespace {

std::string dollars(const std::string& sql, int expected_count) {
  int count = -1;
  std::string out = to_dollar_placeholders(sql, &count);
  EXPECT_EQ(count, expected_count) << sql;
  return out;
}

TEST(PgPlaceholders, NumberedAndBareFollowSqliteNumbering) {
  EXPECT_EQ(dollars("SELECT 1", 0), "SELECT 1");
  EXPECT_EQ(dollars("UPDATE t SET a = ?1, b = ?1 WHERE id = ?2", 2), "UPDATE t SET a = $1, b = $1 WHERE id = $2");
  EXPECT_EQ(dollars("INSERT INTO t VALUES (?, ?), (?, ?)", 4), "INSERT INTO t VALUES ($1, $2), ($3, $4)");
  // A bare ? takes the number after the largest seen so far, as in SQLite.
  EXPECT_EQ(dollars("SELECT ?3, ?", 4), "SELECT $3, $4");
  EXPECT_EQ(dollars("SELECT ?12", 12), "SELECT $12");
}

TEST(PgPlaceholders, QuotedTextIsLeftAlone) {
  EXPECT_EQ(dollars("SELECT '?', \"a?b\", ? FROM t WHERE x = 'it''s ?'", 1),
            "SELECT '?', \"a?b\", $1 FROM t WHERE x = 'it''s ?'");
}

TEST(PgTarget, AUrlBecomesKeywordsAndItsNameHasNoPassword) {
  ConnectionTarget t = parse_target("postgresql://dw:s3cret@db.example:6543/jobs");
  EXPECT_EQ(t.display, "postgresql://dw@db.example:6543/jobs");
  EXPECT_NE(t.conninfo.find("host='db.example'"), std::string::npos) << t.conninfo;
  EXPECT_NE(t.conninfo.find("password='s3cret'"), std::string::npos) << t.conninfo;
  EXPECT_NE(t.conninfo.find("connect_timeout=5"), std::string::npos) << "a timeout is added: " << t.conninfo;
  EXPECT_EQ(t.display.find("s3cret"), std::string::npos);
}

TEST(PgTarget, AGivenTimeoutAndTheKeywordFormAreKept) {
  ConnectionTarget t = parse_target("host=/run/postgresql dbname=dw user=me connect_timeout=2");
  EXPECT_EQ(t.display, "postgresql://me@/run/postgresql/dw");
  EXPECT_NE(t.conninfo.find("connect_timeout='2'"), std::string::npos) << t.conninfo;
  EXPECT_EQ(t.conninfo.find("connect_timeout=5"), std::string::npos) << t.conninfo;
}

TEST(PgTarget, AMalformedUrlIsRefusedSayingWhy) {
  try {
    parse_target("postgresql://dw@db:notaport/jobs?bogus_option=1");
    FAIL() << "accepted";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("database url is not a PostgreSQL connection string"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ductwork::pg
