// Recipe parsing (harness/compress_recipe/recipe.h): the stages and their options, and strict
// errors naming FILE:LINE:COL, the stage and the key. Plus trained quantisation's centroid
// sharing (shared_centroids.h) on a small model.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/core/error.h"
#include "harness/compress_recipe/recipe.h"
#include "harness/compress_recipe/shared_centroids.h"

namespace xnn::compress_recipe {
namespace {

namespace fs = std::filesystem;

class RecipeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("recipe_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "train.yaml") << "epochs: 1\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& text) {
    const std::string p = (dir_ / "recipe.yaml").string();
    std::ofstream(p) << text;
    return p;
  }

  // The error message of loading `text`, or "" when it loads.
  std::string error_of(const std::string& text) {
    try {
      load_recipe(write(text));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(RecipeTest, ParsesEveryStageKind) {
  const std::string path = write(R"(name: dc
stages:
  - prune:
      method: unstructured
      schedule: gradual
      target_sparsity: 0.9
      per_layer: {fc1: 0.95}
      min_elements: 100
      finetune: {config: train.yaml, epochs: 3, optimizer.lr: 0.01}
  - finetune: {config: train.yaml, epochs: 2}
  - cluster: {bits: 5, bits_per_layer: {fc1.weight: 4}, finetune: {config: train.yaml}}
  - quantize: {calib_samples: 32, per_tensor: true, exclude: [fc3]}
  - encode: {coder: huffman, min_elements: 64}
)");
  const Recipe r = load_recipe(path);
  EXPECT_EQ(r.name, "dc");
  ASSERT_EQ(r.stages.size(), 5u);
  EXPECT_EQ(r.stages[0].kind, "prune");
  EXPECT_EQ(r.stages[0].location, path + ":3:5");
  const auto& p = std::get<PruneStage>(r.stages[0].spec);
  EXPECT_EQ(p.schedule, "gradual");
  EXPECT_DOUBLE_EQ(*p.target_sparsity, 0.9);
  EXPECT_DOUBLE_EQ(p.per_layer.at("fc1"), 0.95);
  EXPECT_EQ(p.options.min_elements, 100);
  ASSERT_TRUE(p.finetune.has_value());
  EXPECT_EQ(p.finetune->config, (dir_ / "train.yaml").string());
  EXPECT_EQ(p.finetune->overrides, (std::vector<std::string>{"epochs=3", "optimizer.lr=0.01"}));
  EXPECT_EQ(std::get<FinetuneStage>(r.stages[1].spec).spec.overrides, (std::vector<std::string>{"epochs=2"}));
  const auto& c = std::get<ClusterStage>(r.stages[2].spec);
  EXPECT_EQ(c.bits, 5);
  EXPECT_EQ(c.bits_per_layer.at("fc1.weight"), 4);
  EXPECT_TRUE(c.finetune.has_value());
  const auto& q = std::get<QuantizeStage>(r.stages[3].spec);
  EXPECT_EQ(q.calib_samples, 32);
  EXPECT_TRUE(q.per_tensor);
  EXPECT_EQ(q.exclude, std::vector<std::string>{"fc3"});
  const auto& e = std::get<EncodeStage>(r.stages[4].spec);
  EXPECT_EQ(e.options.coder, coding::SymbolCoder::kHuffman);
  EXPECT_EQ(e.options.min_elements, 64);
  EXPECT_TRUE(e.min_elements_given);
  EXPECT_FALSE(e.cluster_given);
}

TEST_F(RecipeTest, DefaultsAndBareStages) {
  const Recipe r = load_recipe(write("stages:\n  - prune: {target_sparsity: 0.5}\n  - quantize:\n  - encode:\n"));
  EXPECT_EQ(r.name, "recipe");  // the file name
  const auto& p = std::get<PruneStage>(r.stages[0].spec);
  EXPECT_EQ(p.method, "unstructured");
  EXPECT_EQ(p.schedule, "oneshot");
  EXPECT_EQ(p.scope, "layer");
  EXPECT_FALSE(p.finetune.has_value());
  EXPECT_EQ(std::get<QuantizeStage>(r.stages[1].spec).calib_samples, 100);
  EXPECT_EQ(std::get<EncodeStage>(r.stages[2].spec).options.bits, 5);
}

TEST_F(RecipeTest, ChannelMethod) {
  const Recipe r = load_recipe(write("stages:\n  - prune: {method: channel, target_flops: 0.5, importance: bn}\n"));
  const auto& p = std::get<PruneStage>(r.stages[0].spec);
  EXPECT_EQ(p.method, "channel");
  EXPECT_DOUBLE_EQ(*p.target_flops, 0.5);
  EXPECT_EQ(p.importance, "bn");
}

TEST_F(RecipeTest, ErrorsNameFileLineColumnAndKey) {
  const std::string file = (dir_ / "recipe.yaml").string();
  std::string e = error_of("stages:\n  - prune: {target_sparsity: 0.9, speed: 3}\n");
  EXPECT_NE(e.find(file + ":2:35"), std::string::npos) << e;
  EXPECT_NE(e.find("stages[0].prune: unknown key 'speed'"), std::string::npos) << e;

  e = error_of("stages:\n  - prune: {target_sparsity: 1.5}\n");
  EXPECT_NE(e.find(file + ":2:30"), std::string::npos) << e;
  EXPECT_NE(e.find("'target_sparsity' must be a share in [0, 1)"), std::string::npos) << e;

  e = error_of("stages:\n  - cluster: {bits: nine}\n");
  EXPECT_NE(e.find(":2:21"), std::string::npos) << e;
  EXPECT_NE(e.find("'bits' must be an integer (1..8)"), std::string::npos) << e;

  e = error_of("stages:\n  - cluster: {bits: 12}\n");
  EXPECT_NE(e.find("'bits' must be 1..8 bits, got 12"), std::string::npos) << e;

  e = error_of("stages:\n  - squash: {}\n");
  EXPECT_NE(e.find(":2:5"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown stage 'squash'"), std::string::npos) << e;

  e = error_of("stages:\n  - finetune: {epochs: 2}\n");
  EXPECT_NE(e.find("stages[0].finetune: missing 'config'"), std::string::npos) << e;

  e = error_of("stages:\n  - finetune: {config: nothere.yaml}\n");
  EXPECT_NE(e.find("no such file"), std::string::npos) << e;
  EXPECT_NE(e.find(":2:24"), std::string::npos) << e;

  e = error_of("stages:\n  - prune: {target_sparsity: 0.9, schedule: gradual}\n");
  EXPECT_NE(e.find("schedule gradual prunes during fine-tuning"), std::string::npos) << e;

  e = error_of("stages:\n  - prune: {method: channel, target_sparsity: 0.5}\n");
  EXPECT_NE(e.find("method channel takes target_flops or target_params"), std::string::npos) << e;

  e = error_of("stages:\n  - prune: {schedule: oneshot}\n");
  EXPECT_NE(e.find("give target_sparsity, target_flops or per_layer"), std::string::npos) << e;

  e = error_of("stages:\n  - encode: {coder: lzw}\n");
  EXPECT_NE(e.find("stages[0].encode"), std::string::npos) << e;
  EXPECT_NE(e.find("lzw"), std::string::npos) << e;

  e = error_of("stages:\n  - encode:\n  - quantize:\n");
  EXPECT_NE(e.find("the encode stage must be the last one"), std::string::npos) << e;

  e = error_of("stages:\n  - {prune: {target_sparsity: 0.5}, encode: {}}\n");
  EXPECT_NE(e.find("a stage is a mapping with one key"), std::string::npos) << e;

  e = error_of("name: x\nsteps: []\n");
  EXPECT_NE(e.find(file + ":2:1: unknown key 'steps'"), std::string::npos) << e;

  e = error_of("name: x\n");
  EXPECT_NE(e.find("missing 'stages'"), std::string::npos) << e;

  e = error_of("stages: [\n");
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;

  try {
    load_recipe((dir_ / "absent.yaml").string());
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("no such recipe file"), std::string::npos);
  }
}

// A Gemm with a 32x16 weight: clustering leaves <= 2^bits distinct values, keeps zeros exact,
// and sharing makes each centroid the mean of its members.
TEST(SharedCentroidsTest, ClustersAndSharesMeans) {
  Model m;
  Graph& g = m.graph;
  Tensor w(DType::kF32, Shape{32, 16});
  for (int i = 0; i < 512; ++i) w.data<float>()[i] = i % 4 == 0 ? 0.0f : static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  Value xv, yv;
  xv.name = "x";
  yv.name = "y";
  const int x = g.add_value(xv);
  const int wi = g.add_constant("w", w);
  const int y = g.add_value(yv);
  Node n;
  n.op_type = "Gemm";
  n.name = "fc";
  n.inputs = {x, wi};
  n.outputs = {y};
  g.nodes.push_back(n);

  EXPECT_THROW(SharedCentroids::cluster(m, 3, {{"nope", 2}}, 256), Error);
  const SharedCentroids s = SharedCentroids::cluster(m, 3, {}, 256);
  ASSERT_EQ(s.tensors().size(), 1u);
  EXPECT_EQ(s.tensors()[0].value, "w");
  EXPECT_GE(s.tensors()[0].zero_index, 0);
  const float* c = g.value(wi).data->data<float>();
  std::set<float> distinct(c, c + 512);
  EXPECT_LE(distinct.size(), 8u);
  for (int i = 0; i < 512; i += 4) EXPECT_EQ(c[i], 0.0f);

  // Move every weight by its own amount (as an optimiser step would); sharing snaps each
  // cluster to its members' mean and leaves the zero cluster at 0.
  std::vector<train::Parameter> params(1);
  params[0].name = "w";
  params[0].value = Tensor(DType::kF32, Shape{32, 16});
  float* p = params[0].value.data<float>();
  std::memcpy(p, c, 512 * 4);
  const std::vector<uint16_t>& a = s.tensors()[0].assignment;
  std::vector<double> sum(8, 0.0), count(8, 0.0);
  for (int i = 0; i < 512; ++i) {
    p[i] += 0.001f * static_cast<float>(i % 7);
    sum[a[i]] += p[i];
    count[a[i]] += 1;
  }
  s.share(params);
  for (int i = 0; i < 512; ++i) {
    if (a[i] == s.tensors()[0].zero_index) {
      EXPECT_EQ(p[i], 0.0f);
    } else {
      EXPECT_NEAR(p[i], sum[a[i]] / count[a[i]], 1e-6);
    }
  }
}

}  // namespace
}  // namespace xnn::compress_recipe
