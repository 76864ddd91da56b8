// Device profiles: the shipped ones load and are consistent; bad files give errors naming the
// file, line, column and key; the writer round-trips; lookup honours XNN_DEVICES_DIR.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "harness/sim/device_profile.h"
#include "sim_test_util.h"

namespace xnn::sim {
namespace {

using testing::contains;
using testing::error_of;
using testing::load_text;
using testing::TempDir;

TEST(DeviceProfiles, AllShippedProfilesLoadWithHostsAndSources) {
  const std::vector<DeviceProfile> all = list_device_profiles();
  ASSERT_GE(all.size(), 7u);
  std::set<std::string> kinds;
  for (const DeviceProfile& d : all) {
    SCOPED_TRACE(d.name);
    kinds.insert(d.kind);
    EXPECT_FALSE(d.description.empty());
    EXPECT_GT(d.peak_gflops(d.numerics), 0);
    EXPECT_EQ(d.efficiency.size(), all_op_classes().size());
    if (!d.is_cpu()) {
      const DeviceProfile host = find_device_profile(d.host);
      EXPECT_TRUE(host.is_cpu()) << d.host;
      EXPECT_FALSE(d.all_ops);
      EXPECT_GT(d.transfer_bandwidth_gbps, 0);
    }
  }
  EXPECT_TRUE(kinds.count("cpu") && kinds.count("gpu") && kinds.count("npu"));
  // The profiles the issue asks for by role.
  for (const char* name : {"cortex_a78_big", "cortex_a55_little", "adreno_660_gpu", "hexagon_780_npu",
                           "ethos_u55_npu", "apple_a14_ane", "x86_xeon_host"}) {
    EXPECT_NO_THROW(find_device_profile(name)) << name;
  }
  EXPECT_EQ(find_device_profile("hexagon_780_npu").dtypes, std::vector<std::string>{"int8"});
  EXPECT_EQ(find_device_profile("apple_a14_ane").numerics, "fp16");
  EXPECT_EQ(find_device_profile("adreno_660_gpu").numerics, "fp16");
}

// A figure line is "key: NUMBER" or "key: {...}" with digits.
bool is_figure_line(const std::string& line) {
  if (line.empty() || line[0] == '#') return false;
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return false;
  std::string value = line.substr(colon + 1);
  value = value.substr(0, value.find('#'));
  value.erase(0, value.find_first_not_of(' '));
  value.erase(value.find_last_not_of(' ') + 1);
  if (value.empty()) return false;
  if (value[0] == '{') return value.find_first_of("0123456789") != std::string::npos;
  char* end = nullptr;
  std::strtod(value.c_str(), &end);
  return *end == '\0';
}

TEST(DeviceProfiles, EveryFigureInTheShippedFilesCitesASourceOrAnAssumption) {
  // Each figure has a comment on its line or right above it, or sits in a top-level block
  // (efficiency:, ops:, ...) whose header line carries a comment or follows one.
  for (const DeviceProfile& d : list_device_profiles()) {
    std::ifstream in(d.source_path);
    std::string line, prev_top, prev;
    bool block_explained = false;
    std::vector<std::string> bare;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] != ' ' && line[0] != '#') {
        block_explained = line.find('#') != std::string::npos || prev_top.rfind('#', 0) == 0;
      }
      const bool comment_above = prev.find_first_not_of(' ') != std::string::npos && prev[prev.find_first_not_of(' ')] == '#';
      if (is_figure_line(line) && line.find('#') == std::string::npos && !comment_above &&
          !(line[0] == ' ' && block_explained)) {
        bare.push_back(line);
      }
      if (!line.empty() && line[0] != ' ') prev_top = line;
      if (!line.empty()) prev = line;
    }
    EXPECT_TRUE(bare.empty()) << d.source_path << ": figures without a source or assumption, e.g. '" << (bare.empty() ? std::string() : bare[0]) << "'";
  }
}

TEST(DeviceProfiles, EfficiencyCurveIsMonotoneAndSaturates) {
  const EfficiencyCurve c{0.8, 1e6};
  EXPECT_DOUBLE_EQ(c.at(1e6), 0.4);  // half-work point
  double last = 0;
  for (double w = 1; w < 1e13; w *= 3) {
    const double e = c.at(w);
    EXPECT_GT(e, last);
    EXPECT_LE(e, 0.8);
    last = e;
  }
  EXPECT_NEAR(c.at(1e13), 0.8, 1e-6);
  EXPECT_DOUBLE_EQ((EfficiencyCurve{0.5, 0}.at(10)), 0.5);
}

TEST(DeviceProfiles, MissingKeyNamesFileLineAndKey) {
  TempDir dir;
  const std::string yaml = testing::test_cpu_yaml();
  std::string no_peak = yaml;
  no_peak.erase(no_peak.find("peak:"), no_peak.find('\n', no_peak.find("peak:")) + 1 - no_peak.find("peak:"));
  const std::string path = dir.file("p.yaml", no_peak);
  const std::string msg = error_of([&] { load_device_profile(path); });
  EXPECT_TRUE(contains(msg, path + ":1:1: key 'peak': missing")) << msg;
}

TEST(DeviceProfiles, WrongTypeNamesLineColumnKeyAndExpectation) {
  TempDir dir;
  std::string yaml = testing::test_cpu_yaml();
  yaml.replace(yaml.find("cores: 4"), 8, "cores: many");
  const std::string path = dir.file("p.yaml", yaml);
  const std::string msg = error_of([&] { load_device_profile(path); });
  EXPECT_TRUE(contains(msg, path + ":3:8: key 'cores': expected an integer >= 1, got 'many'")) << msg;

  std::string bad_peak = testing::test_cpu_yaml();
  bad_peak.replace(bad_peak.find("fp32_gflops: 100"), 16, "fp32_gflops: fast");
  const std::string msg2 = error_of([&] { load_device_profile(dir.file("q.yaml", bad_peak)); });
  EXPECT_TRUE(contains(msg2, "key 'peak.fp32_gflops': expected a number >= 0, got 'fast'")) << msg2;

  std::string bad_eff = testing::test_cpu_yaml();
  bad_eff.replace(bad_eff.find("conv: {max: 0.5"), 15, "conv: {max: 1.5");
  const std::string msg3 = error_of([&] { load_device_profile(dir.file("r.yaml", bad_eff)); });
  EXPECT_TRUE(contains(msg3, "key 'efficiency.conv.max': expected a fraction of peak in (0, 1], got 1.5")) << msg3;
}

TEST(DeviceProfiles, UnknownKeysAndOpsSuggestTheClosestName) {
  TempDir dir;
  std::string yaml = testing::test_cpu_yaml();
  yaml.replace(yaml.find("memory_bandwidth_gbps"), 21, "memory_bandwith_gbps");
  std::string msg = error_of([&] { load_device_profile(dir.file("a.yaml", yaml)); });
  EXPECT_TRUE(contains(msg, "key 'memory_bandwith_gbps': unknown key (did you mean 'memory_bandwidth_gbps'?)")) << msg;

  std::string ops = testing::test_npu_yaml();
  ops.replace(ops.find("  Relu: {}"), 10, "  Rleu: {}");
  msg = error_of([&] { load_device_profile(dir.file("b.yaml", ops)); });
  EXPECT_TRUE(contains(msg, "key 'ops.Rleu': unknown ONNX op type 'Rleu' (did you mean 'Relu'?)")) << msg;

  std::string fusion = testing::test_npu_yaml();
  fusion.replace(fusion.find("Conv + Relu]"), 12, "Conv + Rlu]");
  msg = error_of([&] { load_device_profile(dir.file("c.yaml", fusion)); });
  EXPECT_TRUE(contains(msg, "key 'fusion': unknown ONNX op type 'Rlu'")) << msg;

  std::string constraint = testing::test_npu_yaml();
  constraint.replace(constraint.find("max_kernel"), 10, "max_kernal");
  msg = error_of([&] { load_device_profile(dir.file("d.yaml", constraint)); });
  EXPECT_TRUE(contains(msg, "key 'ops.Conv.max_kernal': unknown key (did you mean 'max_kernel'?)")) << msg;
}

TEST(DeviceProfiles, AcceleratorsNeedHostTransferAndOps) {
  TempDir dir;
  std::string yaml = testing::test_npu_yaml();
  yaml.erase(yaml.find("host: test_cpu\n"), 15);
  std::string msg = error_of([&] { load_device_profile(dir.file("a.yaml", yaml)); });
  EXPECT_TRUE(contains(msg, "key 'host': missing")) << msg;

  // A CPU profile cannot claim a host.
  msg = error_of([&] { load_device_profile(dir.file("b.yaml", testing::test_cpu_yaml("host: x\n"))); });
  EXPECT_TRUE(contains(msg, "key 'host': only accelerators")) << msg;

  // An int8-only device needs an int8 peak.
  std::string npu = testing::test_npu_yaml("int8", "[int8]");
  npu.replace(npu.find("int8_gops: 4000"), 15, "int8_gops: 0");
  msg = error_of([&] { load_device_profile(dir.file("c.yaml", npu)); });
  EXPECT_TRUE(contains(msg, "key 'numerics': the device computes in int8 but peak.int8_gops is 0")) << msg;
}

TEST(DeviceProfiles, ParsesConstraintsAndFusionPatterns) {
  TempDir dir;
  const DeviceProfile d = load_text(dir, "test_npu",
                                    testing::test_npu_yaml("fp16", "[fp32, fp16]",
                                                           "on_unsupported: error\n"));
  EXPECT_EQ(d.kind, "npu");
  EXPECT_EQ(d.host, "test_cpu");
  EXPECT_EQ(d.on_unsupported, OnUnsupported::kError);
  ASSERT_TRUE(d.ops.count("Conv"));
  EXPECT_EQ(d.ops.at("Conv").max_kernel, 7);
  EXPECT_EQ(d.ops.at("Conv").channel_multiple, 8);
  ASSERT_EQ(d.fusion.size(), 1u);
  EXPECT_EQ(d.fusion[0].steps, (std::vector<std::vector<std::string>>{{"Conv"}, {"Relu"}}));
  EXPECT_DOUBLE_EQ(d.curve(OpClass::kConv).half, 1e6);       // half_mflop: 1
  EXPECT_DOUBLE_EQ(d.transfer_latency_us, 100);
  EXPECT_DOUBLE_EQ(d.peak_gflops("fp16"), 2000);
}

TEST(DeviceProfiles, WriterRoundTrips) {
  TempDir dir;
  for (const DeviceProfile& d : list_device_profiles()) {
    SCOPED_TRACE(d.name);
    const std::string path = dir.path() + "/" + d.name + ".yaml";
    write_device_profile(d, path, "refitted copy of " + d.name + "\nfor the round-trip test");
    const DeviceProfile back = load_device_profile(path);
    EXPECT_EQ(back.name, d.name);
    EXPECT_EQ(back.kind, d.kind);
    EXPECT_EQ(back.host, d.host);
    EXPECT_EQ(back.cores, d.cores);
    EXPECT_DOUBLE_EQ(back.peak_fp32_gflops, d.peak_fp32_gflops);
    EXPECT_DOUBLE_EQ(back.memory_bandwidth_gbps, d.memory_bandwidth_gbps);
    EXPECT_NEAR(back.memory_efficiency.half, d.memory_efficiency.half, 1e-6 * d.memory_efficiency.half);
    EXPECT_EQ(back.dtypes, d.dtypes);
    EXPECT_EQ(back.all_ops, d.all_ops);
    EXPECT_EQ(back.ops.size(), d.ops.size());
    for (const auto& [op, c] : d.ops) {
      EXPECT_EQ(back.ops.at(op).max_kernel, c.max_kernel);
      EXPECT_EQ(back.ops.at(op).strides, c.strides);
      EXPECT_EQ(back.ops.at(op).max_dim, c.max_dim);
    }
    for (OpClass c : all_op_classes()) {
      EXPECT_NEAR(back.curve(c).max, d.curve(c).max, 1e-9);
      EXPECT_NEAR(back.curve(c).half, d.curve(c).half, 1e-6 * d.curve(c).half + 1e-9);
    }
    ASSERT_EQ(back.fusion.size(), d.fusion.size());
    for (size_t i = 0; i < d.fusion.size(); ++i) EXPECT_EQ(back.fusion[i].steps, d.fusion[i].steps);
    EXPECT_EQ(back.caches_kib, d.caches_kib);
  }
}

TEST(DeviceProfiles, LookupUsesXnnDevicesDirFirstAndListsKnownNames) {
  TempDir dir;
  std::string yaml = testing::test_cpu_yaml();
  yaml.replace(yaml.find("name: test_cpu"), 14, "name: cortex_a78_big");
  dir.file("cortex_a78_big.yaml", yaml);
  ::setenv("XNN_DEVICES_DIR", dir.path().c_str(), 1);
  const DeviceProfile overridden = find_device_profile("cortex_a78_big");
  const std::string msg = error_of([] { find_device_profile("cortex_a78_bgi"); });
  const std::vector<std::string> names = device_profile_names();
  ::unsetenv("XNN_DEVICES_DIR");
  EXPECT_EQ(overridden.cores, 4);  // the test file, not the shipped 3-core profile
  EXPECT_EQ(find_device_profile("cortex_a78_big").cores, 3);
  EXPECT_TRUE(contains(msg, "unknown device profile 'cortex_a78_bgi' (did you mean 'cortex_a78_big'?)")) << msg;
  EXPECT_TRUE(contains(msg, "adreno_660_gpu")) << msg;
  EXPECT_TRUE(std::find(names.begin(), names.end(), "hexagon_780_npu") != names.end());

  // A file whose name differs from the profile's name is refused by name lookup.
  TempDir other;
  other.file("renamed.yaml", testing::test_cpu_yaml());
  ::setenv("XNN_DEVICES_DIR", other.path().c_str(), 1);
  const std::string msg2 = error_of([] { find_device_profile("renamed"); });
  ::unsetenv("XNN_DEVICES_DIR");
  EXPECT_TRUE(contains(msg2, "the profile is named 'test_cpu' but its file is renamed.yaml")) << msg2;
}

TEST(DeviceProfiles, MissingFileAndBadYamlAreErrors) {
  EXPECT_TRUE(contains(error_of([] { load_device_profile("/nonexistent/x.yaml"); }), "/nonexistent/x.yaml: cannot read"));
  TempDir dir;
  const std::string path = dir.file("bad.yaml", "name: [unclosed\n");
  const std::string msg = error_of([&] { load_device_profile(path); });
  EXPECT_TRUE(contains(msg, path + ":") && contains(msg, "invalid YAML")) << msg;
}

}  // namespace
}  // namespace xnn::sim
