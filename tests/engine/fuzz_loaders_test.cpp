// Pushes mutated model files through both loaders (ONNX and .xnn). Every mutation must either
// load or fail with xnn::Error — never crash, hang or throw anything else. Run under the
// ASan+UBSan build (-DXNN_SANITIZE=ON) by scripts/test.sh, so memory errors fail the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_import.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

constexpr int kMutationsPerSeed = 150;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// One mutation of `bytes`: flip bits, overwrite a run with random bytes, truncate, duplicate a
// slice, or set a byte to an extreme value (0x00/0x7f/0x80/0xff: lengths and varints).
std::string mutate(const std::string& bytes, std::mt19937& rng) {
  std::string m = bytes;
  auto pos = [&] { return std::uniform_int_distribution<size_t>(0, m.empty() ? 0 : m.size() - 1)(rng); };
  const int kind = std::uniform_int_distribution<int>(0, 4)(rng);
  const int edits = std::uniform_int_distribution<int>(1, 8)(rng);
  for (int e = 0; e < edits && !m.empty(); ++e) {
    switch (kind) {
      case 0: m[pos()] ^= static_cast<char>(1u << std::uniform_int_distribution<int>(0, 7)(rng)); break;
      case 1: {
        const size_t p = pos();
        const size_t n = std::min<size_t>(m.size() - p, std::uniform_int_distribution<size_t>(1, 16)(rng));
        for (size_t i = 0; i < n; ++i) m[p + i] = static_cast<char>(rng());
        break;
      }
      case 2: m.resize(pos()); break;
      case 3: {
        const size_t p = pos();
        const size_t n = std::min<size_t>(m.size() - p, std::uniform_int_distribution<size_t>(1, 64)(rng));
        m.insert(pos(), m.substr(p, n));
        break;
      }
      default: {
        static const unsigned char extremes[] = {0x00, 0x7f, 0x80, 0xff};
        m[pos()] = static_cast<char>(extremes[rng() % 4]);
      }
    }
  }
  return m;
}

std::string fixture_onnx() {
  // A real model with convolutions, initialisers and shape ops, from Debian's libonnx-testdata.
  for (const char* p : {"/usr/share/libonnx-testdata/data/pytorch-converted/test_ConvTranspose2d/model.onnx",
                        "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx",
                        "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return {};
}

// Loading succeeded: building a session (graph validation, op lookup) must also be safe.
void exercise(std::shared_ptr<Model> model) {
  try {
    Session s(std::move(model));
    (void)s;
  } catch (const Error&) {
  }
}

TEST(FuzzLoaders, MutatedOnnxFilesNeverCrash) {
  const std::string path = fixture_onnx();
  if (path.empty()) GTEST_SKIP() << "libonnx-testdata is not installed (scripts/install-deps.sh installs it)";
  const std::string valid = read_file(path);
  ASSERT_NO_THROW(import_onnx_bytes(valid.data(), valid.size(), path, std::filesystem::path(path).parent_path()));
  int loaded = 0, rejected = 0;
  for (uint32_t seed = 1; seed <= 2; ++seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < kMutationsPerSeed; ++i) {
      const std::string m = mutate(valid, rng);
      try {
        exercise(std::make_shared<Model>(import_onnx_bytes(m.data(), m.size(), "mutated.onnx", "/nonexistent")));
        ++loaded;
      } catch (const Error& e) {
        ++rejected;
        EXPECT_NE(std::string(e.what()).find("mutated.onnx"), std::string::npos) << "error does not name the file: " << e.what();
      }
    }
  }
  EXPECT_GT(rejected, 0);
  std::printf("onnx mutations: %d loaded, %d rejected with an error\n", loaded, rejected);
}

TEST(FuzzLoaders, MutatedXnnFilesNeverCrash) {
  const std::string path = fixture_onnx();
  if (path.empty()) GTEST_SKIP() << "libonnx-testdata is not installed (scripts/install-deps.sh installs it)";
  const std::string valid = serialize_xnn(import_onnx_file(path));
  ASSERT_NO_THROW(load_xnn_bytes(valid.data(), valid.size(), "valid.xnn"));
  int loaded = 0, rejected = 0;
  for (uint32_t seed = 1; seed <= 2; ++seed) {
    std::mt19937 rng(seed * 7919);
    for (int i = 0; i < kMutationsPerSeed; ++i) {
      const std::string m = mutate(valid, rng);
      try {
        exercise(std::make_shared<Model>(load_xnn_bytes(m.data(), m.size(), "mutated.xnn")));
        ++loaded;
      } catch (const Error& e) {
        ++rejected;
        EXPECT_NE(std::string(e.what()).find("mutated.xnn"), std::string::npos) << "error does not name the file: " << e.what();
      }
    }
  }
  EXPECT_GT(rejected, 0);
  std::printf("xnn mutations: %d loaded, %d rejected with an error\n", loaded, rejected);
}

TEST(FuzzLoaders, RandomBytesAreRejected) {
  std::mt19937 rng(42);
  for (int i = 0; i < 100; ++i) {
    std::string junk(std::uniform_int_distribution<size_t>(0, 4096)(rng), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (i % 2 == 0 && junk.size() >= 4) junk.replace(0, 4, "XNN\x01", 4);  // get past the magic check
    EXPECT_THROW(load_xnn_bytes(junk.data(), junk.size(), "junk.xnn"), Error);
    try {
      import_onnx_bytes(junk.data(), junk.size(), "junk.onnx", "/nonexistent");
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace xnn
