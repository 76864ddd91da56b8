// The supernet weight store: paths sharing a block choice share its tensors (an update through
// one path is seen by the other), different choices are independent, the activation shares
// weights, unshared realisations are copies, and the checkpoint tensor file round-trips.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "nas/oneshot/supernet_weights.h"

namespace fs = std::filesystem;
using namespace xnn;
using namespace xnn::nas;

namespace {

arch::SearchSpace tiny_space() {
  return arch::load_search_space(std::string(XNN_SOURCE_DIR) + "/configs/arch/mobilenet_space_tiny.yaml");
}

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

// One SGD step on the path's model with a random batch.
void train_one_step(const std::shared_ptr<Model>& model) {
  train::TrainingSession session(model);
  Tensor x(DType::kF32, {4, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 7919) % 255) / 255.0f - 0.5f;
  Tensor y = Tensor::from_vector<int64_t>({1, 3, 5, 7}, {4});
  session.train_step(x, y);
  train::OptimizerConfig oc;
  oc.momentum = 0;
  train::make_optimizer(oc)->step(session.parameters(), 0.5);
}

}  // namespace

TEST(SupernetKey, QualifiesBlockTensorsByChoiceNotActivation) {
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3se.relu-k5e1.silu|k3e1.relu|k3e1.relu");
  EXPECT_EQ(supernet_key(a, "stage0.block0.expand.conv.weight"), "stage0.block0/k3e3se/expand.conv.weight");
  EXPECT_EQ(supernet_key(a, "stage0.block1.depthwise.bn.running_mean"), "stage0.block1/k5e1/depthwise.bn.running_mean");
  EXPECT_EQ(supernet_key(a, "stem.conv.weight"), "stem.conv.weight");
  EXPECT_EQ(supernet_key(a, "classifier.bias"), "classifier.bias");
  const arch::Arch b = arch::parse_arch("r28-w0.5|k3e3se.hardswish-k5e1.relu6|k3e1.relu|k3e1.relu");
  EXPECT_EQ(supernet_key(a, "stage0.block0.expand.conv.weight"), supernet_key(b, "stage0.block0.expand.conv.weight"));
  EXPECT_THROW(supernet_key(a, "stage2.block1.depthwise.conv.weight"), Error);  // a block the path lacks
}

TEST(SupernetKey, CoarserSharingsDropTheDecisionsATensorDoesNotDependOn) {
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3se.relu-k5e1.silu|k3e1.relu|k3e1.relu");
  // se: SE on and off share the block's tensors (the SE tensors exist only on SE paths).
  EXPECT_EQ(supernet_key(a, "stage0.block0.expand.conv.weight", WeightSharing::kSe), "stage0.block0/k3e3/expand.conv.weight");
  EXPECT_EQ(supernet_key(a, "stage0.block0.se.reduce.weight", WeightSharing::kSe), "stage0.block0/k3e3/se.reduce.weight");
  // pointwise: only the depthwise stage keeps the kernel in its key.
  EXPECT_EQ(supernet_key(a, "stage0.block0.depthwise.conv.weight", WeightSharing::kPointwise),
            "stage0.block0/k3e3/depthwise.conv.weight");
  EXPECT_EQ(supernet_key(a, "stage0.block0.depthwise.bn.running_var", WeightSharing::kPointwise),
            "stage0.block0/k3e3/depthwise.bn.running_var");
  EXPECT_EQ(supernet_key(a, "stage0.block0.expand.bn.weight", WeightSharing::kPointwise), "stage0.block0/e3/expand.bn.weight");
  EXPECT_EQ(supernet_key(a, "stage0.block0.se.expand.bias", WeightSharing::kPointwise), "stage0.block0/e3/se.expand.bias");
  EXPECT_EQ(supernet_key(a, "stage0.block1.project.conv.weight", WeightSharing::kPointwise),
            "stage0.block1/e1/project.conv.weight");
  EXPECT_EQ(supernet_key(a, "head.conv.weight", WeightSharing::kPointwise), "head.conv.weight");
  WeightSharing parsed = WeightSharing::kNone;
  EXPECT_TRUE(parse_weight_sharing("pointwise", &parsed));
  EXPECT_EQ(parsed, WeightSharing::kPointwise);
  EXPECT_FALSE(parse_weight_sharing("all", &parsed));
}

TEST(SupernetWeights, PointwiseSharingAliasesTheOneByOnesAcrossKernelsAndSe) {
  SupernetWeights w(tiny_space(), 0.5, 7, WeightSharing::kPointwise);
  EXPECT_EQ(w.sharing(), WeightSharing::kPointwise);
  // Stage 0's first block: kernel 3 without SE against kernel 5 with SE, both expansion 3.
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3.relu|k3e1.relu|k3e1.relu");
  const arch::Arch b = arch::parse_arch("r28-w0.5|k5e3se.silu|k3e1.relu|k3e1.relu");
  auto model_a = w.realize(a, true);
  auto model_b = w.realize(b, true);
  for (const std::string shared : {"stage0.block0/e3/expand.conv.weight", "stage0.block0/e3/project.conv.weight",
                                   "stage0.block0/e3/project.bn.bias"}) {
    const int va = model_a->graph.find_value(shared), vb = model_b->graph.find_value(shared);
    ASSERT_GE(va, 0) << shared;
    ASSERT_GE(vb, 0) << shared;
    EXPECT_EQ(model_a->graph.value(va).data->raw(), model_b->graph.value(vb).data->raw()) << shared;
  }
  const Tensor* dw_a = w.find("stage0.block0/k3e3/depthwise.conv.weight");
  const Tensor* dw_b = w.find("stage0.block0/k5e3/depthwise.conv.weight");
  ASSERT_NE(dw_a, nullptr);
  ASSERT_NE(dw_b, nullptr);
  EXPECT_EQ(dw_a->shape()[3], 3);
  EXPECT_EQ(dw_b->shape()[3], 5);
  ASSERT_NE(w.find("stage0.block0/e3/se.reduce.weight"), nullptr);  // b's SE, keyed by expansion
  const std::vector<float> project_before = values(*w.find("stage0.block0/e3/project.conv.weight"));
  const std::vector<float> dw_b_before = values(*dw_b);
  train_one_step(model_a);
  EXPECT_NE(values(*w.find("stage0.block0/e3/project.conv.weight")), project_before);  // seen by b too
  EXPECT_EQ(values(*dw_b), dw_b_before);  // another kernel's depthwise weights are its own
  // Fewer tensors than the unshared store of the same two paths.
  SupernetWeights unshared(tiny_space(), 0.5, 7);
  unshared.realize(a, true);
  unshared.realize(b, true);
  EXPECT_LT(w.size(), unshared.size());
}

TEST(SupernetWeights, SplitByStemStrideGivesEachStrideItsOwnTensors) {
  SupernetSplit parsed = SupernetSplit::kNone;
  EXPECT_TRUE(parse_supernet_split("stem_stride", &parsed));
  EXPECT_EQ(parsed, SupernetSplit::kStemStride);
  EXPECT_STREQ(supernet_split_name(parsed), "stem_stride");
  EXPECT_FALSE(parse_supernet_split("stride", &parsed));

  arch::SearchSpace space = tiny_space();
  space.stem_strides = {2, 1};  // the default 2 first, as `stem: {stride: [2, 1]}` would read
  // The same blocks behind a stride-2 (default) and a stride-1 stem.
  const arch::Arch s2 = arch::parse_arch("r28-w0.5|k3e3.relu|k3e1.relu|k3e1.relu");
  const arch::Arch s1 = arch::parse_arch("r28-w0.5-s1|k3e3.relu|k3e1.relu|k3e1.relu");

  SupernetWeights one(space, 0.5, 7, WeightSharing::kPointwise);
  EXPECT_EQ(one.groups(), std::vector<int64_t>{0});
  auto one_s2 = one.realize(s2, true);
  auto one_s1 = one.realize(s1, true);
  const int shared_a = one_s2->graph.find_value("stem.conv.weight"), shared_b = one_s1->graph.find_value("stem.conv.weight");
  ASSERT_GE(shared_a, 0);
  ASSERT_GE(shared_b, 0);
  EXPECT_EQ(one_s2->graph.value(shared_a).data->raw(), one_s1->graph.value(shared_b).data->raw());  // unsplit: aliased

  SupernetWeights split(space, 0.5, 7, WeightSharing::kPointwise, SupernetSplit::kStemStride);
  EXPECT_EQ(split.split(), SupernetSplit::kStemStride);
  EXPECT_EQ(split.groups(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(split.key(s1, "stage0.block0.expand.conv.weight"), "s1/stage0.block0/e3/expand.conv.weight");
  EXPECT_EQ(split.key(s2, "classifier.bias"), "s2/classifier.bias");
  auto model_s2 = split.realize(s2, true);
  auto model_s1 = split.realize(s1, true);
  EXPECT_EQ(split.size(), 2 * one.size());  // every tensor twice: stem, blocks, head, classifier
  for (const std::string key : {"stem.conv.weight", "stage0.block0/e3/project.conv.weight", "classifier.weight"}) {
    ASSERT_NE(split.find("s2/" + key), nullptr) << key;
    ASSERT_NE(split.find("s1/" + key), nullptr) << key;
    EXPECT_EQ(split.find(key), nullptr) << key;
  }
  const std::vector<float> s1_stem = values(*split.find("s1/stem.conv.weight"));
  const std::vector<float> s1_project = values(*split.find("s1/stage0.block0/e3/project.conv.weight"));
  const std::vector<float> s2_project = values(*split.find("s2/stage0.block0/e3/project.conv.weight"));
  train_one_step(model_s2);
  EXPECT_NE(values(*split.find("s2/stage0.block0/e3/project.conv.weight")), s2_project);  // trained
  EXPECT_EQ(values(*split.find("s1/stage0.block0/e3/project.conv.weight")), s1_project);  // the other stride's own
  EXPECT_EQ(values(*split.find("s1/stem.conv.weight")), s1_stem);
  // An independent copy of a stride-1 subnet carries the stride-1 tensors.
  auto copy = split.realize(s1, false, 1);
  const int v = copy->graph.find_value("stage0.block0.project.conv.weight");
  ASSERT_GE(v, 0);
  EXPECT_EQ(values(*copy->graph.value(v).data), s1_project);
}

TEST(SupernetWeights, PathsSharingAChoiceSeeTheSameTensorsAfterAnUpdate) {
  SupernetWeights w(tiny_space(), 0.5, 7);
  // Same stage0 block (k3e3), different stage1 block (kernel 3 vs 5).
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3.relu|k3e1.relu|k3e1.relu");
  const arch::Arch b = arch::parse_arch("r28-w0.5|k3e3.silu|k5e1.relu|k3e1.relu");
  const std::string shared = "stage0.block0/k3e3/expand.conv.weight";
  const std::string own_a = "stage1.block0/k3e1/depthwise.conv.weight";
  const std::string own_b = "stage1.block0/k5e1/depthwise.conv.weight";

  auto model_a = w.realize(a, true);
  auto model_b = w.realize(b, true);  // creates b's own tensors before a trains
  ASSERT_NE(w.find(shared), nullptr);
  ASSERT_NE(w.find(own_a), nullptr);
  ASSERT_NE(w.find(own_b), nullptr);
  EXPECT_EQ(w.find(own_a)->shape(), (Shape{8, 1, 3, 3}));
  EXPECT_EQ(w.find(own_b)->shape(), (Shape{8, 1, 5, 5}));
  // Shared realisations are renamed to their keys and alias the store.
  const int va = model_a->graph.find_value(shared);
  ASSERT_GE(va, 0);
  EXPECT_EQ(model_a->graph.value(va).data->raw(), w.find(shared)->raw());

  const std::vector<float> shared_before = values(*w.find(shared));
  const std::vector<float> own_a_before = values(*w.find(own_a));
  const std::vector<float> own_b_before = values(*w.find(own_b));
  train_one_step(model_a);

  EXPECT_NE(values(*w.find(shared)), shared_before);  // a's update reached the store
  EXPECT_NE(values(*w.find(own_a)), own_a_before);
  EXPECT_EQ(values(*w.find(own_b)), own_b_before);    // a different choice is independent
  // b, realised before and after the update, sees a's updated shared tensor.
  const int vb = model_b->graph.find_value(shared);
  ASSERT_GE(vb, 0);
  EXPECT_EQ(values(*model_b->graph.value(vb).data), values(*w.find(shared)));
  auto model_b2 = w.realize(b, true);
  EXPECT_EQ(values(*model_b2->graph.value(model_b2->graph.find_value(shared)).data), values(*w.find(shared)));
}

TEST(SupernetWeights, UnsharedRealisationsAreCopiesUnderBuilderNames) {
  SupernetWeights w(tiny_space(), 0.5, 7);
  const arch::Arch a = arch::parse_arch("r28-w0.5|k3e3.relu|k3e1.relu|k3e1.relu");
  auto copy = w.realize(a, false, 1);
  const int v = copy->graph.find_value("stage0.block0.expand.conv.weight");
  ASSERT_GE(v, 0);
  const Tensor* stored = w.find("stage0.block0/k3e3/expand.conv.weight");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(values(*copy->graph.value(v).data), values(*stored));
  copy->graph.value(v).data->data<float>()[0] += 1.0f;
  EXPECT_NE(values(*copy->graph.value(v).data), values(*stored));
}

TEST(SupernetWeights, RefusesAnotherWidth) {
  EXPECT_THROW(SupernetWeights(tiny_space(), 0.75, 0), Error);
  SupernetWeights w(tiny_space(), 0.5, 0);
  EXPECT_THROW(w.realize(arch::parse_arch("r28-w1|k3e3.relu|k3e1.relu|k3e1.relu"), true), Error);
}

TEST(TensorFile, RoundTripsAndRejectsTruncation) {
  const fs::path dir = fs::temp_directory_path() / ("oneshot_tensors_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "t.tensors").string();
  Tensor f = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f}, {2, 3});
  Tensor i = Tensor::from_vector<int64_t>({42}, {1});
  save_tensor_file(path, {{"weight/a/b", f}, {"meta/steps", i}});
  const auto back = load_tensor_file(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].first, "weight/a/b");
  EXPECT_EQ(back[0].second.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(back[0].second), values(f));
  EXPECT_EQ(back[1].second.data<int64_t>()[0], 42);

  fs::resize_file(path, fs::file_size(path) - 4);
  try {
    load_tensor_file(path);
    FAIL() << "a truncated file must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_tensor_file((dir / "missing").string()), Error);
  fs::remove_all(dir);
}
