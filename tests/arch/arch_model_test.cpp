// Models built from architectures (harness/arch/mobilenet_space.h): they run in a Session with
// the right output shape, have residual adds and SE blocks exactly where the architecture says,
// cost more MACs at a larger width, save to loadable .xnn files, and train.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "harness/arch/mobilenet_space.h"

namespace fs = std::filesystem;

namespace xnn::arch {
namespace {

const std::string kSourceDir = XNN_SOURCE_DIR;
SearchSpace default_space() { return load_search_space(kSourceDir + "/configs/arch/mobilenet_space.yaml"); }
SearchSpace tiny_space() { return load_search_space(kSourceDir + "/configs/arch/mobilenet_space_tiny.yaml"); }

Tensor random_input(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kF32, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
  return t;
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// A fresh temporary folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Runs the model on a random input and checks the logits' shape and finiteness.
void expect_runs(const std::shared_ptr<Model>& model, const SearchSpace& space, const Arch& arch, int64_t batch) {
  Session session(model);
  const Tensor in = random_input({batch, space.in_channels, arch.resolution, arch.resolution}, 1);
  const std::vector<Tensor> out = session.run({{"input", in}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{batch, space.classes})) << arch.to_string();
  for (int64_t i = 0; i < out[0].numel(); ++i) ASSERT_TRUE(std::isfinite(out[0].data<float>()[i])) << arch.to_string();
}

TEST(ArchModel, RandomTinyArchsRunInASession) {
  const SearchSpace s = tiny_space();
  std::mt19937_64 rng(1);
  for (int i = 0; i < 12; ++i) {
    const Arch a = sample_arch(s, rng);
    const auto model = build_arch_model(s, a, 100 + i);
    EXPECT_EQ(model->graph.value(model->graph.inputs[0]).name, "input");
    EXPECT_EQ(model->graph.value(model->graph.outputs[0]).name, "logits");
    EXPECT_EQ(model->metadata.options.at("arch"), a.to_string());
    expect_runs(model, s, a, 1);
  }
}

TEST(ArchModel, RandomDefaultArchsRunInASession) {
  const SearchSpace s = default_space();
  std::mt19937_64 rng(2);
  for (int i = 0; i < 3; ++i) {
    Arch a = sample_arch(s, rng);
    a.resolution = 96;  // keeps the test fast; the graph shape does not depend on it
    expect_runs(build_arch_model(s, a, i), s, a, 1);
  }
}

TEST(ArchModel, SymbolicBatchRunsAnyBatchSize) {
  const SearchSpace s = tiny_space();
  std::mt19937_64 rng(3);
  const Arch a = sample_arch(s, rng);
  const auto model = build_arch_model(s, a, 0, /*batch=*/0);
  EXPECT_EQ(model->graph.value(model->graph.inputs[0]).shape[0].symbol, "batch");
  expect_runs(model, s, a, 3);
  const auto fixed = build_arch_model(s, a, 0, /*batch=*/2);
  EXPECT_EQ(fixed->graph.value(fixed->graph.inputs[0]).shape[0].value, 2);
  expect_runs(fixed, s, a, 2);
}

TEST(ArchModel, SameSeedSameWeightsOtherSeedOtherWeights) {
  const SearchSpace s = tiny_space();
  std::mt19937_64 rng(4);
  const Arch a = sample_arch(s, rng);
  const Tensor in = random_input({1, 1, a.resolution, a.resolution}, 2);
  const auto run = [&](uint64_t seed) { return Session(build_arch_model(s, a, seed)).run({{"input", in}})[0]; };
  const Tensor x = run(5), y = run(5), z = run(6);
  bool differs = false;
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(x.data<float>()[i], y.data<float>()[i]);
    differs |= x.data<float>()[i] != z.data<float>()[i];
  }
  EXPECT_TRUE(differs);
}

// The stem's stride decision reaches the graph: stride 2 quarters every later plane.
TEST(ArchModel, StemStrideDecisionSetsTheStemConvStride) {
  SearchSpace s = tiny_space();
  s.stem_strides = {s.stem_stride, 3 - s.stem_stride};  // both 1 and 2
  std::mt19937_64 rng(2);
  Arch a = sample_arch(s, rng);
  a.stem_stride = 0;
  const double macs_default = estimate_graph_cost(build_arch_model(s, a, 0)->graph).total.macs;
  a.stem_stride = 3 - s.stem_stride;
  const auto other = build_arch_model(s, a, 0);
  expect_runs(other, s, a, 1);
  const double macs_other = estimate_graph_cost(other->graph).total.macs;
  const Node& stem = *std::find_if(other->graph.nodes.begin(), other->graph.nodes.end(),
                                   [](const Node& n) { return n.op_type == "Conv"; });
  EXPECT_EQ(stem.attr_ints("strides"), (std::vector<int64_t>{a.stem_stride, a.stem_stride}));
  if (a.stem_stride == 2) EXPECT_LT(macs_other, 0.5 * macs_default);
  else EXPECT_GT(macs_other, 2 * macs_default);
}

TEST(ArchModel, RefusesArchsOutsideTheSpace) {
  const SearchSpace s = tiny_space();
  std::mt19937_64 rng(5);
  Arch a = sample_arch(s, rng);
  a.stages[0][0].kernel = 9;
  try {
    build_arch_model(s, a, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 9"), std::string::npos) << e.what();
  }
}

TEST(ArchModel, MacsGrowWithWidth) {
  const SearchSpace s = default_space();
  std::mt19937_64 rng(6);
  for (int i = 0; i < 3; ++i) {
    Arch a = sample_arch(s, rng);
    double previous = 0;
    int64_t previous_params = 0;
    for (double w : s.width_multipliers) {
      a.width = w;
      const auto model = build_arch_model(s, a, 0);
      const double macs = estimate_graph_cost(model->graph).total.macs;
      const int64_t params = model->graph.parameter_count();
      EXPECT_GT(macs, previous) << a.to_string();
      EXPECT_GT(params, previous_params) << a.to_string();
      previous = macs;
      previous_params = params;
    }
    // and with resolution
    a.resolution = 96;
    const double small = estimate_graph_cost(build_arch_model(s, a, 0)->graph).total.macs;
    a.resolution = 224;
    EXPECT_GT(estimate_graph_cost(build_arch_model(s, a, 0)->graph).total.macs, 3 * small);
  }
}

// Residual adds where a block keeps stride 1 and its channel count, SE where chosen.
TEST(ArchModel, ResidualAddsAndSqueezeExcitationWhereExpected) {
  const SearchSpace s = tiny_space();
  // stem 8 ch s2; stage0 (8 ch, s1): both blocks keep 8 -> 2 adds; stage1 (16, s2): the second
  // block only; stage2 (24, s2), depth 1: none.
  Arch a = parse_arch("r28-w1|k3e1.relu-k5e3se.silu|k3e3.relu6-k5e1se.hardswish|k3e3se.relu");
  auto model = build_arch_model(s, a, 0);
  const Graph& g = model->graph;
  EXPECT_EQ(count_ops(g, "Add"), 3);
  std::set<std::string> adds;
  for (const Node& n : g.nodes)
    if (n.op_type == "Add") adds.insert(n.name);
  EXPECT_EQ(adds, (std::set<std::string>{"stage0.block0.residual", "stage0.block1.residual", "stage1.block1.residual"}));
  EXPECT_EQ(count_ops(g, "HardSigmoid"), 3);
  EXPECT_EQ(count_ops(g, "GlobalAveragePool"), 3 + 1);  // SE squeezes + the head's pool
  // Expansion 1 blocks have no expand conv: convs = stem + head + per block (expand?) + dw + project + 2 per SE.
  EXPECT_EQ(count_ops(g, "Conv"), 2 + (2 + 3) + (3 + 2) + 3 + 3 * 2);
  // At width 0.5 the stage0 channels round up to 8 like the stem's, so the adds stay.
  a.width = 0.5;
  EXPECT_EQ(count_ops(build_arch_model(s, a, 0)->graph, "Add"), 3);

  // Default space: stage 4 (112 ch, stride 1) follows stage 3 (80 ch), so its first block has no
  // add; stage 0 (16 ch, s1) after the 16 ch stem has one.
  const SearchSpace d = default_space();
  std::mt19937_64 rng(7);
  Arch b = sample_arch(d, rng);
  for (auto& stage : b.stages)
    for (auto& blk : stage) blk.se = false;
  int expected = 1;  // stage 0
  for (size_t st = 1; st < b.stages.size(); ++st) expected += static_cast<int>(b.stages[st].size()) - 1;
  const auto bm = build_arch_model(d, b, 0);
  EXPECT_EQ(count_ops(bm->graph, "Add"), expected) << b.to_string();
  EXPECT_EQ(count_ops(bm->graph, "HardSigmoid"), 0);
  EXPECT_EQ(count_ops(bm->graph, "GlobalAveragePool"), 1);
}

TEST(ArchGenerate, WritesLoadableFilesDeterministically) {
  const SearchSpace s = tiny_space();
  TempDir dir("arch_generate");
  const auto set = generate_arch_models(s, 6, 17, dir.path.string());
  ASSERT_EQ(set.size(), 6u);
  std::set<std::string> encodings;
  for (size_t i = 0; i < set.size(); ++i) {
    const GeneratedArch& g = set[i];
    EXPECT_EQ(g.path, (dir.path / ("arch_" + std::to_string(i) + ".xnn")).string());
    encodings.insert(g.arch.to_string());
    const auto model = load_model(g.path);
    EXPECT_EQ(model->metadata.options.at("arch"), g.arch.to_string());
    EXPECT_EQ(model->graph.parameter_count(), g.params);
    EXPECT_DOUBLE_EQ(estimate_graph_cost(model->graph).total.macs, g.macs);
    EXPECT_GT(g.macs, 0);
    expect_runs(model, s, g.arch, 1);
  }
  EXPECT_EQ(encodings.size(), 6u);
  EXPECT_FALSE(fs::exists(dir.path / "arch_6.xnn"));

  // Same seed: same architectures; identical files are not rewritten.
  const auto inode = [](const fs::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_ino;
  };
  const auto before = inode(set[0].path);
  fs::remove(set[1].path);
  const auto again = generate_arch_models(s, 6, 17, dir.path.string());
  for (size_t i = 0; i < set.size(); ++i) EXPECT_EQ(again[i].arch, set[i].arch);
  EXPECT_EQ(inode(set[0].path), before);  // an atomic rewrite would give a new inode
  EXPECT_TRUE(fs::exists(set[1].path));   // a missing one is written again
}

TEST(ArchGenerate, DistinctSeedsGiveDisjointSets) {
  const SearchSpace s = tiny_space();
  TempDir a("arch_seed_a"), b("arch_seed_b");
  std::set<std::string> first;
  for (const auto& g : generate_arch_models(s, 10, 1, a.path.string())) first.insert(g.arch.to_string());
  EXPECT_EQ(first.size(), 10u);
  for (const auto& g : generate_arch_models(s, 10, 2, b.path.string())) EXPECT_EQ(first.count(g.arch.to_string()), 0u);
}

TEST(ArchGenerate, SpreadSamplingCoversMoreOfTheMacsRangeThanUniform) {
  const SearchSpace s = default_space();
  // Built in memory only: the MACs of what generate_arch_models would draw, both ways.
  const auto macs_range = [&](bool spread) {
    std::mt19937_64 rng(31);
    double lo = 1e300, hi = 0;
    for (int i = 0; i < 30; ++i) {
      const Arch a = spread ? sample_arch_sized(s, static_cast<double>(i) / 29.0, rng) : sample_arch(s, rng);
      const double macs = estimate_graph_cost(build_arch_model(s, a, 0)->graph).total.macs;
      lo = std::min(lo, macs);
      hi = std::max(hi, macs);
    }
    return std::pair{lo, hi};
  };
  const auto [ulo, uhi] = macs_range(false);
  const auto [slo, shi] = macs_range(true);
  EXPECT_LT(slo, ulo);
  EXPECT_GT(shi, uhi);
  EXPECT_GT(shi / slo, 30.0);  // two orders of magnitude from the cheap corner to the costly one

  // generate_arch_models: kSpread and kUniform draw different sets from one seed.
  const SearchSpace t = tiny_space();
  TempDir a("arch_spread"), b("arch_uniform");
  const auto spread = generate_arch_models(t, 3, 4, a.path.string(), {}, Sampling::kSpread);
  const auto uniform = generate_arch_models(t, 3, 4, b.path.string(), {}, Sampling::kUniform);
  std::mt19937_64 rng(4);
  EXPECT_EQ(uniform[0].arch, sample_arch(t, rng));  // kUniform is sample_arch
  EXPECT_NE(spread[0].arch, uniform[0].arch);
}

TEST(ArchGenerate, ExcludeGuaranteesDisjointSetsInASmallSpace) {
  // Four architectures: 2 resolutions x 2 widths, one block.
  const SearchSpace s = parse_search_space(YAML::Load(R"(input: [1, 16, 16]
resolutions: [12, 16]
classes: 4
width_multipliers: [0.5, 1.0]
stem: {channels: 8}
head: {channels: 16}
stages:
  - {depths: [1], channels: 8, expansions: [1]}
)"),
                                           "small.yaml");
  TempDir a("arch_small_a"), b("arch_small_b");
  std::set<std::string> first;
  for (const auto& g : generate_arch_models(s, 2, 1, a.path.string())) first.insert(g.arch.to_string());
  ASSERT_EQ(first.size(), 2u);
  std::set<std::string> second;
  for (const auto& g : generate_arch_models(s, 2, 1, b.path.string(), first)) second.insert(g.arch.to_string());
  ASSERT_EQ(second.size(), 2u);
  for (const auto& e : second) EXPECT_EQ(first.count(e), 0u) << e;

  try {
    generate_arch_models(s, 5, 1, b.path.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only 4 distinct architectures"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("small.yaml"), std::string::npos) << e.what();
  }
}

TEST(ArchTrain, ABuiltModelTrains) {
  const SearchSpace s = tiny_space();
  // Every op kind the builder emits: expand, SE, residual, all four activations.
  const Arch a = parse_arch("r28-w0.5|k3e3se.silu-k5e1.relu|k3e3se.hardswish|k5e3.relu6");
  auto model = build_arch_model(s, a, 1, /*batch=*/0);
  train::TrainingSession session(model);
  EXPECT_GT(session.parameter_count(), 1000);
  const Tensor input = random_input({8, 1, 28, 28}, 3);
  Tensor labels(DType::kI64, {8});
  for (int64_t i = 0; i < 8; ++i) labels.data<int64_t>()[i] = i % 10;

  train::OptimizerConfig cfg;
  cfg.type = "adamw";
  auto opt = train::make_optimizer(cfg);
  const train::StepResult first = session.train_step(input, labels);
  EXPECT_TRUE(std::isfinite(first.loss));
  EXPECT_NEAR(first.loss, std::log(10.0f), 1.0f);  // about uniform at initialisation
  int with_grad = 0;
  for (const auto& p : session.parameters()) {
    for (int64_t i = 0; i < p.grad.numel(); ++i) {
      if (p.grad.data<float>()[i] != 0.0f) {
        ++with_grad;
        break;
      }
    }
  }
  EXPECT_GT(with_grad, static_cast<int>(session.parameters().size()) / 2);
  opt->step(session.parameters(), 0.01);
  float loss = first.loss;
  for (int i = 0; i < 10; ++i) {
    loss = session.train_step(input, labels).loss;
    opt->step(session.parameters(), 0.01);
  }
  EXPECT_LT(loss, first.loss * 0.5f);  // one fixed batch: memorised
  // The trained graph still runs for inference.
  expect_runs(model, s, a, 2);
}

}  // namespace
}  // namespace xnn::arch
