// Helpers for the simulator tests: small graphs built by value name, and device profiles written
// from YAML text into a temporary folder (so the tests exercise the real loader).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/graph.h"
#include "harness/sim/device_profile.h"

namespace xnn::sim::testing {

using Attrs = std::map<std::string, Attribute>;

class GraphBuilder {
 public:
  GraphBuilder& input(const std::string& name, Shape shape) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    v.has_shape = true;
    for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
    g.inputs.push_back(g.add_value(std::move(v)));
    return *this;
  }
  GraphBuilder& random(const std::string& name, Shape shape) {
    Tensor t(DType::kF32, std::move(shape));
    std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng_);
    g.add_constant(name, std::move(t));
    return *this;
  }
  GraphBuilder& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                     const std::string& output, Attrs attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.attrs = std::move(attrs);
    for (const std::string& i : inputs) n.inputs.push_back(value(i));
    int v = g.find_value(output);
    if (v < 0) {
      Value val;
      val.name = output;
      v = g.add_value(std::move(val));
    }
    n.outputs.push_back(v);
    g.nodes.push_back(std::move(n));
    return *this;
  }
  // Conv with `k`x`k` kernel, same padding, weights name_w [cout, cin/group, k, k] and bias.
  GraphBuilder& conv(const std::string& name, const std::string& x, const std::string& y, int64_t cin, int64_t cout,
                     int64_t k, int64_t stride = 1, int64_t group = 1) {
    random(name + "_w", {cout, cin / group, k, k});
    random(name + "_b", {cout});
    const int64_t p = k / 2;
    return node("Conv", name, {x, name + "_w", name + "_b"}, y,
                {{"kernel_shape", std::vector<int64_t>{k, k}}, {"strides", std::vector<int64_t>{stride, stride}},
                 {"pads", std::vector<int64_t>{p, p, p, p}}, {"group", group}});
  }
  GraphBuilder& output(const std::string& name) {
    g.outputs.push_back(value(name));
    return *this;
  }
  int value(const std::string& name) const {
    const int v = g.find_value(name);
    if (v < 0) throw Error("test graph has no value '" + name + "'");
    return v;
  }
  Graph build() {
    g.validate("test graph");
    return g;
  }

  Graph g;

 private:
  std::mt19937 rng_{11};
};

// A temporary folder removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("xnn_sim_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

// Efficiency and other boilerplate shared by test profiles; `extra` holds the fields under test.
inline std::string profile_yaml(const std::string& name, const std::string& kind, const std::string& extra) {
  return "name: " + name + "\nkind: " + kind +
         "\ncores: 4\nfrequency_ghz: 1.0\nsimd_width_bits: 128\n"
         "memory_efficiency: {max: 1.0, half_kib: 0}\n"
         "efficiency:\n"
         "  conv: {max: 0.5, half_mflop: 1}\n"
         "  depthwise: {max: 0.25, half_mflop: 1}\n"
         "  gemm: {max: 0.5, half_mflop: 1}\n"
         "  pool: {max: 0.5, half_mflop: 1}\n"
         "  elementwise: {max: 0.5, half_mflop: 1}\n"
         "  other: {max: 0.5, half_mflop: 1}\n" +
         extra;
}

// A 4-core CPU: 100 GFLOP/s fp32, 10 GB/s, 1 us dispatch, no fusion unless `extra` adds one.
inline std::string test_cpu_yaml(const std::string& extra = "") {
  return profile_yaml("test_cpu", "cpu",
                      "peak: {fp32_gflops: 100, fp16_gflops: 200, int8_gops: 400}\n"
                      "memory_bandwidth_gbps: 10\ndispatch_us: 1\nnumerics: fp32\n"
                      "dtypes: [fp32, fp16, int8, int32, int64, bool]\nops: all\n" +
                      extra);
}

// An NPU running Conv (kernel <= 7, channels multiple of 8) and Relu, fusing Conv + Relu.
inline std::string test_npu_yaml(const std::string& numerics = "fp32", const std::string& dtypes = "[fp32]",
                                 const std::string& extra = "") {
  return profile_yaml("test_npu", "npu",
                      "host: test_cpu\n"
                      "peak: {fp32_gflops: 1000, fp16_gflops: 2000, int8_gops: 4000}\n"
                      "memory_bandwidth_gbps: 20\ndispatch_us: 10\n"
                      "transfer: {bandwidth_gbps: 1, latency_us: 100}\n"
                      "numerics: " + numerics + "\ndtypes: " + dtypes + "\n" +
                      "ops:\n  Conv: {max_kernel: 7, channel_multiple: 8}\n  Relu: {}\n"
                      "fusion: [Conv + Relu]\n" + extra);
}

// The message of the xnn::Error `fn` throws ("" if it does not throw).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline DeviceProfile load_text(const TempDir& dir, const std::string& name, const std::string& yaml) {
  return load_device_profile(dir.file(name + ".yaml", yaml));
}

}  // namespace xnn::sim::testing
