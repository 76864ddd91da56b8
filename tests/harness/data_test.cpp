// Dataset layer (IDX reading, preprocessing, batching) and accuracy evaluation.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/graph.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/data/fashion_mnist.h"
#include "harness/eval/evaluate.h"

namespace xnn {
namespace {

namespace fs = std::filesystem;
using data::Dataset;
using data::Preprocess;

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("xnn_data_test_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

void write_plain(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A tiny split: 3 images of 2x4 pixels with pixel = 10*i + j, labels 7, 0, 9.
constexpr uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;
std::vector<uint8_t> tiny_pixels() {
  std::vector<uint8_t> px;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j) px.push_back(static_cast<uint8_t>(10 * i + j));
  return px;
}
const std::vector<uint8_t> kTinyLabels{7, 0, 9};

void write_tiny_split(const TempDir& dir, const std::string& prefix, bool gzip) {
  const auto images = idx_bytes(kImagesMagic, {3, 2, 4}, tiny_pixels());
  const auto labels = idx_bytes(kLabelsMagic, {3}, kTinyLabels);
  if (gzip) {
    write_gzip(dir.file(prefix + "-images-idx3-ubyte.gz"), images);
    write_gzip(dir.file(prefix + "-labels-idx1-ubyte.gz"), labels);
  } else {
    write_plain(dir.file(prefix + "-images-idx3-ubyte"), images);
    write_plain(dir.file(prefix + "-labels-idx1-ubyte"), labels);
  }
}

// Runs `f`, expecting an xnn::Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an xnn::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

// ---- IDX reading -----------------------------------------------------------------------------

TEST(FashionMnistIdx, ReadsPlainAndGzipFilesAlike) {
  for (bool gzip : {false, true}) {
    SCOPED_TRACE(gzip ? "gzip" : "plain");
    TempDir dir;
    write_tiny_split(dir, "t10k", gzip);
    const Dataset ds = data::load_fashion_mnist(dir.str(), "test");
    EXPECT_EQ(ds.count, 3);
    EXPECT_EQ(ds.rows, 2);
    EXPECT_EQ(ds.cols, 4);
    EXPECT_EQ(ds.num_classes, 10);
    EXPECT_EQ(ds.images, tiny_pixels());
    EXPECT_EQ(ds.labels, kTinyLabels);
  }
}

TEST(FashionMnistIdx, TrainSplitAndLimit) {
  TempDir dir;
  write_tiny_split(dir, "train", true);
  const Dataset ds = data::load_fashion_mnist(dir.str(), "train", 2);
  EXPECT_EQ(ds.count, 2);
  EXPECT_EQ(ds.images.size(), 16u);
  EXPECT_EQ(ds.images[15], 17);
  EXPECT_EQ(ds.labels, (std::vector<uint8_t>{7, 0}));
  // A limit above the count keeps everything.
  EXPECT_EQ(data::load_fashion_mnist(dir.str(), "train", 100).count, 3);
}

TEST(FashionMnistIdx, ReadMaybeGzipPassesPlainBytesThrough) {
  TempDir dir;
  const std::vector<uint8_t> bytes{1, 2, 3, 0x1f};
  write_plain(dir.file("plain"), bytes);
  write_gzip(dir.file("packed.gz"), bytes);
  EXPECT_EQ(data::read_maybe_gzip(dir.file("plain")), bytes);
  EXPECT_EQ(data::read_maybe_gzip(dir.file("packed.gz")), bytes);
}

TEST(FashionMnistIdx, BadMagicNamesFileAndExpectedMagic) {
  TempDir dir;
  write_tiny_split(dir, "t10k", false);
  // Labels file with the images magic.
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(kImagesMagic, {3}, kTinyLabels));
  expect_error([&] { data::load_fashion_mnist(dir.str(), "test"); },
               {dir.file("t10k-labels-idx1-ubyte"), "0x00000803", "expected 0x00000801"});
  expect_error([&] { data::read_idx(dir.file("t10k-images-idx3-ubyte"), kLabelsMagic); },
               {dir.file("t10k-images-idx3-ubyte"), "expected 0x00000801"});
}

TEST(FashionMnistIdx, TruncatedDataIsAnError) {
  TempDir dir;
  write_tiny_split(dir, "t10k", true);
  auto px = tiny_pixels();
  px.resize(px.size() - 5);
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes(kImagesMagic, {3, 2, 4}, px));
  expect_error([&] { data::load_fashion_mnist(dir.str(), "test"); },
               {dir.file("t10k-images-idx3-ubyte.gz"), "truncated", "19 bytes", "expected 24", "3 x 2 x 4"});
}

TEST(FashionMnistIdx, TruncatedHeaderIsAnError) {
  TempDir dir;
  write_plain(dir.file("short"), {0, 0, 8, 3, 0, 0});
  expect_error([&] { data::read_idx(dir.file("short"), kImagesMagic); }, {dir.file("short"), "truncated header"});
  write_plain(dir.file("tiny"), {0, 0});
  expect_error([&] { data::read_idx(dir.file("tiny"), kImagesMagic); }, {dir.file("tiny"), "truncated"});
}

TEST(FashionMnistIdx, TruncatedGzipStreamIsAnError) {
  TempDir dir;
  write_tiny_split(dir, "t10k", true);
  const std::string path = dir.file("t10k-images-idx3-ubyte.gz");
  auto bytes = read_all(path);
  ASSERT_GT(bytes.size(), 20u);
  bytes.resize(bytes.size() - 12);  // cut into the deflate stream, drop the trailer
  write_plain(path, bytes);
  expect_error([&] { data::load_fashion_mnist(dir.str(), "test"); }, {path, "truncated gzip"});
}

TEST(FashionMnistIdx, TrailingBytesAreAnError) {
  TempDir dir;
  write_plain(dir.file("labels"), idx_bytes(kLabelsMagic, {2}, {1, 2, 3}));
  expect_error([&] { data::read_idx(dir.file("labels"), kLabelsMagic); }, {dir.file("labels"), "expected exactly 2"});
}

TEST(FashionMnistIdx, CountMismatchAndBadLabels) {
  TempDir dir;
  write_tiny_split(dir, "t10k", false);
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(kLabelsMagic, {2}, {1, 2}));
  expect_error([&] { data::load_fashion_mnist(dir.str(), "test"); },
               {dir.file("t10k-labels-idx1-ubyte"), "2 labels", "expected 3"});
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(kLabelsMagic, {3}, {1, 10, 2}));
  expect_error([&] { data::load_fashion_mnist(dir.str(), "test"); },
               {dir.file("t10k-labels-idx1-ubyte"), "label 10 at index 1", "0..9"});
}

TEST(FashionMnistIdx, MissingFilesAndBadSplit) {
  TempDir dir;
  expect_error([&] { data::load_fashion_mnist(dir.str(), "test"); },
               {dir.file("t10k-images-idx3-ubyte.gz"), dir.file("t10k-images-idx3-ubyte"), "--data-dir"});
  expect_error([&] { data::load_fashion_mnist(dir.str(), "validation"); }, {"validation", "'train' or 'test'"});
}

// ---- The real dataset ------------------------------------------------------------------------

TEST(FashionMnistReal, CountsAndShapes) {
  const std::string dir = data::kDefaultFashionMnistDir;
  if (!fs::exists(fs::path(dir) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << dir << " not installed";
  const Dataset test = data::load_fashion_mnist(dir, "test");
  EXPECT_EQ(test.count, 10000);
  EXPECT_EQ(test.rows, 28);
  EXPECT_EQ(test.cols, 28);
  EXPECT_EQ(test.images.size(), 10000u * 784u);
  // The test split is balanced: 1000 per class.
  std::vector<int> per_class(10);
  for (uint8_t l : test.labels) ++per_class.at(l);
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 1000) << "class " << c;
  EXPECT_EQ(test.labels[0], 9);  // the first test image is an ankle boot
  const Dataset train = data::load_fashion_mnist(dir, "train");
  EXPECT_EQ(train.count, 60000);
  EXPECT_EQ(train.rows, 28);
  EXPECT_EQ(train.cols, 28);
  EXPECT_EQ(train.labels.size(), 60000u);
  EXPECT_EQ(data::load_fashion_mnist(dir, "test", 5).count, 5);
}

// ---- Preprocessing and batching --------------------------------------------------------------

Dataset synthetic(int64_t count, int64_t rows = 28, int64_t cols = 28) {
  Dataset ds;
  ds.count = count;
  ds.rows = rows;
  ds.cols = cols;
  ds.images.resize(static_cast<size_t>(count * rows * cols));
  for (size_t i = 0; i < ds.images.size(); ++i) ds.images[i] = static_cast<uint8_t>((i * 7 + i / 784) % 256);
  ds.labels.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) ds.labels[static_cast<size_t>(i)] = static_cast<uint8_t>(i % 10);
  return ds;
}

TEST(MakeBatch, PreprocessingMath) {
  Dataset ds = synthetic(1);
  ds.images[0] = 0;
  ds.images[1] = 255;
  ds.images[2] = 128;
  Preprocess p;
  p.mean = {0.2860f};
  p.std = {0.3530f};
  const Tensor t = data::make_batch(ds, 0, 1, p, {-1, 1, 28, 28});
  ASSERT_EQ(t.dtype(), DType::kF32);
  const float* x = t.data<float>();
  EXPECT_NEAR(x[0], (0.0f - 0.2860f) / 0.3530f, 1e-6);
  EXPECT_NEAR(x[1], (1.0f - 0.2860f) / 0.3530f, 1e-6);
  EXPECT_NEAR(x[2], (128.0f / 255.0f - 0.2860f) / 0.3530f, 1e-6);
  // Defaults: scale 1/255, mean 0, std 1 -> [0, 1].
  const Tensor d = data::make_batch(ds, 0, 1, Preprocess{}, {-1, 784});
  EXPECT_FLOAT_EQ(d.data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(d.data<float>()[1], 1.0f);
  // A custom scale without normalisation: raw pixel values.
  Preprocess raw;
  raw.scale = 1.0f;
  EXPECT_FLOAT_EQ(data::make_batch(ds, 0, 1, raw, {1, 784}).data<float>()[2], 128.0f);
}

TEST(MakeBatch, ShapesForEachLayout) {
  const Dataset ds = synthetic(10);
  const Preprocess p;
  EXPECT_EQ(data::make_batch(ds, 2, 5, p, {-1, 1, 28, 28}).shape(), (Shape{5, 1, 28, 28}));
  EXPECT_EQ(data::make_batch(ds, 2, 5, p, {-1, 28, 28, 1}).shape(), (Shape{5, 28, 28, 1}));
  EXPECT_EQ(data::make_batch(ds, 2, 5, p, {-1, 784}).shape(), (Shape{5, 784}));
  EXPECT_EQ(data::make_batch(ds, 2, 5, p, {-1, 28, 28}).shape(), (Shape{5, 28, 28}));
  // The batch dim is replaced by the count, fixed or not.
  EXPECT_EQ(data::make_batch(ds, 0, 1, p, {1, 1, 28, 28}).shape(), (Shape{1, 1, 28, 28}));
  // Unknown dims: the layout option decides.
  EXPECT_EQ(data::make_batch(ds, 0, 3, p, {-1, -1, -1, -1}).shape(), (Shape{3, 1, 28, 28}));
  Preprocess nhwc;
  nhwc.layout = "NHWC";
  EXPECT_EQ(data::make_batch(ds, 0, 3, nhwc, {-1, -1, -1, -1}).shape(), (Shape{3, 28, 28, 1}));
  // Known dims win over the option.
  EXPECT_EQ(data::make_batch(ds, 0, 3, nhwc, {-1, 1, 28, 28}).shape(), (Shape{3, 1, 28, 28}));
  // The last sample, a partial batch at the end.
  EXPECT_EQ(data::make_batch(ds, 9, 1, p, {-1, 784}).shape(), (Shape{1, 784}));
}

TEST(MakeBatch, DataOrderFollowsTheImages) {
  const Dataset ds = synthetic(4);
  Preprocess raw;
  raw.scale = 1.0f;
  for (const Shape& s : {Shape{-1, 1, 28, 28}, Shape{-1, 28, 28, 1}, Shape{-1, 784}}) {
    const Tensor t = data::make_batch(ds, 1, 3, raw, s);
    const float* x = t.data<float>();
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t r = 0; r < 28; r += 9)
        for (int64_t c = 0; c < 28; c += 5)
          ASSERT_EQ(x[n * 784 + r * 28 + c], ds.images[static_cast<size_t>((1 + n) * 784 + r * 28 + c)])
              << shape_str(s) << " n=" << n << " r=" << r << " c=" << c;
  }
}

TEST(MakeBatch, RejectsInputsThatCannotTakeAGreyImage) {
  const Dataset ds = synthetic(4);
  const Preprocess p;
  expect_error([&] { data::make_batch(ds, 0, 1, p, {-1, 3, 28, 28}); }, {"[-1,3,28,28]", "28x28 grey image"});
  expect_error([&] { data::make_batch(ds, 0, 1, p, {-1, 1, 32, 32}); }, {"28x28"});
  expect_error([&] { data::make_batch(ds, 0, 1, p, {-1, 100}); }, {"[N,784]"});
  expect_error([&] { data::make_batch(ds, 0, 1, p, {-1}); }, {"rank"});
  expect_error([&] { data::make_batch(ds, 0, 1, p, {-1, 1, 1, 28, 28}); }, {"rank"});
  expect_error([&] { data::make_batch(ds, 3, 2, p, {-1, 784}); }, {"out of range"});
  Preprocess bad = p;
  bad.std = {0.0f};
  expect_error([&] { data::make_batch(ds, 0, 1, bad, {-1, 784}); }, {"std"});
  bad = p;
  bad.mean = {0.5f, 0.5f, 0.5f};
  expect_error([&] { data::make_batch(ds, 0, 1, bad, {-1, 784}); }, {"1 channel"});
  bad = p;
  bad.layout = "CHWN";
  expect_error([&] { data::make_batch(ds, 0, 1, bad, {-1, 784}); }, {"CHWN"});
}

// ---- Accuracy evaluation ---------------------------------------------------------------------

// A linear "classifier": Flatten, then MatMul with W[784,10] where W[j][j] = 1 for j < 10,
// so class c scores pixel c (preprocessed). `input_shape` dims < 0 become the symbol "batch".
std::shared_ptr<Model> pixel_classifier(const Shape& input_shape) {
  auto m = std::make_shared<Model>();
  Graph& g = m->graph;
  Value in;
  in.name = "image";
  in.dtype = DType::kF32;
  in.has_shape = true;
  for (int64_t d : input_shape) in.shape.push_back(d < 0 ? Dim::named("batch") : Dim::fixed(d));
  const int x = g.add_value(in);
  g.inputs.push_back(x);
  int flat = x;
  if (input_shape.size() != 2) {
    Value f;
    f.name = "flat";
    f.dtype = DType::kF32;
    flat = g.add_value(f);
    Node n;
    n.op_type = "Flatten";
    n.name = "flatten";
    n.inputs = {x};
    n.outputs = {flat};
    n.attrs["axis"] = int64_t{1};
    g.nodes.push_back(n);
  }
  std::vector<float> w(784 * 10, 0.0f);
  for (int j = 0; j < 10; ++j) w[static_cast<size_t>(j * 10 + j)] = 1.0f;
  const int wv = g.add_constant("W", Tensor::from_vector(w, {784, 10}));
  Value out;
  out.name = "logits";
  out.dtype = DType::kF32;
  const int y = g.add_value(out);
  Node mm;
  mm.op_type = "MatMul";
  mm.name = "fc";
  mm.inputs = {flat, wv};
  mm.outputs = {y};
  g.nodes.push_back(mm);
  g.outputs.push_back(y);
  return m;
}

// 7 samples; pixel c of sample i is its score for class c. Samples 2 and 3 are misclassified:
// 2 ranks its label second (a top-5 hit), 3 ranks it sixth (a top-5 miss).
Dataset scored_dataset() {
  Dataset ds;
  ds.count = 7;
  ds.rows = ds.cols = 28;
  ds.images.assign(7 * 784, 0);
  ds.labels = {3, 0, 5, 2, 9, 1, 4};
  auto px = [&](int i, int c) -> uint8_t& { return ds.images[static_cast<size_t>(i * 784 + c)]; };
  for (int i = 0; i < 7; ++i) px(i, ds.labels[static_cast<size_t>(i)]) = 200;
  px(2, 7) = 250;  // beats label 5
  for (int c : {3, 4, 5, 6, 7}) px(3, c) = 250;  // five classes beat label 2
  return ds;
}

TEST(EvaluateClassifier, Top1Top5WithSymbolicBatch) {
  const Dataset ds = scored_dataset();
  for (int64_t batch : {0, 1, 3, 7, 100}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    Session session(pixel_classifier({-1, 1, 28, 28}));
    const eval::AccuracyResult r = eval::evaluate_classifier(session, ds, Preprocess{}, batch);
    EXPECT_EQ(r.samples, 7);
    EXPECT_DOUBLE_EQ(r.top1, 5.0 / 7.0);
    EXPECT_DOUBLE_EQ(r.top5, 6.0 / 7.0);
    EXPECT_GE(r.seconds, 0.0);
  }
}

TEST(EvaluateClassifier, FixedBatchModelsAndOtherLayouts) {
  const Dataset ds = scored_dataset();
  Preprocess p;
  p.mean = {0.2860f};
  p.std = {0.3530f};  // a monotonic map: the ranking is unchanged
  for (const Shape& s : {Shape{1, 1, 28, 28}, Shape{4, 1, 28, 28}, Shape{-1, 28, 28, 1}, Shape{-1, 784}, Shape{1, 784}}) {
    SCOPED_TRACE(shape_str(s));
    Session session(pixel_classifier(s));
    const eval::AccuracyResult r = eval::evaluate_classifier(session, ds, p);
    EXPECT_EQ(r.samples, 7);
    EXPECT_DOUBLE_EQ(r.top1, 5.0 / 7.0);
    EXPECT_DOUBLE_EQ(r.top5, 6.0 / 7.0);
  }
}

TEST(EvaluateClassifier, Errors) {
  const Dataset ds = scored_dataset();
  Session fixed(pixel_classifier({4, 1, 28, 28}));
  expect_error([&] { eval::evaluate_classifier(fixed, ds, Preprocess{}, 3); }, {"batch size 3", "fixed batch of 4"});
  Session rgb(pixel_classifier({-1, 3, 28, 28}));
  expect_error([&] { eval::evaluate_classifier(rgb, ds, Preprocess{}); }, {"grey image"});
  Dataset many = ds;
  many.num_classes = 20;
  Session ok(pixel_classifier({-1, 784}));
  expect_error([&] { eval::evaluate_classifier(ok, many, Preprocess{}); }, {"'logits'", "at least 20 classes"});
}

// The committed quickstart model (scripts/train_fmnist_quickstart.py) through our engine must
// reproduce the test accuracy PyTorch measured, recorded in its .json, within 0.1 points.
TEST(EvaluateClassifier, QuickstartModelMatchesPyTorchAccuracy) {
  const fs::path repo = fs::path(__FILE__).parent_path().parent_path().parent_path();
  const fs::path model = repo / "configs/models/fmnist_cnn.onnx", meta = repo / "configs/models/fmnist_cnn.json";
  const std::string dir = data::kDefaultFashionMnistDir;
  if (!fs::exists(model) || !fs::exists(meta)) GTEST_SKIP() << model << " not found";
  if (!fs::exists(fs::path(dir) / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << dir << " not installed";
  std::ifstream f(meta);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  const size_t at = text.find("\"test_accuracy_top1\":");
  ASSERT_NE(at, std::string::npos) << meta;
  const double torch_top1 = std::stod(text.substr(text.find(':', at) + 1));
  Session session(load_model(model.string()));
  Preprocess p;
  p.mean = {0.2860f};
  p.std = {0.3530f};
  const eval::AccuracyResult r = eval::evaluate_classifier(session, data::load_fashion_mnist(dir, "test"), p);
  EXPECT_EQ(r.samples, 10000);
  EXPECT_NEAR(r.top1, torch_top1, 0.001) << "engine top-1 " << r.top1 << " vs PyTorch " << torch_top1;
  EXPECT_GT(r.top1, 0.85);
}

}  // namespace
}  // namespace xnn
