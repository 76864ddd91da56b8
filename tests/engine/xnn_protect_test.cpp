// Protected models (engine/format/xnn_protect.h): AES-256-GCM round trips through Session, wrong
// keys, every single-byte modification, truncation, key files, inspection without a key, and no
// plaintext files written while loading.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "engine/format/xnn_format.h"
#include "engine/format/xnn_protect.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("xnn_protect_test_" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an xnn::Error";
  return "";
}

ModelKey key_from_seed(uint8_t seed) {
  uint8_t bytes[kModelKeySize];
  for (size_t i = 0; i < sizeof(bytes); ++i) bytes[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return ModelKey(bytes, sizeof(bytes));
}

// y = relu(x @ w + b): x [1,4], w [4,3], b [3].
Model tiny_model() {
  Model m;
  m.opset = 17;
  Graph& g = m.graph;
  Value x;
  x.name = "x";
  x.dtype = DType::kF32;
  x.has_shape = true;
  x.shape = {Dim::fixed(1), Dim::fixed(4)};
  const int xi = g.add_value(x);
  const int w = g.add_constant("w", Tensor::from_vector<float>({0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f, -2.f, 1.f, 0.125f,
                                                                3.f, -0.5f, 0.0625f},
                                                               {4, 3}));
  const int b = g.add_constant("b", Tensor::from_vector<float>({0.1f, -0.2f, 0.3f}, {3}));
  Value mm_v;
  mm_v.name = "mm";
  mm_v.dtype = DType::kF32;
  const int mm = g.add_value(mm_v);
  Value add_v = mm_v;
  add_v.name = "sum";
  const int add = g.add_value(add_v);
  Value y_v = mm_v;
  y_v.name = "y";
  const int y = g.add_value(y_v);
  Node n1;
  n1.op_type = "MatMul";
  n1.name = "mm";
  n1.inputs = {xi, w};
  n1.outputs = {mm};
  Node n2;
  n2.op_type = "Add";
  n2.name = "add";
  n2.inputs = {mm, b};
  n2.outputs = {add};
  Node n3;
  n3.op_type = "Relu";
  n3.name = "relu";
  n3.inputs = {add};
  n3.outputs = {y};
  g.nodes = {n1, n2, n3};
  g.inputs = {xi};
  g.outputs = {y};
  return m;
}

std::vector<Tensor> run_model(const std::shared_ptr<Model>& model, const Tensor& x) {
  Session s(model);
  return s.run({{s.inputs()[0].name, x}});
}

void expect_bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    ASSERT_EQ(a[i].nbytes(), b[i].nbytes());
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i;
  }
}

std::set<std::string> list_dir(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.insert(e.path().filename().string());
  return out;
}

// ---- round trips ---------------------------------------------------------------------------

TEST(XnnProtect, TinyModelRoundTripBothModesBitIdentical) {
  TempDir dir;
  const ModelKey key = key_from_seed(1);
  const Model plain = tiny_model();
  save_xnn(plain, dir.file("plain.xnn"));
  const Tensor x = Tensor::from_vector<float>({1.f, -2.f, 0.5f, 3.f}, {1, 4});
  const auto want = run_model(load_model(dir.file("plain.xnn")), x);
  for (ProtectMode mode : {ProtectMode::kWeights, ProtectMode::kWholeModel}) {
    const std::string path = dir.file(mode == ProtectMode::kWeights ? "w.xnn" : "g.xnn");
    save_protected_xnn(plain, path, key, mode);
    EXPECT_EQ(detect_model_kind(path), ModelFileKind::kProtectedXnn);
    EXPECT_EQ(read_protected_info(path).mode, mode);
    auto model = load_model(path, LoadOptions{key});
    expect_bit_identical(run_model(model, x), want);
    // The key is not in the file.
    const std::string bytes = read_bytes(path);
    EXPECT_EQ(bytes.find(std::string(reinterpret_cast<const char*>(key.data()), key.size())), std::string::npos);
    // The weights are not in the file in the clear.
    const Tensor& w = plain.graph.value(1).data.value();
    EXPECT_EQ(bytes.find(std::string(static_cast<const char*>(w.raw()), w.nbytes())), std::string::npos);
  }
}

TEST(XnnProtect, FashionMnistCnnRoundTripBitIdentical) {
  TempDir dir;
  const std::string onnx = std::string(XNN_SOURCE_DIR) + "/configs/models/fmnist_cnn.onnx";
  auto source = load_model(onnx);
  save_xnn(*source, dir.file("cnn.xnn"));
  const ModelKey key = key_from_seed(2);
  auto plain = load_model(dir.file("cnn.xnn"));
  Session ref(plain);
  ASSERT_EQ(ref.inputs().size(), 1u);
  Shape in_shape;
  for (const Dim& d : ref.inputs()[0].shape) in_shape.push_back(d.known() ? d.value : 1);
  Tensor x(DType::kF32, in_shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  std::map<std::string, Tensor> inputs = {{ref.inputs()[0].name, x}};
  const auto want = ref.run(inputs);
  for (ProtectMode mode : {ProtectMode::kWeights, ProtectMode::kWholeModel}) {
    const std::string path = dir.file("cnn_protected.xnn");
    save_protected_xnn(*source, path, key, mode);
    Session s(load_model(path, LoadOptions{key}));
    expect_bit_identical(s.run(inputs), want);
  }
}

TEST(XnnProtect, BytesApiRoundTrip) {
  const ModelKey key = key_from_seed(3);
  const std::string xnn = serialize_xnn(tiny_model());
  const std::string p = protect_xnn_bytes(xnn, key, ProtectMode::kWholeModel);
  EXPECT_TRUE(has_protected_magic(p.data(), p.size()));
  const Model m = load_protected_xnn_bytes(p.data(), p.size(), key, "mem");
  EXPECT_EQ(serialize_xnn(m), xnn);
  // Fresh nonce per protect: the same input gives a different file.
  EXPECT_NE(protect_xnn_bytes(xnn, key, ProtectMode::kWholeModel), p);
}

// ---- refusals -----------------------------------------------------------------------------

TEST(XnnProtect, NoKeyAndWrongKeyAreClearErrors) {
  TempDir dir;
  const std::string path = dir.file("m.xnn");
  save_protected_xnn(tiny_model(), path, key_from_seed(4), ProtectMode::kWeights);
  EXPECT_EQ(error_of([&] { load_model(path); }), path + " is protected: pass --key-file KEY (API: LoadOptions::key)");
  EXPECT_EQ(error_of([&] { load_model(path, LoadOptions{key_from_seed(5)}); }),
            path + ": authentication failed: wrong key or the file was modified");
}

TEST(XnnProtect, EverySingleByteFlipIsRefused) {
  TempDir dir;
  const ModelKey key = key_from_seed(6);
  for (ProtectMode mode : {ProtectMode::kWeights, ProtectMode::kWholeModel}) {
    const std::string good = protect_xnn_bytes(serialize_xnn(tiny_model()), key, mode);
    const std::string path = dir.file("flip.xnn");
    size_t auth_failures = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      write_bytes(path, bad);
      bool threw = false;
      try {
        load_model(path, LoadOptions{key});
      } catch (const Error& e) {
        threw = true;
        if (std::string(e.what()).find("authentication failed") != std::string::npos) ++auth_failures;
      }
      ASSERT_TRUE(threw) << "flipping byte " << i << " of " << good.size() << " loaded anyway";
    }
    // Everything after the checked header fields (nonce, tag, readable part, ciphertext) is
    // caught by authentication itself.
    EXPECT_GE(auth_failures, good.size() - 48) << "mode " << static_cast<int>(mode);
  }
}

TEST(XnnProtect, TruncationIsRefused) {
  TempDir dir;
  const ModelKey key = key_from_seed(7);
  const std::string good = protect_xnn_bytes(serialize_xnn(tiny_model()), key, ProtectMode::kWeights);
  const std::string path = dir.file("trunc.xnn");
  for (size_t n : {size_t{4}, size_t{10}, size_t{63}, size_t{64}, size_t{100}, good.size() - 1}) {
    write_bytes(path, good.substr(0, n));
    const std::string msg = error_of([&] { load_model(path, LoadOptions{key}); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << n << ": " << msg;
  }
  write_bytes(path, good + "x");  // appended bytes
  EXPECT_NE(error_of([&] { load_model(path, LoadOptions{key}); }).find("truncated or corrupted"), std::string::npos);
}

// ---- key files ----------------------------------------------------------------------------

TEST(XnnProtect, KeyFileFormats) {
  TempDir dir;
  std::string raw(32, '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(i * 9 + 1);
  write_bytes(dir.file("raw.key"), raw);
  const ModelKey a = read_key_file(dir.file("raw.key"));
  EXPECT_EQ(std::memcmp(a.data(), raw.data(), 32), 0);

  std::string hex;
  const char* digits = "0123456789abcdef";
  for (char c : raw) {
    hex += digits[(static_cast<uint8_t>(c) >> 4) & 15];
    hex += digits[static_cast<uint8_t>(c) & 15];
  }
  for (const std::string& text : {hex, hex + "\n", hex + "\r\n"}) {
    write_bytes(dir.file("hex.key"), text);
    const ModelKey b = read_key_file(dir.file("hex.key"));
    EXPECT_EQ(std::memcmp(b.data(), raw.data(), 32), 0);
  }
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  write_bytes(dir.file("upper.key"), upper);
  EXPECT_EQ(std::memcmp(read_key_file(dir.file("upper.key")).data(), raw.data(), 32), 0);

  for (const std::string& bad : {std::string(31, 'a'), std::string(33, 'a'), hex.substr(0, 62) + "\n",
                                 std::string(""), hex + hex}) {
    write_bytes(dir.file("bad.key"), bad);
    const std::string msg = error_of([&] { read_key_file(dir.file("bad.key")); });
    EXPECT_NE(msg.find(dir.file("bad.key")), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected exactly 32 raw bytes or 64 hex characters"), std::string::npos) << msg;
  }
  std::string not_hex = hex;
  not_hex[10] = 'g';
  write_bytes(dir.file("nothex.key"), not_hex);
  EXPECT_NE(error_of([&] { read_key_file(dir.file("nothex.key")); }).find("byte 10 is not a hex digit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_key_file(dir.file("missing.key")); }).find("cannot open key file"), std::string::npos);
}

TEST(XnnProtect, GenerateKeyFile) {
  TempDir dir;
  const std::string path = dir.file("new.key");
  const ModelKey k = generate_key_file(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  EXPECT_EQ(std::memcmp(read_key_file(path).data(), k.data(), 32), 0);
  EXPECT_NE(error_of([&] { generate_key_file(path); }).find("already exists"), std::string::npos);
  const ModelKey k2 = generate_key_file(dir.file("other.key"));
  EXPECT_NE(std::memcmp(k.data(), k2.data(), 32), 0);
}

// ---- inspection without a key ---------------------------------------------------------------

TEST(XnnProtect, WeightsOnlyIsInspectableButNotRunnableWithoutKey) {
  TempDir dir;
  const Model plain = tiny_model();
  save_protected_xnn(plain, dir.file("w.xnn"), key_from_seed(8), ProtectMode::kWeights);
  const Model structure = load_protected_structure(dir.file("w.xnn"));
  ASSERT_EQ(structure.graph.nodes.size(), 3u);
  EXPECT_EQ(structure.graph.nodes[0].op_type, "MatMul");
  EXPECT_EQ(structure.graph.parameter_count(), plain.graph.parameter_count());
  const Tensor& w = structure.graph.value(1).data.value();
  EXPECT_EQ(w.shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < w.numel(); ++i) EXPECT_EQ(w.data<float>()[i], 0.0f);  // not the weights
  EXPECT_NE(error_of([&] { load_model(dir.file("w.xnn")); }).find("is protected: pass --key-file"), std::string::npos);

  save_protected_xnn(plain, dir.file("g.xnn"), key_from_seed(8), ProtectMode::kWholeModel);
  EXPECT_NE(error_of([&] { load_protected_structure(dir.file("g.xnn")); }).find("graph encrypted"), std::string::npos);
}

// ---- no plaintext on disk -----------------------------------------------------------------

TEST(XnnProtect, LoadingWritesNoFiles) {
  TempDir dir;
  const ModelKey key = key_from_seed(9);
  save_protected_xnn(tiny_model(), dir.file("m.xnn"), key, ProtectMode::kWholeModel);
  const fs::path tmp = fs::temp_directory_path();
  const auto model_dir_before = list_dir(dir.path());
  const auto tmp_before = list_dir(tmp);
  {
    auto model = load_model(dir.file("m.xnn"), LoadOptions{key});
    Session s(model);
    s.run({{"x", Tensor::from_vector<float>({1.f, 2.f, 3.f, 4.f}, {1, 4})}});
    EXPECT_EQ(list_dir(dir.path()), model_dir_before);
    // Other processes (parallel ctest, other checkouts) use the temp dir too, under any name;
    // what matters is that nothing new there carries the model's plaintext weights.
    const Model plain = tiny_model();
    const Tensor& w = plain.graph.value(1).data.value();
    const std::string weights(static_cast<const char*>(w.raw()), static_cast<size_t>(w.nbytes()));
    for (const std::string& name : list_dir(tmp)) {
      if (tmp_before.count(name)) continue;
      std::error_code ec;
      if (!fs::is_regular_file(tmp / name, ec)) continue;
      std::ifstream in(tmp / name, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(bytes.find(weights), std::string::npos) << "plaintext weights in a new temp file: " << name;
    }
  }
  EXPECT_EQ(list_dir(dir.path()), model_dir_before);
  // Saving leaves only the output (no PATH.tmp, no plaintext).
  save_protected_xnn(tiny_model(), dir.file("m2.xnn"), key, ProtectMode::kWeights);
  auto after = model_dir_before;
  after.insert("m2.xnn");
  EXPECT_EQ(list_dir(dir.path()), after);
}

}  // namespace
}  // namespace xnn
