// What the two dialects spell differently for set-based statements (issue
// 11): a JSON list of keys tested against a unique column (Dialect::id_in)
// and a JSON object read as (key, value) rows (Dialect::json_object_rows),
// with keys and values that need escaping; and, on PostgreSQL, statements
// planned each run, run at once and deferred. On the dialect of the suite
// (SQLite; PostgreSQL for the pg. copy).
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "store/postgresql/pg_connection.h"
#include "store/sqlite/sqlite_connection.h"
#include "temp_dir.h"
#include "test_database.h"

namespace ductwork::sql {
namespace {

const std::vector<std::string> kKeys = {"plain", "a\"quote", "back\\slash", "line\nbreak", "tab\there",
                                        "ctl\x01", "ünïcødé", "{\"json\": [1]}", "\\u0000 as text"};

class SqlDialectTest : public ::testing::TestWithParam<Connection::Planning> {
 protected:
  void SetUp() override {
    if (testsupport::on_postgresql()) {
      pg_ = std::make_unique<testsupport::PgDatabase>(testsupport::PgDatabase::Schema::kEmpty);
      conn_ = std::make_unique<pg::Connection>(pg::parse_target(pg_->url()));
    } else {
      conn_ = std::make_unique<sqlite::Connection>(dir_.file("d.sqlite3"));
    }
    const bool postgres = conn_->dialect().name == "postgresql";
    conn_->exec_script(std::string("CREATE TABLE t (id TEXT PRIMARY KEY, doc ") + (postgres ? "JSON" : "TEXT") +
                       ")");
    for (const std::string& key : kKeys) conn_->prepare("INSERT INTO t (id) VALUES (?1)").bind(1, key).exec();
  }

  std::set<std::string> ids_in(const std::vector<std::string>& keys) {
    auto select = conn_->prepare("SELECT id FROM t WHERE id" + conn_->dialect().id_in("?1"), GetParam());
    select.bind(1, json_string_list(keys));
    std::set<std::string> out;
    while (select.step()) out.insert(select.text(0));
    return out;
  }

  testsupport::TempDir dir_;
  std::unique_ptr<testsupport::PgDatabase> pg_;
  std::unique_ptr<Connection> conn_;
};

TEST_P(SqlDialectTest, AListOfKeysFindsExactlyThoseRows) {
  EXPECT_EQ(ids_in(kKeys), std::set<std::string>(kKeys.begin(), kKeys.end()));
  EXPECT_EQ(ids_in({kKeys[1], kKeys[3], "absent"}), (std::set<std::string>{kKeys[1], kKeys[3]}));
  EXPECT_TRUE(ids_in({}).empty());
}

TEST_P(SqlDialectTest, AnObjectOfStringsUpdatesEachRowWithItsOwnTextVerbatim) {
  // JSON documents as a step might return them: spacing, escapes and key
  // order must come back exactly as written.
  std::vector<std::pair<std::string, std::string>> docs;
  for (size_t i = 0; i < kKeys.size(); ++i) {
    docs.emplace_back(kKeys[i], "{\"payload\": [" + std::to_string(i) + ", \"x\\ny\", {\"b\":1,\"a\":2}],\n \"k\": \"" +
                                    (i % 2 ? std::string("\\u00e9") : std::string("é")) + "\"}");
  }
  const Dialect& dialect = conn_->dialect();
  const std::string sql = "UPDATE t SET doc = " + dialect.as_json("v.value") + " FROM " +
                          dialect.json_object_rows("?1") + " AS v WHERE t.id = v.key";
  // Deferred (PostgreSQL's pipeline; SQLite runs it at once), then read.
  conn_->begin_write();
  conn_->prepare(sql, GetParam()).bind(1, json_string_object(docs)).exec_deferred();
  conn_->commit();
  for (const auto& [key, doc] : docs) {
    auto select = conn_->prepare("SELECT doc FROM t WHERE id = ?1");
    select.bind(1, key);
    ASSERT_TRUE(select.step()) << key;
    EXPECT_EQ(select.text(0), doc) << key;
  }
}

// Within a write transaction a read sees the writes sent before it (on
// PostgreSQL they travel in the read's round trip, with the BEGIN); a
// statement that fails there is the one named, its transaction leaves
// nothing, and the connection goes on (issue 42).
TEST_P(SqlDialectTest, AReadAfterDeferredWritesSeesThemAndAFailureNamesItsOwnStatement) {
  {
    WriteTransaction tx(*conn_);
    conn_->prepare("INSERT INTO t (id) VALUES (?1)", GetParam()).bind(1, "deferred").exec_deferred();
    {
      auto count = conn_->prepare("SELECT COUNT(*) FROM t WHERE id = ?1", GetParam());
      count.bind(1, "deferred");
      ASSERT_TRUE(count.step());
      EXPECT_EQ(count.int64(0), 1) << "the read sees the write sent before it";
    }
    conn_->prepare("INSERT INTO t (id) VALUES (?1)", GetParam()).bind(1, "then gone").exec_deferred();
    try {
      auto missing = conn_->prepare("SELECT id FROM no_such_table", GetParam());
      missing.step();
      ADD_FAILURE() << "a read of a missing table succeeded";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("no_such_table"), std::string::npos) << e.what();
    }
  }  // rolled back
  {
    auto gone = conn_->prepare("SELECT COUNT(*) FROM t WHERE id IN ('deferred', 'then gone')");
    ASSERT_TRUE(gone.step());
    EXPECT_EQ(gone.int64(0), 0) << "nothing of the failed transaction stayed";
  }
  // A deferred write that fails is reported by the commit that follows it.
  {
    WriteTransaction tx(*conn_);
    EXPECT_THROW(
        {
          conn_->prepare("INSERT INTO t (id) VALUES (?1)", GetParam()).bind(1, kKeys[0]).exec_deferred();
          tx.commit();
        },
        StoreError);
  }
  WriteTransaction tx(*conn_);
  conn_->prepare("INSERT INTO t (id) VALUES (?1)", GetParam()).bind(1, "after").exec_deferred();
  tx.commit();
  auto after = conn_->prepare("SELECT COUNT(*) FROM t WHERE id = 'after'");
  ASSERT_TRUE(after.step());
  EXPECT_EQ(after.int64(0), 1) << "the connection goes on";
}

INSTANTIATE_TEST_SUITE_P(Planning, SqlDialectTest,
                         ::testing::Values(Connection::Planning::kCached, Connection::Planning::kEachRun),
                         [](const auto& info) {
                           return info.param == Connection::Planning::kCached ? "Cached" : "EachRun";
                         });

}  // namespace
}  // namespace ductwork::sql
