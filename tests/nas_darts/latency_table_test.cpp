// The per-op latency table: one positive entry per candidate block (measured here through the
// inference session on the local CPU), skip = 0, the JSON cache re-used for the same positions
// and source and measured again for another.
#include "nas/latency_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/runtime/model_io.h"
#include "test_space.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("darts_table_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// A stand-in latency: the model's multiply-accumulates over a nominal rate, plus 1 µs, so the
// entries are deterministic (timing is for benchmarks, not tests). Counts its calls.
struct CountingLatency {
  int calls = 0;
  ModelLatencyFn fn() {
    return [this](const std::string& path) {
      ++calls;
      const auto model = load_model(path);
      double weights = 0;
      for (const Value& v : model->graph.values)
        if (v.data) weights += static_cast<double>(v.data->numel());
      return 0.001 + weights * 1e-6;
    };
  }
};

TEST(LatencyTable, EntriesArePositiveSkipIsZeroAndTheCacheIsReused) {
  const arch::SearchSpace space = testing::micro_space();
  TempDir dir;
  CountingLatency lat;
  const LatencyTable t = build_latency_table(space, 8, 1.0, "relu", "test:t1", lat.fn(), dir.path.string());
  EXPECT_FALSE(t.reused);
  ASSERT_EQ(t.positions.size(), 3u);
  int entries = 0;
  for (size_t p = 0; p < t.positions.size(); ++p) {
    ASSERT_EQ(t.latency_ms[p].size(), t.positions[p].op_count());
    for (size_t op = 0; op < t.positions[p].op_count(); ++op) {
      if (t.positions[p].is_skip(op)) {
        EXPECT_EQ(t.latency_ms[p][op], 0.0);
      } else {
        EXPECT_GT(t.latency_ms[p][op], 0.001) << t.positions[p].name() << " " << t.positions[p].op_name(op);
        ++entries;
      }
    }
  }
  EXPECT_EQ(entries, 12);
  EXPECT_EQ(lat.calls, entries + 2);  // and the stem and the head
  EXPECT_GT(t.stem_ms, 0);
  EXPECT_GT(t.head_ms, 0);
  // Expansion 2 costs more than expansion 1 at the same kernel (more weights here).
  EXPECT_GT(t.latency_ms[1][1], t.latency_ms[1][0]);
  EXPECT_TRUE(fs::exists(latency_table_path(dir.path.string())));
  EXPECT_NEAR(t.predict_ms({0, 0, 4}), t.stem_ms + t.head_ms + t.latency_ms[0][0] + t.latency_ms[1][0], 1e-12);

  // Same positions and source: read back, nothing measured.
  const LatencyTable again = build_latency_table(space, 8, 1.0, "relu", "test:t1", lat.fn(), dir.path.string());
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(lat.calls, entries + 2);
  EXPECT_EQ(again.latency_ms, t.latency_ms);
  EXPECT_EQ(again.stem_ms, t.stem_ms);

  // Another source (or width, activation, ...): measured again.
  const LatencyTable other = build_latency_table(space, 8, 1.0, "relu", "test:t2", lat.fn(), dir.path.string());
  EXPECT_FALSE(other.reused);
  EXPECT_EQ(lat.calls, 2 * (entries + 2));
}

TEST(LatencyTable, OneBlockModelsHaveTheBlocksInputShape) {
  const arch::SearchSpace space = testing::micro_space();
  const auto positions = block_positions(space, 8, 1.0, "silu");
  const auto m = block_model(space, positions[1], 3);
  const Value& in = m->graph.value(m->graph.inputs.at(0));
  ASSERT_EQ(in.shape.size(), 4u);
  EXPECT_EQ(in.shape[1].value, positions[1].in_channels);
  EXPECT_EQ(in.shape[2].value, 4);
  EXPECT_EQ(positions[1].op_name(3), "k5e2");
  EXPECT_EQ(positions[2].op_name(4), "skip");
  EXPECT_THROW(block_model(space, positions[2], 4), Error);
}

}  // namespace
}  // namespace xnn::nas
