// Supernet training: it changes the stored weights, writes a checkpoint after each epoch, a
// rerun loads a finished supernet instead of training it (same tensors), and a checkpoint of
// another configuration is refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>

#include "engine/core/error.h"
#include "nas/oneshot/supernet_training.h"

namespace fs = std::filesystem;
using namespace xnn;
using namespace xnn::nas;

namespace {

arch::SearchSpace space_at_28() {
  arch::SearchSpace s = arch::load_search_space(std::string(XNN_SOURCE_DIR) + "/configs/arch/mobilenet_space_tiny.yaml");
  s.resolutions = {28};  // the images' size: the supernet does not resize
  return s;
}

data::Dataset random_dataset(int64_t count) {
  data::Dataset ds;
  ds.count = count;
  ds.rows = ds.cols = 28;
  std::mt19937_64 rng(9);
  for (int64_t i = 0; i < count * 28 * 28; ++i) ds.images.push_back(static_cast<uint8_t>(rng() % 256));
  for (int64_t i = 0; i < count; ++i) ds.labels.push_back(static_cast<uint8_t>(rng() % 10));
  return ds;
}

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

// A fresh scratch folder for a test's checkpoint.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// Batches of 16 (64 random images: 4 steps an epoch), no prefetch thread, no step lines.
train::TrainConfig small_recipe() {
  train::TrainConfig recipe;
  recipe.batch_size = 16;
  recipe.prefetch = 0;
  recipe.log_every = 0;
  return recipe;
}

}  // namespace

TEST(SupernetTraining, TrainsCheckpointsAndReloadsAFinishedSupernet) {
  const fs::path dir = fresh_dir("oneshot_supernet");
  const std::string checkpoint = (dir / "supernet.tensors").string();
  const data::Dataset train = random_dataset(64);
  const train::TrainConfig recipe = small_recipe();
  OneshotOptions options;
  options.width = 0.5;
  options.epochs = 2;
  options.steps_per_path = 2;

  SupernetWeights initial(space_at_28(), 0.5, 1);
  const arch::Arch probe = sample_path(initial, 5, 0);  // the first path trained
  initial.realize(probe, true);
  SupernetWeights w(space_at_28(), 0.5, 1);
  const SupernetTrainResult r = train_supernet(w, train, recipe, options, 5, checkpoint, nullptr);
  EXPECT_EQ(r.epochs_run, 2);
  EXPECT_EQ(r.steps, 8);  // 64 / 16 per epoch
  EXPECT_EQ(r.paths, 4);  // a new path every 2 steps
  EXPECT_TRUE(fs::is_regular_file(checkpoint));
  const std::string key = "stem.conv.weight";  // on every path
  ASSERT_NE(w.find(key), nullptr);
  EXPECT_NE(values(*w.find(key)), values(*initial.find(key)));

  SupernetWeights again(space_at_28(), 0.5, 1);
  std::vector<std::string> lines;
  const SupernetTrainResult r2 =
      train_supernet(again, train, recipe, options, 5, checkpoint, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(r2.epochs_run, 0);
  EXPECT_EQ(r2.resumed_from_epoch, 2);
  EXPECT_EQ(r2.steps, 8);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("supernet: resuming from " + checkpoint + " after epoch 2 of 2"), std::string::npos) << lines[0];
  ASSERT_EQ(again.size(), w.size());
  for (const auto& [k, t] : w.tensors()) EXPECT_EQ(values(*again.find(k)), values(t)) << k;

  OneshotOptions other = options;
  other.steps_per_path = 1;
  SupernetWeights third(space_at_28(), 0.5, 1);
  try {
    train_supernet(third, train, recipe, other, 5, checkpoint, nullptr);
    FAIL() << "a checkpoint of another configuration must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another configuration"), std::string::npos) << e.what();
  }
  // Sharing changes which tensors exist: an unshared checkpoint is refused for a shared supernet.
  SupernetWeights shared(space_at_28(), 0.5, 1, WeightSharing::kPointwise);
  OneshotOptions shared_options = options;
  shared_options.sharing = WeightSharing::kPointwise;
  try {
    train_supernet(shared, train, recipe, shared_options, 5, checkpoint, nullptr);
    FAIL() << "a checkpoint of an unshared supernet must be refused for a shared one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another configuration"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(SupernetTraining, SplitSupernetTrainsAPathOfEachStemStrideOnEveryBatch) {
  const fs::path dir = fresh_dir("oneshot_split");
  const std::string checkpoint = (dir / "supernet.tensors").string();
  const data::Dataset train = random_dataset(64);
  const train::TrainConfig recipe = small_recipe();
  OneshotOptions options;
  options.width = 0.5;
  options.epochs = 1;
  options.split = SupernetSplit::kStemStride;
  arch::SearchSpace space = space_at_28();
  space.stem_strides = {2, 1};

  // Each sub-supernet samples only paths of its stride.
  SupernetWeights probe(space, 0.5, 1, WeightSharing::kNone, SupernetSplit::kStemStride);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(arch::stem_stride(space, sample_path(probe, 5, i, 1)), 1);
    EXPECT_EQ(arch::stem_stride(space, sample_path(probe, 5, i, 2)), 2);
  }
  // The first step's paths (draws 0 and 1), realised before training to keep the initial values.
  SupernetWeights initial(space, 0.5, 1, WeightSharing::kNone, SupernetSplit::kStemStride);
  initial.realize(sample_path(initial, 5, 0, 2), true);
  initial.realize(sample_path(initial, 5, 1, 1), true);

  SupernetWeights w(space, 0.5, 1, WeightSharing::kNone, SupernetSplit::kStemStride);
  std::vector<std::string> lines;
  const SupernetTrainResult r =
      train_supernet(w, train, recipe, options, 5, checkpoint, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(r.steps, 4);  // batches: each trains a path of both strides
  EXPECT_EQ(r.paths, 8);
  for (const std::string key : {"s1/stem.conv.weight", "s2/stem.conv.weight", "s1/classifier.weight", "s2/classifier.weight"}) {
    ASSERT_NE(w.find(key), nullptr) << key;
    ASSERT_NE(initial.find(key), nullptr) << key;
    EXPECT_NE(values(*w.find(key)), values(*initial.find(key))) << key;  // both sub-supernets trained
  }
  ASSERT_GE(lines.size(), 2u);
  EXPECT_NE(lines[0].find("one sub-supernet per stem stride (2, each every batch)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("(sampled paths; stem stride 2: "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("%, stem stride 1: "), std::string::npos) << lines[1];

  // An unsplit supernet of the same space refuses the split checkpoint, and store and options must agree.
  OneshotOptions unsplit = options;
  unsplit.split = SupernetSplit::kNone;
  SupernetWeights plain(space, 0.5, 1);
  try {
    train_supernet(plain, train, recipe, unsplit, 5, checkpoint, nullptr);
    FAIL() << "a split checkpoint must be refused for an unsplit supernet";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another configuration"), std::string::npos) << e.what();
  }
  try {
    train_supernet(plain, train, recipe, options, 5, checkpoint, nullptr);
    FAIL() << "an unsplit store trained with split options must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("split by 'none', the options ask for 'stem_stride'"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(SupernetTraining, HeldOutValidationComesAfterTheTrainingImages) {
  train::TrainConfig recipe;
  recipe.train_limit = 300;
  const SupernetData d = load_supernet_data(recipe, 100);
  EXPECT_EQ(d.train.count, 300);
  EXPECT_EQ(d.validation.count, 100);
  const data::Dataset all = data::load_fashion_mnist(recipe.data_path, "train", 400);
  EXPECT_TRUE(std::equal(d.validation.labels.begin(), d.validation.labels.end(), all.labels.begin() + 300));
  EXPECT_TRUE(std::equal(d.validation.images.begin(), d.validation.images.end(), all.images.begin() + 300 * 784));
}
