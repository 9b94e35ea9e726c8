// engine/retention's batches: a fixed size for `ductwork prune`, and for
// the retention policy a size that doubles while a batch holds the write
// lock under half its time and halves once one holds it longer. Both
// dialects, through the real store.
#include "engine/retention.h"

#include "engine_fixture.h"

namespace ductwork::test {
namespace {

class RetentionBatchTest : public EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    configure("");
    const Definition def = compile("pipeline: P\nsteps:\n  - start: Inc\n");
    for (int i = 0; i < kPipelines; ++i) trigger(def, Json::array({i}));
    drain();
  }

  PruneReport prune(size_t batch, double batch_seconds) {
    PruneRequest request;
    request.statuses = {"completed"};  // one status: one run of batches
    request.batch_seconds = batch_seconds;
    return prune_pipelines(*store, request, nullptr, batch);
  }

  static constexpr int kPipelines = 300;
};

TEST_F(RetentionBatchTest, AFixedBatchIsKeptToTheEnd) {
  const PruneReport report = prune(10, 0);
  EXPECT_EQ(report.pipelines, kPipelines);
  EXPECT_EQ(report.transactions, kPipelines / 10 + 1) << "30 full batches, then one that finds nothing";
}

TEST_F(RetentionBatchTest, BatchesThatTakeLessThanHalfTheirTimeDouble) {
  // A minute per batch: 10, 20, 40, 80, then the last 150.
  const PruneReport report = prune(10, 60);
  EXPECT_EQ(report.pipelines, kPipelines);
  EXPECT_EQ(report.transactions, 5);
}

TEST_F(RetentionBatchTest, BatchesThatTakeLongerHalveDownToOne) {
  // No batch is that quick: 10, 5, 2, then one at a time.
  const PruneReport report = prune(10, 1e-9);
  EXPECT_EQ(report.pipelines, kPipelines);
  EXPECT_EQ(report.transactions, 3 + (kPipelines - 17) + 1);
}

}  // namespace
}  // namespace ductwork::test
