// Model bundles (engine/bundle/): the strict JSON reader, the manifest, the .xnnb container's
// checks (corrupt, truncated, tampered: a clear error or a fallback, never garbage outputs),
// policy matching and fallbacks (device classes, unavailable targets, failed model loads, wrong
// keys), update rules (downgrade, other bundle, changed signature, failed update keeps the old
// version), hot update under concurrent inference (no failed or mixed-version request), and the
// file watcher.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "engine/bundle/bundle_file.h"
#include "engine/bundle/bundle_runtime.h"
#include "engine/core/json.h"
#include "engine/core/sha256.h"
#include "engine/format/file_io.h"
#include "engine/format/xnn_format.h"
#include "engine/format/xnn_protect.h"
#include "engine/onnx/onnx_export.h"

namespace xnn {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("xnn_bundle_test_" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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

// y = x * scale + bias over x [1, 8] (input name and width configurable for signature tests).
// Distinct (scale, bias) pairs give distinct outputs, so an output tells which model made it.
Model affine_model(float scale, float bias, const std::string& input = "x", int64_t width = 8) {
  Model m;
  m.opset = 17;
  Graph& g = m.graph;
  Value x;
  x.name = input;
  x.dtype = DType::kF32;
  x.has_shape = true;
  x.shape = {Dim::fixed(1), Dim::fixed(width)};
  const int xi = g.add_value(x);
  const int s = g.add_constant("scale", Tensor::from_vector<float>(std::vector<float>(width, scale), {width}));
  const int b = g.add_constant("bias", Tensor::from_vector<float>(std::vector<float>(width, bias), {width}));
  Value mid = x;  // f32 [1, width]: ONNX export needs the output's shape
  mid.name = "scaled";
  const int mi = g.add_value(mid);
  Value y = mid;
  y.name = "y";
  const int yi = g.add_value(y);
  Node mul;
  mul.op_type = "Mul";
  mul.name = "mul";
  mul.inputs = {xi, s};
  mul.outputs = {mi};
  Node add;
  add.op_type = "Add";
  add.name = "add";
  add.inputs = {mi, b};
  add.outputs = {yi};
  g.nodes = {mul, add};
  g.inputs = {xi};
  g.outputs = {yi};
  return m;
}

Tensor test_input(int64_t width = 8) {
  std::vector<float> v;
  for (int64_t i = 0; i < width; ++i) v.push_back(static_cast<float>(i) - 3.0f);
  return Tensor::from_vector<float>(v, {1, width});
}

// What the model alone computes for test_input(): the reference a bundle run must equal.
std::vector<float> reference_output(const Model& model) {
  Session s(std::make_shared<Model>(model));
  const Tensor x = test_input(s.inputs()[0].shape[1].value);
  const Tensor y = s.run({{s.inputs()[0].name, x}})[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

BundleModelInput xnn_input(const std::string& id, const Model& m) { return {id, id + ".xnn", serialize_xnn(m)}; }

PolicyRule rule(const std::string& name, const std::string& model, DevicePredicate when = {},
                ThreadsSpec threads = {}, const std::string& target = "cpu") {
  PolicyRule r;
  r.name = name;
  r.model = model;
  r.when = std::move(when);
  r.threads = threads;
  r.target = target;
  return r;
}

BundleManifest manifest(const std::string& name, int64_t version, std::vector<PolicyRule> policy) {
  BundleManifest m;
  m.name = name;
  m.version = version;
  m.label = std::string("v").append(std::to_string(version));  // (GCC 12 -Wrestrict false positive on "v" + s)
  m.created_at = "2024-06-01T12:00:00Z";
  m.policy = std::move(policy);
  return m;
}

DeviceInfo device(bool avx2, bool avx512, int cores, int64_t memory_mib, const std::string& cls = "") {
  DeviceInfo d;
  d.avx2 = avx2;
  d.avx512 = avx512;
  d.logical_cores = cores;
  d.memory_mib = memory_mib;
  d.device_class = cls;
  return d;
}

BundleOptions options_for(const DeviceInfo& d, std::optional<ModelKey> key = std::nullopt) {
  BundleOptions o;
  o.device = d;
  o.key = std::move(key);
  o.sessions = 1;
  return o;
}

BundleRunResult run_once(const BundleRuntime& rt) {
  return rt.run({{rt.inputs()[0].name, test_input(rt.inputs()[0].shape[1].value)}});
}

// --- JSON ---------------------------------------------------------------------------------------

TEST(BundleJson, ParsesAndWritesBackTheSameDocument) {
  const std::string text =
      R"({"a": [1, -2, 3.5, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00", "o": {}, "big": 9007199254740993})";
  const json::Value v = json::parse(text, "doc");
  EXPECT_EQ(v.find("a")->items()[1].as_int(), -2);
  EXPECT_DOUBLE_EQ(v.find("a")->items()[2].as_double(), 3.5);
  EXPECT_EQ(v.find("s")->as_string(), "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.find("big")->as_int(), 9007199254740993LL);  // exact, not via double
  const json::Value again = json::parse(json::dump(v, 2), "doc");
  EXPECT_EQ(json::dump(again), json::dump(v));
  EXPECT_EQ(json::dump(json::Value::real(2.0)), "2.0");  // stays a double when read back
}

TEST(BundleJson, RefusesWhatRfc8259DoesNotAllow) {
  const std::map<std::string, std::string> bad = {
      {"{\"a\": 1,}", "expected a string key"},
      {"[1, 2,]", "unexpected character ']'"},
      {"{\"a\": 1} x", "unexpected bytes after the JSON value"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
      {"[01]", "leading zeros"},
      {"[NaN]", "unexpected character 'N'"},
      {"{\"a\": \"x", "unterminated string (truncated?)"},
      {"{\"a\": [1, 2", "truncated"},
      {"\"\x01\"", "control character"},
      {"\"\\ud800\"", "unpaired UTF-16 surrogate"},
      {"\"\xc3\x28\"", "invalid UTF-8"},
      {"[99999999999999999999]", "integer out of the 64-bit range"},
      {"[1e999]", "number out of range"},
      {"// c\n{}", "unexpected character '/'"},
      {"", "unexpected end of document"},
  };
  for (const auto& [text, message] : bad) {
    const std::string e = error_of([&] { json::parse(text, "doc.json"); });
    EXPECT_NE(e.find("doc.json: JSON error at byte"), std::string::npos) << text << " -> " << e;
    EXPECT_NE(e.find(message), std::string::npos) << text << " -> " << e;
  }
  EXPECT_NE(error_of([] { json::parse(std::string(100, '[') + std::string(100, ']'), "deep"); }).find("nesting deeper"),
            std::string::npos);
}

// --- manifest -------------------------------------------------------------------------------------

TEST(BundleManifestJson, RoundTripsAndRefusesBadManifests) {
  TempDir dir;
  BundleManifest m = manifest("app", 3, {rule("fast", "a", DevicePredicate{BundleIsa::kAvx2, 4, 1024, "flagship"},
                                              ThreadsSpec{ThreadsSpec::Kind::kHalf, 1}),
                                         rule("any", "b", {}, ThreadsSpec{ThreadsSpec::Kind::kCount, 3}, "npu")});
  const std::string path = dir.file("app.xnnb");
  write_bundle(path, m, {xnn_input("a", affine_model(2, 1)), xnn_input("b", affine_model(3, 0))});
  const BundleFile f = BundleFile::open(path);
  const BundleManifest& r = f.manifest();
  EXPECT_EQ(r.name, "app");
  EXPECT_EQ(r.version, 3);
  EXPECT_EQ(r.label, "v3");
  EXPECT_EQ(r.created_at, "2024-06-01T12:00:00Z");
  ASSERT_EQ(r.models.size(), 2u);
  EXPECT_EQ(r.models[1].id, "b");
  EXPECT_EQ(r.models[1].format, "xnn");
  EXPECT_FALSE(r.models[1].is_protected);
  EXPECT_EQ(r.models[1].offset % kBundleBlobAlignment, 0u);
  EXPECT_EQ(r.models[1].sha256, sha256_hex(serialize_xnn(affine_model(3, 0))));
  EXPECT_EQ(f.blob_problem(0), "");
  ASSERT_EQ(r.policy.size(), 2u);
  EXPECT_EQ(r.policy[0].when.isa, BundleIsa::kAvx2);
  EXPECT_EQ(r.policy[0].when.min_cores, 4);
  EXPECT_EQ(r.policy[0].when.min_memory_mib, 1024);
  EXPECT_EQ(r.policy[0].when.device_class, "flagship");
  EXPECT_EQ(r.policy[0].threads.str(), "half");
  EXPECT_EQ(r.policy[1].threads.str(), "3");
  EXPECT_EQ(r.policy[1].target, "npu");
  EXPECT_EQ(json::dump(manifest_to_json(r)), json::dump(json::parse(f.manifest_json(), "m")));

  // Invalid manifests, each a JSON edit of the valid one.
  const json::Value good = manifest_to_json(r);
  const auto edited = [&](const std::function<void(json::Value&)>& edit) {
    json::Value v = json::parse(json::dump(good), "m");
    edit(v);
    return error_of([&] { manifest_from_json(v, "app.xnnb"); });
  };
  const auto with = [&](const std::string& key, json::Value value) {
    return edited([&](json::Value& v) { v.set(key, std::move(value)); });
  };
  EXPECT_NE(with("version", json::Value::integer(0)).find("app.xnnb: manifest: version: expected an integer >= 1"),
            std::string::npos);
  EXPECT_NE(with("version", json::Value::string("3")).find("version: expected an integer, got a string"), std::string::npos);
  EXPECT_NE(with("format_version", json::Value::integer(2)).find("format_version: 2 is not supported"), std::string::npos);
  EXPECT_NE(with("extra", json::Value::integer(1)).find("extra: unknown key"), std::string::npos);
  EXPECT_NE(with("name", json::Value::string("")).find("name: expected a non-empty string"), std::string::npos);
  json::Value without_label = json::Value::object();
  for (const auto& [k, v] : good.members()) {
    if (k != "label") without_label.set(k, v);
  }
  EXPECT_NE(error_of([&] { manifest_from_json(without_label, "app.xnnb"); }).find("app.xnnb: manifest: missing required key 'label'"),
            std::string::npos);
  json::Value rules = *good.find("policy");
  json::Value bad_rule = rules.items()[0];
  bad_rule.set("threads", json::Value::string("many"));
  EXPECT_NE(with("policy", json::Value::array().push(bad_rule)).find("policy[0].threads: expected 1..1024, \"all\" or \"half\", got \"many\""),
            std::string::npos);
  bad_rule = rules.items()[0];
  bad_rule.set("model", json::Value::string("nope"));
  EXPECT_NE(with("policy", json::Value::array().push(bad_rule)).find("policy[0].model: unknown model id 'nope'"),
            std::string::npos);
  bad_rule = rules.items()[0];
  bad_rule.set("when", json::Value::object().set("isa", json::Value::string("sse9")));
  EXPECT_NE(with("policy", json::Value::array().push(bad_rule)).find("policy[0].when.isa: expected scalar, avx2, avx512 or neon"),
            std::string::npos);
  EXPECT_NE(with("policy", json::Value::array()).find("policy: a bundle needs at least one rule"), std::string::npos);
  json::Value models = *good.find("models");
  json::Value dup = json::Value::array().push(models.items()[0]).push(models.items()[0]);
  EXPECT_NE(with("models", dup).find("duplicate model id 'a'"), std::string::npos);
  json::Value bad_model = models.items()[0];
  bad_model.set("sha256", json::Value::string("abc"));
  EXPECT_NE(with("models", json::Value::array().push(bad_model).push(models.items()[1])).find("models[0].sha256: expected 64 lowercase hex"),
            std::string::npos);
}

// --- container checks ------------------------------------------------------------------------------

// A bundle whose first rule uses model "a" and whose second (fallback) uses model "b".
struct TwoModelBundle {
  std::string bytes;
  Model a = affine_model(2, 1), b = affine_model(-3, 0.5f);
  TwoModelBundle() {
    bytes = serialize_bundle(manifest("app", 1, {rule("first", "a"), rule("fallback", "b")}),
                             {xnn_input("a", a), xnn_input("b", b)});
  }
};

TEST(BundleFile, RefusesTruncatedEmptyAndAppendedFiles) {
  TempDir dir;
  const TwoModelBundle t;
  const std::string path = dir.file("b.xnnb");
  for (size_t len : {size_t{0}, size_t{3}, size_t{40}, size_t{64}, size_t{200}, t.bytes.size() / 2, t.bytes.size() - 1}) {
    write_bytes(path, t.bytes.substr(0, len));
    const std::string e = error_of([&] { BundleFile::open(path); });
    EXPECT_NE(e.find(path + ": "), std::string::npos) << len << ": " << e;
    const bool explained = e.find("truncated") != std::string::npos || e.find("file is empty") != std::string::npos ||
                           e.find("no XNNB magic") != std::string::npos || e.find("corrupt header") != std::string::npos;
    EXPECT_TRUE(explained) << len << ": " << e;
  }
  write_bytes(path, t.bytes + "x");
  EXPECT_NE(error_of([&] { BundleFile::open(path); }).find("unexpected bytes at the end"), std::string::npos);
  write_bytes(path, "XNNP" + t.bytes.substr(4));
  EXPECT_NE(error_of([&] { BundleFile::open(path); }).find("not a model bundle"), std::string::npos);
  EXPECT_NE(error_of([&] { BundleFile::open(dir.file("missing.xnnb")); }).find("cannot open"), std::string::npos);
}

TEST(BundleFile, ManifestCorruptionIsDetectedAndAHashConsistentBadManifestIsRefused) {
  TempDir dir;
  const TwoModelBundle t;
  const std::string path = dir.file("b.xnnb");
  std::string flipped = t.bytes;
  flipped[kBundleHeaderSize + 10] ^= 0x20;
  write_bytes(path, flipped);
  EXPECT_NE(error_of([&] { BundleFile::open(path); }).find("manifest is corrupt: its SHA-256 does not match"),
            std::string::npos);

  // A tool that rewrites the manifest AND its hash still meets the strict reader.
  const uint64_t manifest_size = file_io::get_le<uint64_t>(reinterpret_cast<const uint8_t*>(t.bytes.data()) + 8);
  std::string json_text = t.bytes.substr(kBundleHeaderSize, manifest_size);
  const size_t at = json_text.find("\"version\": 1");
  ASSERT_NE(at, std::string::npos);
  json_text.replace(at, 12, "\"version\": 0");
  std::string rehashed = t.bytes;
  rehashed.replace(kBundleHeaderSize, manifest_size, json_text);
  Sha256 h;
  h.update(json_text);
  const auto digest = h.digest();
  std::memcpy(rehashed.data() + 32, digest.data(), digest.size());
  write_bytes(path, rehashed);
  EXPECT_NE(error_of([&] { BundleFile::open(path); }).find(path + ": manifest: version: expected an integer >= 1"),
            std::string::npos);
}

// Flip one bit at each position of a small bundle: opening either fails with an xnn::Error, or
// falls back to a rule whose model is intact, and then the outputs are exactly that model's.
TEST(BundleFile, EveryFlippedByteGivesAnErrorOrACorrectFallbackNeverGarbage) {
  TempDir dir;
  const TwoModelBundle t;
  const std::map<std::string, std::vector<float>> reference = {{"a", reference_output(t.a)},
                                                               {"b", reference_output(t.b)}};
  const std::string path = dir.file("flip.xnnb");
  const DeviceInfo d = device(false, false, 1, 1024);
  int refused = 0, fell_back = 0, unused_model_hit = 0;
  const uint64_t blobs_offset = file_io::get_le<uint64_t>(reinterpret_cast<const uint8_t*>(t.bytes.data()) + 16);
  write_bytes(path, t.bytes);
  const BundleModel b_blob = BundleFile::open(path).manifest().models[1];
  const auto in_b = [&](size_t pos) {
    return pos >= blobs_offset + b_blob.offset && pos < blobs_offset + b_blob.offset + b_blob.size;
  };
  for (size_t pos = 0; pos < t.bytes.size(); pos += (pos < blobs_offset ? 1 : 5)) {
    std::string bytes = t.bytes;
    bytes[pos] = static_cast<char>(bytes[pos] ^ 0x10);
    write_bytes(path, bytes);
    try {
      const auto rt = BundleRuntime::open(path, options_for(d));
      const BundleRunResult r = run_once(*rt);
      EXPECT_EQ(values(r.outputs[0]), reference.at(r.produced_by->model_id)) << "byte " << pos;
      if (r.produced_by->model_id == "b") {
        ++fell_back;
        EXPECT_NE(r.produced_by->rules[0].reason.find("content hash mismatch"), std::string::npos)
            << r.produced_by->rules[0].reason;
      } else if (in_b(pos)) {
        ++unused_model_hit;  // the damaged model is the fallback, which was not needed
      } else {
        ADD_FAILURE() << "flipping byte " << pos << " went unnoticed";
      }
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(fell_back, 0);
  EXPECT_GT(unused_model_hit, 0);
}

// --- policy -----------------------------------------------------------------------------------------

TEST(BundlePolicy, FirstMatchingRuleWinsAndEarlierRulesSayWhy) {
  TempDir dir;
  const std::string path = dir.file("p.xnnb");
  write_bundle(path,
               manifest("app", 1,
                        {rule("avx512 big", "m512", DevicePredicate{BundleIsa::kAvx512, 0, 0, ""}),
                         rule("flagship", "mflag", DevicePredicate{std::nullopt, 0, 0, "flagship"}, {ThreadsSpec::Kind::kAll, 1}),
                         rule("avx2 8 cores", "m8", DevicePredicate{BundleIsa::kAvx2, 8, 4096, ""}, {ThreadsSpec::Kind::kHalf, 1}),
                         rule("anything", "mscalar", {}, {ThreadsSpec::Kind::kCount, 2})}),
               {xnn_input("m512", affine_model(5, 0)), xnn_input("mflag", affine_model(4, 0)),
                xnn_input("m8", affine_model(3, 0)), xnn_input("mscalar", affine_model(1, 0))});
  const auto pick = [&](const DeviceInfo& d) { return BundleRuntime::open(path, options_for(d))->active(); };

  auto s = pick(device(true, true, 16, 32768));
  EXPECT_EQ(s->model_id, "m512");
  EXPECT_EQ(s->rule_index, 0u);
  EXPECT_EQ(s->rules[1].status, RuleOutcome::Status::kNotTried);

  s = pick(device(true, false, 6, 8192, "flagship"));
  EXPECT_EQ(s->model_id, "mflag");
  EXPECT_EQ(s->threads, 6);  // "all"
  EXPECT_NE(s->rules[0].reason.find("needs isa avx512"), std::string::npos) << s->rules[0].reason;

  s = pick(device(true, false, 8, 8192));
  EXPECT_EQ(s->model_id, "m8");
  EXPECT_EQ(s->threads, 4);  // "half"
  EXPECT_NE(s->rules[1].reason.find("needs device class 'flagship', the host app gave none"), std::string::npos)
      << s->rules[1].reason;

  s = pick(device(true, false, 8, 2048));  // too little memory for rule 3
  EXPECT_EQ(s->model_id, "mscalar");
  EXPECT_EQ(s->threads, 2);
  EXPECT_NE(s->rules[2].reason.find("needs >= 4096 MiB of memory, this device has 2048"), std::string::npos)
      << s->rules[2].reason;
  s = pick(device(true, false, 4, 8192));
  EXPECT_NE(s->rules[2].reason.find("needs >= 8 logical cores, this device has 4"), std::string::npos);
  s = pick(device(false, false, 8, 8192, "budget"));
  EXPECT_EQ(s->model_id, "mscalar");
  EXPECT_NE(s->rules[1].reason.find("the host app gave 'budget'"), std::string::npos);
  EXPECT_NE(s->rules[2].reason.find("needs isa avx2"), std::string::npos);

  // The runtime serves the chosen variant's outputs.
  const auto rt = BundleRuntime::open(path, options_for(device(true, false, 6, 8192, "flagship")));
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(affine_model(4, 0)));
}

TEST(BundlePolicy, UnavailableTargetsAreSkipped) {
  TempDir dir;
  const std::string path = dir.file("t.xnnb");
  write_bundle(path,
               manifest("app", 1, {rule("gpu", "big", {}, {}, "gpu"), rule("npu", "big", {}, {}, "npu"), rule("cpu", "small")}),
               {xnn_input("big", affine_model(7, 0)), xnn_input("small", affine_model(2, 0))});
  const auto rt = BundleRuntime::open(path, options_for(device(true, false, 2, 4096)));
  const auto s = rt->active();
  EXPECT_EQ(s->model_id, "small");
  EXPECT_EQ(s->target, "cpu");
  EXPECT_EQ(s->rules[0].reason, "target 'gpu' is not available in this runtime (available: cpu)");
  EXPECT_EQ(s->rules[1].reason, "target 'npu' is not available in this runtime (available: cpu)");
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(affine_model(2, 0)));
}

TEST(BundlePolicy, ProtectedModelsNeedTheRightKeyElseTheNextRuleIsUsed) {
  TempDir dir;
  const ModelKey key = key_from_seed(1);
  const Model secret = affine_model(9, 2);
  const std::string path = dir.file("k.xnnb");
  write_bundle(path, manifest("app", 1, {rule("protected", "secret"), rule("public", "plain")}),
               {{"secret", "secret.xnn", protect_xnn_bytes(serialize_xnn(secret), key, ProtectMode::kWeights)},
                xnn_input("plain", affine_model(1, 0))});
  const BundleFile f = BundleFile::open(path);
  EXPECT_TRUE(f.manifest().models[0].is_protected);
  // The key is not in the bundle.
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find(std::string(reinterpret_cast<const char*>(key.data()), key.size())), std::string::npos);

  const DeviceInfo d = device(true, false, 2, 4096);
  auto rt = BundleRuntime::open(path, options_for(d, key));
  EXPECT_EQ(rt->active()->model_id, "secret");
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(secret));

  rt = BundleRuntime::open(path, options_for(d, key_from_seed(2)));
  EXPECT_EQ(rt->active()->model_id, "plain");
  EXPECT_NE(rt->active()->rules[0].reason.find("authentication failed: wrong key"), std::string::npos)
      << rt->active()->rules[0].reason;

  rt = BundleRuntime::open(path, options_for(d));
  EXPECT_EQ(rt->active()->model_id, "plain");
  EXPECT_NE(rt->active()->rules[0].reason.find("is protected: the bundle needs a key"), std::string::npos)
      << rt->active()->rules[0].reason;
}

TEST(BundlePolicy, OnnxModelsLoadAndNoUsableRuleIsAnErrorListingEveryReason) {
  TempDir dir;
  const std::string path = dir.file("o.xnnb");
  const Model onnx_model = affine_model(6, -1);
  write_bundle(path,
               manifest("app", 1, {rule("avx512 only", "m", DevicePredicate{BundleIsa::kAvx512, 0, 0, ""}),
                                   rule("gpu", "m", {}, {}, "gpu")}),
               {{"m", "m.onnx", export_onnx_bytes(onnx_model)}});
  EXPECT_EQ(BundleFile::open(path).manifest().models[0].format, "onnx");
  const std::string e = error_of([&] { BundleRuntime::open(path, options_for(device(true, false, 2, 4096))); });
  EXPECT_NE(e.find("no rule of bundle " + path + " can run on this device"), std::string::npos) << e;
  EXPECT_NE(e.find("rule 1 'avx512 only': device class does not match: needs isa avx512"), std::string::npos) << e;
  EXPECT_NE(e.find("rule 2 'gpu': target 'gpu' is not available"), std::string::npos) << e;

  const auto rt = BundleRuntime::open(path, options_for(device(true, true, 2, 4096)));
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(onnx_model));
}

// --- updates ----------------------------------------------------------------------------------------

std::string write_version(const TempDir& dir, const std::string& name, int64_t version, const Model& model,
                          const std::string& file = "") {
  const std::string path = dir.file(file.empty() ? name + "_v" + std::to_string(version) + ".xnnb" : file);
  write_bundle(path, manifest(name, version, {rule("only", "m")}), {xnn_input("m", model)});
  return path;
}

TEST(BundleUpdate, RefusesDowngradesOtherBundlesAndSignatureChangesKeepingTheOldVersion) {
  TempDir dir;
  const DeviceInfo d = device(true, false, 2, 4096);
  const auto rt = BundleRuntime::open(write_version(dir, "app", 2, affine_model(2, 0)), options_for(d));
  const auto expect_still_v2 = [&] {
    EXPECT_EQ(rt->active()->version, 2);
    const BundleRunResult r = run_once(*rt);
    EXPECT_EQ(r.produced_by->version, 2);
    EXPECT_EQ(values(r.outputs[0]), reference_output(affine_model(2, 0)));
  };
  const std::string v1 = write_version(dir, "app", 1, affine_model(1, 0));
  EXPECT_NE(error_of([&] { rt->update(v1); }).find(v1 + ": update refused: version 1 is not newer than the active version 2"),
            std::string::npos);
  expect_still_v2();
  const std::string same = write_version(dir, "app", 2, affine_model(5, 0), "same.xnnb");
  EXPECT_NE(error_of([&] { rt->update(same); }).find("version 2 is not newer"), std::string::npos);
  const std::string other = write_version(dir, "other", 9, affine_model(3, 0));
  EXPECT_NE(error_of([&] { rt->update(other); }).find("it is bundle 'other', the active bundle is 'app'"), std::string::npos);
  const std::string wider = write_version(dir, "app", 3, affine_model(3, 0, "x", 16), "wider.xnnb");
  EXPECT_NE(error_of([&] { rt->update(wider); }).find("input 'x' changes from f32[1,8] to f32[1,16]"), std::string::npos);
  const std::string renamed = write_version(dir, "app", 3, affine_model(3, 0, "image"), "renamed.xnnb");
  EXPECT_NE(error_of([&] { rt->update(renamed); }).find("input 0 is 'image', the active model's is 'x'"), std::string::npos);
  // A corrupt file and a bundle with no usable rule.
  write_bytes(dir.file("corrupt.xnnb"), "XNNB garbage");
  EXPECT_NE(error_of([&] { rt->update(dir.file("corrupt.xnnb")); }).find("truncated"), std::string::npos);
  const std::string gpu_only = dir.file("gpu.xnnb");
  write_bundle(gpu_only, manifest("app", 4, {rule("gpu", "m", {}, {}, "gpu")}), {xnn_input("m", affine_model(4, 0))});
  EXPECT_NE(error_of([&] { rt->update(gpu_only); }).find("update refused: no rule of bundle"), std::string::npos);
  expect_still_v2();

  // Explicit permissions.
  EXPECT_EQ(rt->update(v1, UpdateOptions{true, false})->version, 1);
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(affine_model(1, 0)));
  EXPECT_EQ(rt->update(wider, UpdateOptions{false, true})->version, 3);
  EXPECT_EQ(rt->inputs()[0].shape[1].value, 16);
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(affine_model(3, 0, "x", 16)));
}

// Several threads run inference continuously while the main thread updates v1 -> v2 -> ... and
// back with an explicit downgrade. Every request must succeed and its output must be exactly the
// output of the model of the version it reports (each version's model computes something else).
TEST(BundleUpdate, HotUpdatesUnderConcurrentInferenceNeverFailOrMixVersions) {
  TempDir dir;
  constexpr int kVersions = 8;
  std::map<int64_t, std::vector<float>> expected;
  std::vector<std::string> paths;
  for (int v = 1; v <= kVersions; ++v) {
    // Two variants per version; the rule picks "fast" on this (2-core, avx2) device.
    const Model fast = affine_model(static_cast<float>(v), static_cast<float>(v) * 0.5f);
    const Model fallback = affine_model(-100.0f, 0);
    const std::string path = dir.file(std::string("v").append(std::to_string(v)).append(".xnnb"));
    write_bundle(path,
                 manifest("app", v, {rule("fast", "fast", DevicePredicate{BundleIsa::kAvx2, 0, 0, ""}), rule("any", "slow")}),
                 {xnn_input("fast", fast), xnn_input("slow", fallback)});
    paths.push_back(path);
    expected[v] = reference_output(fast);
  }
  BundleOptions options = options_for(device(true, false, 2, 4096));
  options.sessions = 2;  // two requests run truly at once; the others wait for a session
  const auto rt = BundleRuntime::open(paths[0], options);

  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> requests{0}, failures{0}, wrong{0};
  std::vector<std::map<int64_t, int64_t>> seen(kThreads);  // per thread: version -> requests
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      const Tensor x = test_input();
      while (!stop.load()) {
        try {
          const BundleRunResult r = rt->run({{"x", x}});
          const int64_t v = r.produced_by->version;
          if (r.produced_by->model_id != "fast" || values(r.outputs[0]) != expected.at(v)) ++wrong;
          ++seen[t][v];
        } catch (const std::exception&) {
          ++failures;
        }
        ++requests;
      }
    });
  }
  // Waits (without a time limit on the assertion) until the workers served some requests on
  // the active version, so every version really overlaps running requests.
  const auto let_requests_run = [&] {
    const int64_t start = requests.load();
    while (requests.load() < start + 200) std::this_thread::yield();
  };
  std::vector<int64_t> order;
  for (int round = 0; round < 6; ++round) {
    for (int v = 2; v <= kVersions; ++v) {
      let_requests_run();
      const UpdateOptions allow_downgrade{round > 0 && v == 2, false};
      EXPECT_EQ(rt->update(paths[v - 1], allow_downgrade)->version, v);
      order.push_back(v);
    }
  }
  let_requests_run();
  stop = true;
  for (auto& w : workers) w.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  std::map<int64_t, int64_t> total;
  for (const auto& per_thread : seen) {
    for (const auto& [v, n] : per_thread) total[v] += n;
  }
  EXPECT_EQ(total.size(), static_cast<size_t>(kVersions)) << "every version served requests";
  EXPECT_EQ(rt->active()->version, kVersions);
}

TEST(BundleUpdate, RequestsInFlightFinishOnTheVersionTheyStartedWith) {
  TempDir dir;
  const DeviceInfo d = device(true, false, 2, 4096);
  const auto rt = BundleRuntime::open(write_version(dir, "app", 1, affine_model(1, 0)), options_for(d));
  const auto old_status = rt->active();
  rt->update(write_version(dir, "app", 2, affine_model(2, 0)));
  // The snapshot taken before the update still describes version 1 (immutable), and new
  // requests see version 2.
  EXPECT_EQ(old_status->version, 1);
  EXPECT_EQ(run_once(*rt).produced_by->version, 2);
}

TEST(BundleUpdate, WatcherAppliesNewerFilesAndRecordsRefusals) {
  TempDir dir;
  const DeviceInfo d = device(true, false, 2, 4096);
  const std::string live = dir.file("live.xnnb");
  write_version(dir, "app", 1, affine_model(1, 0), "live.xnnb");
  const auto rt = BundleRuntime::open(live, options_for(d));
  rt->watch(live, std::chrono::milliseconds(5));
  const auto wait_until = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 4000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return done();
  };
  ASSERT_TRUE(wait_until([&] { return rt->watch_status().polls >= 2; }));
  EXPECT_EQ(rt->watch_status().updates_applied, 0);  // the file it was opened from is not re-applied

  write_version(dir, "app", 2, affine_model(2, 0), "live.xnnb");  // atomic replace
  ASSERT_TRUE(wait_until([&] { return rt->active()->version == 2; }));
  EXPECT_EQ(values(run_once(*rt).outputs[0]), reference_output(affine_model(2, 0)));
  EXPECT_EQ(rt->watch_status().updates_applied, 1);

  write_version(dir, "app", 1, affine_model(1, 0), "live.xnnb");  // an older one appears
  ASSERT_TRUE(wait_until([&] { return rt->watch_status().updates_refused == 1; }));
  EXPECT_NE(rt->watch_status().last_error.find("not newer than the active version 2"), std::string::npos)
      << rt->watch_status().last_error;
  EXPECT_EQ(rt->active()->version, 2);
  rt->stop_watching();
  EXPECT_FALSE(rt->watch_status().watching);
}

}  // namespace
}  // namespace xnn
