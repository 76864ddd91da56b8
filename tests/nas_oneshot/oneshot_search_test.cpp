// The one-shot search end to end on the CI config (supernet, subnet study, retraining, export)
// with a latency stand-in (the model file's size), and its resumption: a rerun loads the
// finished supernet and the scored subnets instead of redoing them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "nas/oneshot/oneshot_search.h"
#include "nas/study/study.h"

namespace fs = std::filesystem;
using namespace xnn;
using namespace xnn::nas;

TEST(OneshotSearch, ReturnsAFrontOfExportedRetrainedModelsAndResumes) {
  const fs::path dir = fs::temp_directory_path() / ("oneshot_search_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const NasConfig config = load_nas_config(std::string(XNN_SOURCE_DIR) + "/configs/nas/fmnist_oneshot_ci.yaml",
                                           {"output.dir=" + (dir / "out").string()});
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e5; };
  std::vector<std::string> lines;
  const train::ProgressFn log = [&](const std::string& l) { lines.push_back(l); };

  SearchResult first;
  {
    Store store((dir / "nas.db").string());
    first = run_oneshot_search(config, store, latency, log);
  }
  EXPECT_EQ(first.study, "fmnist_oneshot_ci.subnets");
  EXPECT_EQ(first.complete, 6);
  ASSERT_GE(first.front.size(), 1u);
  ASSERT_LE(first.front.size(), 1u);  // oneshot.retrain: 1
  for (const CandidateResult& c : first.front) {
    EXPECT_EQ(c.name.rfind("subnet_", 0), 0u) << c.name;
    EXPECT_GE(c.trial, 0);
    EXPECT_EQ(fs::path(c.xnn_path).parent_path(), dir / "out" / "front");
    EXPECT_TRUE(fs::is_regular_file(c.xnn_path)) << c.xnn_path;
    EXPECT_TRUE(fs::is_regular_file(c.onnx_path)) << c.onnx_path;
    EXPECT_GT(c.top1, 0.0);
    EXPECT_LE(c.top1, 1.0);
    EXPECT_GT(c.latency_ms, 0.0);
    EXPECT_GT(c.params, 0);
    EXPECT_LE(c.params, 200000);  // the config's constraint
    EXPECT_NO_THROW(arch::parse_arch(c.arch));
    EXPECT_EQ(arch::parse_arch(c.arch).width, 0.5);  // the supernet's width
  }
  ASSERT_EQ(first.baselines.size(), 1u);
  EXPECT_EQ(first.baselines[0].name, "tiny_mobilenet");
  EXPECT_TRUE(fs::is_regular_file(dir / "out" / "supernet" / "supernet.tensors"));
  const auto has = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("supernet epoch 1/1: "));
  EXPECT_TRUE(has("generation 2 [6/6 subnets]; front (inherited weights): subnet_"));
  EXPECT_TRUE(has("retrained subnet_"));

  lines.clear();
  Store store((dir / "nas.db").string());
  const SearchResult second = run_oneshot_search(config, store, latency, log);
  EXPECT_TRUE(has("supernet: resuming from")) << "supernet not re-used";
  EXPECT_TRUE(has("resuming subnet study 'fmnist_oneshot_ci.subnets': 6 subnet(s) scored"));
  EXPECT_FALSE(has("supernet epoch 1/1: "));
  EXPECT_FALSE(has("subnet 6 "));
  ASSERT_EQ(second.front.size(), first.front.size());
  EXPECT_EQ(second.front[0].arch, first.front[0].arch);
  EXPECT_DOUBLE_EQ(second.front[0].top1, first.front[0].top1);  // the retrained model re-used
  fs::remove_all(dir);
}
