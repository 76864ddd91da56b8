// Device profiles: strict YAML loading (every number has a unit in its key name; unknown keys,
// wrong types and missing keys are errors naming FILE:LINE:COL and the key), lookup by name in
// the profile folders, and a writer for refitted profiles.
#include "harness/sim/device_profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/core/error.h"
#include "engine/core/op_registry.h"
#include "harness/config/experiment_config.h"
#include "harness/util/json.h"

#ifndef XNN_DEVICES_DIR_DEFAULT
#define XNN_DEVICES_DIR_DEFAULT ""
#endif

namespace xnn::sim {
namespace fs = std::filesystem;

const std::vector<OpClass>& all_op_classes() {
  static const std::vector<OpClass> all{OpClass::kConv, OpClass::kDepthwise, OpClass::kGemm,
                                        OpClass::kPool, OpClass::kElementwise, OpClass::kOther};
  return all;
}

std::string op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kConv: return "conv";
    case OpClass::kDepthwise: return "depthwise";
    case OpClass::kGemm: return "gemm";
    case OpClass::kPool: return "pool";
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kOther: return "other";
  }
  return "other";
}

double EfficiencyCurve::at(double work) const {
  if (work <= 0) return half > 0 ? 0.0 : max;
  return max * work / (work + half);
}

bool DeviceProfile::accepts_dtype(const std::string& dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

double DeviceProfile::peak_gflops(const std::string& dtype) const {
  if (dtype == "fp16") return peak_fp16_gflops;
  if (dtype == "int8") return peak_int8_gops;
  return peak_fp32_gflops;
}

const EfficiencyCurve& DeviceProfile::curve(OpClass c) const {
  auto it = efficiency.find(c);
  if (it == efficiency.end()) throw Error("device profile '" + name + "' has no efficiency curve for " + op_class_name(c));
  return it->second;
}

namespace {

const std::vector<std::string> kKinds{"cpu", "mcu", "gpu", "npu", "dsp"};
const std::vector<std::string> kNumerics{"fp32", "fp16", "int8"};
const std::vector<std::string> kDtypes{"fp32", "fp16", "int8", "int32", "int64", "bool"};
const std::vector<std::string> kTopKeys{"name", "kind", "description", "host", "cores", "frequency_ghz",
                                        "simd_width_bits", "peak", "caches", "memory_bandwidth_gbps",
                                        "memory_efficiency", "dispatch_us", "transfer", "numerics", "dtypes",
                                        "ops", "on_unsupported", "efficiency", "fusion"};
const std::vector<std::string> kConstraintKeys{"max_kernel", "strides", "dilations", "channel_multiple",
                                               "max_channels", "max_rank", "max_dim", "max_elements", "max_batch"};

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = config::did_you_mean(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "an empty value";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "'" + n.Scalar() + "'";
}

// Op types a profile may name: the default ONNX domain and com.microsoft (fusion patterns and op lists name them).
const std::vector<std::string>& engine_op_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out;
    // ONNX ops, plus the com.microsoft QOperator forms the quantiser emits (QGemm, QLinearAdd...):
    // op support matches a node by its type alone.
    const std::string contrib = "com.microsoft.";
    for (const std::string& t : OpRegistry::builtin().op_types()) {
      if (t.find('.') == std::string::npos) out.push_back(t);
      else if (t.rfind(contrib, 0) == 0) out.push_back(t.substr(contrib.size()));
    }
    return out;
  }();
  return types;
}

class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& msg) const {
    std::string where = file_;
    const YAML::Mark m = at.Mark();
    if (!m.is_null()) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    throw Error(where + ": " + (key.empty() ? "" : "key '" + key + "': ") + msg);
  }

  void check_map(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    if (!n.IsMap()) fail(n, key, "expected a map, got " + describe(n));
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        const std::string full = key.empty() ? k : key + "." + k;
        fail(kv.first, full, "unknown key" + suggestion(k, allowed) + "; expected one of " + join(allowed));
      }
    }
  }

  YAML::Node required(const YAML::Node& map, const std::string& k, const std::string& key_path,
                      const std::string& expected) const {
    const YAML::Node n = map[k];
    if (!n) fail(map, key_path, "missing; expected " + expected);
    return n;
  }

  double number(const YAML::Node& n, const std::string& key, double min, bool min_exclusive = false) const {
    const std::string expected = std::string("a number ") + (min_exclusive ? "> " : ">= ") + fmt(min);
    if (!n.IsScalar()) fail(n, key, "expected " + expected + ", got " + describe(n));
    const std::string& s = n.Scalar();
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v)) fail(n, key, "expected " + expected + ", got '" + s + "'");
    if (v < min || (min_exclusive && v == min)) fail(n, key, "expected " + expected + ", got " + s);
    return v;
  }

  int64_t integer(const YAML::Node& n, const std::string& key, int64_t min) const {
    const std::string expected = "an integer >= " + std::to_string(min);
    if (!n.IsScalar()) fail(n, key, "expected " + expected + ", got " + describe(n));
    const std::string& s = n.Scalar();
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || v < min) fail(n, key, "expected " + expected + ", got '" + s + "'");
    return v;
  }

  std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar() || n.Scalar().empty()) fail(n, key, "expected a non-empty string, got " + describe(n));
    return n.Scalar();
  }

  std::string choice(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    const std::string v = text(n, key);
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      fail(n, key, "expected one of " + join(allowed) + ", got '" + v + "'" + suggestion(v, allowed));
    }
    return v;
  }

  std::vector<int64_t> integers(const YAML::Node& n, const std::string& key, int64_t min) const {
    if (!n.IsSequence()) fail(n, key, "expected a list of integers, got " + describe(n));
    std::vector<int64_t> out;
    for (const auto& e : n) out.push_back(integer(e, key, min));
    return out;
  }

  EfficiencyCurve curve(const YAML::Node& n, const std::string& key, const std::string& half_key, double half_unit) const {
    check_map(n, key, {"max", half_key});
    EfficiencyCurve c;
    c.max = number(required(n, "max", key + ".max", "a fraction of peak in (0, 1]"), key + ".max", 0.0, true);
    if (c.max > 1.0) fail(n["max"], key + ".max", "expected a fraction of peak in (0, 1], got " + n["max"].Scalar());
    c.half = number(required(n, half_key, key + "." + half_key, "a number >= 0"), key + "." + half_key, 0.0) * half_unit;
    return c;
  }

  OpConstraint constraint(const YAML::Node& n, const std::string& key) const {
    OpConstraint c;
    if (!n || n.IsNull()) return c;
    check_map(n, key, kConstraintKeys);
    auto opt_int = [&](const char* k, int64_t& out, int64_t min) {
      if (n[k]) out = integer(n[k], key + "." + k, min);
    };
    opt_int("max_kernel", c.max_kernel, 1);
    opt_int("channel_multiple", c.channel_multiple, 1);
    opt_int("max_channels", c.max_channels, 1);
    opt_int("max_rank", c.max_rank, 1);
    opt_int("max_dim", c.max_dim, 1);
    opt_int("max_elements", c.max_elements, 1);
    opt_int("max_batch", c.max_batch, 1);
    if (n["strides"]) c.strides = integers(n["strides"], key + ".strides", 1);
    if (n["dilations"]) c.dilations = integers(n["dilations"], key + ".dilations", 1);
    return c;
  }

  std::string op_type(const YAML::Node& at, const std::string& key, const std::string& t) const {
    const auto& known = engine_op_types();
    if (std::find(known.begin(), known.end(), t) == known.end()) {
      fail(at, key, "unknown ONNX op type '" + t + "'" + suggestion(t, known));
    }
    return t;
  }

  // "Conv|ConvTranspose + Add + Relu|Clip"
  FusionPattern pattern(const YAML::Node& n, const std::string& key) const {
    FusionPattern p;
    p.text = text(n, key);
    std::string rest = p.text;
    size_t pos = 0;
    while (true) {
      const size_t plus = rest.find('+', pos);
      std::string step = rest.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
      std::vector<std::string> alts;
      size_t a = 0;
      while (true) {
        const size_t bar = step.find('|', a);
        std::string alt = step.substr(a, bar == std::string::npos ? std::string::npos : bar - a);
        alt.erase(0, alt.find_first_not_of(" \t"));
        alt.erase(alt.find_last_not_of(" \t") + 1);
        if (alt.empty()) fail(n, key, "empty op type in fusion pattern '" + p.text + "' (expected e.g. 'Conv + Relu|Clip')");
        alts.push_back(op_type(n, key, alt));
        if (bar == std::string::npos) break;
        a = bar + 1;
      }
      p.steps.push_back(std::move(alts));
      if (plus == std::string::npos) break;
      pos = plus + 1;
    }
    if (p.steps.size() < 2) fail(n, key, "a fusion pattern needs at least two steps joined by '+', got '" + p.text + "'");
    return p;
  }

  static std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", v);
    return buf;
  }

 private:
  std::string file_;
};

DeviceProfile parse_profile(const YAML::Node& root, const std::string& file) {
  Parser p(file);
  if (!root.IsMap()) p.fail(root, "", "a device profile must be a YAML map of keys (see configs/devices/README.md)");
  p.check_map(root, "", kTopKeys);
  DeviceProfile d;
  d.source_path = file;
  d.name = p.text(p.required(root, "name", "name", "the profile's name"), "name");
  d.kind = p.choice(p.required(root, "kind", "kind", "one of " + join(kKinds)), "kind", kKinds);
  if (root["description"]) d.description = p.text(root["description"], "description");
  d.cores = static_cast<int>(p.integer(p.required(root, "cores", "cores", "an integer >= 1"), "cores", 1));
  d.frequency_ghz = p.number(p.required(root, "frequency_ghz", "frequency_ghz", "a number > 0"), "frequency_ghz", 0, true);
  d.simd_width_bits = static_cast<int>(
      p.integer(p.required(root, "simd_width_bits", "simd_width_bits", "an integer >= 1"), "simd_width_bits", 1));

  const YAML::Node peak = p.required(root, "peak", "peak", "a map with fp32_gflops, fp16_gflops, int8_gops");
  p.check_map(peak, "peak", {"fp32_gflops", "fp16_gflops", "int8_gops"});
  d.peak_fp32_gflops = p.number(p.required(peak, "fp32_gflops", "peak.fp32_gflops", "a number >= 0"), "peak.fp32_gflops", 0);
  d.peak_fp16_gflops = p.number(p.required(peak, "fp16_gflops", "peak.fp16_gflops", "a number >= 0"), "peak.fp16_gflops", 0);
  d.peak_int8_gops = p.number(p.required(peak, "int8_gops", "peak.int8_gops", "a number >= 0"), "peak.int8_gops", 0);

  if (root["caches"]) {
    const YAML::Node caches = root["caches"];
    if (!caches.IsMap()) p.fail(caches, "caches", "expected a map of NAME_kib: size, got " + describe(caches));
    for (const auto& kv : caches) {
      const std::string k = kv.first.Scalar();
      if (k.size() < 5 || k.substr(k.size() - 4) != "_kib") {
        p.fail(kv.first, "caches." + k, "cache sizes are named NAME_kib (e.g. l2_kib: 512)");
      }
      d.caches_kib.emplace_back(k, p.number(kv.second, "caches." + k, 0));
    }
  }

  d.memory_bandwidth_gbps = p.number(p.required(root, "memory_bandwidth_gbps", "memory_bandwidth_gbps", "a number > 0"),
                                     "memory_bandwidth_gbps", 0, true);
  d.memory_efficiency = p.curve(p.required(root, "memory_efficiency", "memory_efficiency", "a map {max, half_kib}"),
                                "memory_efficiency", "half_kib", 1024.0);
  d.dispatch_us = p.number(p.required(root, "dispatch_us", "dispatch_us", "a number >= 0"), "dispatch_us", 0);

  d.numerics = p.choice(p.required(root, "numerics", "numerics", "one of " + join(kNumerics)), "numerics", kNumerics);
  if (d.peak_gflops(d.numerics) <= 0) {
    const std::string peak_key = d.numerics == "int8" ? "peak.int8_gops" : "peak." + d.numerics + "_gflops";
    p.fail(root["numerics"], "numerics", "the device computes in " + d.numerics + " but " + peak_key + " is 0");
  }
  const YAML::Node dtypes = p.required(root, "dtypes", "dtypes", "a list of " + join(kDtypes));
  if (!dtypes.IsSequence() || dtypes.size() == 0) p.fail(dtypes, "dtypes", "expected a non-empty list of " + join(kDtypes));
  for (const auto& t : dtypes) d.dtypes.push_back(p.choice(t, "dtypes", kDtypes));

  if (root["on_unsupported"]) {
    d.on_unsupported = p.choice(root["on_unsupported"], "on_unsupported", {"error", "fallback"}) == "error"
                           ? OnUnsupported::kError
                           : OnUnsupported::kFallback;
  }

  const bool accel = !d.is_cpu();
  if (accel) {
    d.host = p.text(p.required(root, "host", "host", "the name of the CPU profile that runs fallback ops"), "host");
    const YAML::Node tr = p.required(root, "transfer", "transfer", "a map {bandwidth_gbps, latency_us}");
    p.check_map(tr, "transfer", {"bandwidth_gbps", "latency_us"});
    d.transfer_bandwidth_gbps = p.number(p.required(tr, "bandwidth_gbps", "transfer.bandwidth_gbps", "a number > 0"),
                                         "transfer.bandwidth_gbps", 0, true);
    d.transfer_latency_us = p.number(p.required(tr, "latency_us", "transfer.latency_us", "a number >= 0"),
                                     "transfer.latency_us", 0);
  } else {
    if (root["host"]) p.fail(root["host"], "host", "only accelerators (gpu, npu, dsp) have a host; a " + d.kind + " runs every op itself");
    if (root["transfer"]) p.fail(root["transfer"], "transfer", "only accelerators have a host<->device transfer");
  }

  const YAML::Node ops = root["ops"];
  if (!ops) {
    if (accel) p.fail(root, "ops", "missing; an accelerator lists the ONNX ops it runs (a map OpType: {constraints})");
    d.all_ops = true;
  } else if (ops.IsScalar() && ops.Scalar() == "all") {
    d.all_ops = true;
  } else if (ops.IsMap()) {
    for (const auto& kv : ops) {
      const std::string t = p.op_type(kv.first, "ops." + kv.first.Scalar(), kv.first.Scalar());
      d.ops[t] = p.constraint(kv.second, "ops." + t);
    }
  } else {
    p.fail(ops, "ops", "expected 'all' or a map OpType: {max_kernel: 7, ...}, got " + describe(ops));
  }

  const YAML::Node eff = p.required(root, "efficiency", "efficiency", "a map of op class -> {max, half_mflop}");
  std::vector<std::string> class_names;
  for (OpClass c : all_op_classes()) class_names.push_back(op_class_name(c));
  p.check_map(eff, "efficiency", class_names);
  for (OpClass c : all_op_classes()) {
    const std::string k = op_class_name(c);
    d.efficiency[c] = p.curve(p.required(eff, k, "efficiency." + k, "a map {max, half_mflop}"), "efficiency." + k,
                              "half_mflop", 1e6);
  }

  if (root["fusion"]) {
    const YAML::Node f = root["fusion"];
    if (!f.IsSequence()) p.fail(f, "fusion", "expected a list of patterns like 'Conv + Relu|Clip', got " + describe(f));
    for (const auto& e : f) d.fusion.push_back(p.pattern(e, "fusion"));
  }
  return d;
}

}  // namespace

DeviceProfile load_device_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read device profile (does the file exist?)");
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": invalid YAML: " + e.msg);
  }
  return parse_profile(root, path);
}

std::vector<std::string> device_profile_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("XNN_DEVICES_DIR"); env && *env) dirs.emplace_back(env);
  const std::string builtin = XNN_DEVICES_DIR_DEFAULT;
  if (!builtin.empty()) dirs.push_back(builtin);
  return dirs;
}

namespace {

// name -> path, first folder wins.
std::map<std::string, std::string> profile_files() {
  std::map<std::string, std::string> out;
  for (const std::string& dir : device_profile_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() != ".yaml" || !e.is_regular_file()) continue;
      out.emplace(e.path().stem().string(), e.path().string());
    }
  }
  return out;
}

DeviceProfile load_named(const std::string& name, const std::string& path) {
  DeviceProfile d = load_device_profile(path);
  if (d.name != name) throw Error(path + ": the profile is named '" + d.name + "' but its file is " + name + ".yaml");
  return d;
}

}  // namespace

std::vector<std::string> device_profile_names() {
  std::vector<std::string> names;
  for (const auto& [n, p] : profile_files()) names.push_back(n);
  return names;
}

DeviceProfile find_device_profile(const std::string& name) {
  const auto files = profile_files();
  auto it = files.find(name);
  if (it == files.end()) {
    std::vector<std::string> names;
    for (const auto& [n, p] : files) names.push_back(n);
    throw Error("unknown device profile '" + name + "'" + suggestion(name, names) + "; known profiles: " +
                (names.empty() ? "none" : join(names)) + " (searched " +
                (device_profile_dirs().empty() ? "no folders" : join(device_profile_dirs())) + ")");
  }
  return load_named(name, it->second);
}

std::vector<DeviceProfile> list_device_profiles() {
  std::vector<DeviceProfile> out;
  for (const auto& [n, p] : profile_files()) out.push_back(load_named(n, p));
  return out;
}

std::string format_rate(double giga, const std::string& unit) {
  char buf[64];
  if (giga >= 1000) std::snprintf(buf, sizeof(buf), "%.3g T%s", giga / 1000, unit.c_str());
  else std::snprintf(buf, sizeof(buf), "%.4g G%s", giga, unit.c_str());
  return buf;
}

std::string device_profile_json(const DeviceProfile& d) {
  json::Writer w;
  w.begin_object();
  w.field("name", d.name).field("kind", d.kind).field("description", d.description);
  w.key("host");
  d.host.empty() ? w.null() : w.value(d.host);
  w.field("cores", d.cores).field("frequency_ghz", d.frequency_ghz).field("simd_width_bits", d.simd_width_bits);
  w.field("peak_fp32_gflops", d.peak_fp32_gflops).field("peak_fp16_gflops", d.peak_fp16_gflops);
  w.field("peak_int8_gops", d.peak_int8_gops).field("memory_bandwidth_gbps", d.memory_bandwidth_gbps);
  w.field("dispatch_us", d.dispatch_us);
  if (!d.is_cpu()) w.field("transfer_bandwidth_gbps", d.transfer_bandwidth_gbps).field("transfer_latency_us", d.transfer_latency_us);
  w.field("numerics", d.numerics);
  w.key("dtypes").begin_array();
  for (const std::string& t : d.dtypes) w.value(t);
  w.end_array();
  w.key("ops");
  if (d.all_ops) {
    w.value("all");
  } else {
    w.begin_array();
    for (const auto& [op, c] : d.ops) w.value(op);
    w.end_array();
  }
  w.field("on_unsupported", d.on_unsupported == OnUnsupported::kError ? "error" : "fallback");
  w.key("caches_kib").begin_object();
  for (const auto& [k, v] : d.caches_kib) w.field(k.substr(0, k.size() - 4), v);
  w.end_object();
  w.field("source", d.source_path);
  w.end_object();
  return w.str();
}

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

void emit_curve(YAML::Emitter& out, const EfficiencyCurve& c, const char* half_key, double unit) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "max" << YAML::Value << num(c.max) << YAML::Key << half_key
      << YAML::Value << num(c.half / unit) << YAML::EndMap;
}

}  // namespace

void write_device_profile(const DeviceProfile& d, const std::string& path, const std::string& comment) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << d.name;
  out << YAML::Key << "kind" << YAML::Value << d.kind;
  if (!d.description.empty()) out << YAML::Key << "description" << YAML::Value << d.description;
  if (!d.host.empty()) out << YAML::Key << "host" << YAML::Value << d.host;
  out << YAML::Key << "cores" << YAML::Value << d.cores;
  out << YAML::Key << "frequency_ghz" << YAML::Value << num(d.frequency_ghz);
  out << YAML::Key << "simd_width_bits" << YAML::Value << d.simd_width_bits;
  out << YAML::Key << "peak" << YAML::Value << YAML::BeginMap << YAML::Key << "fp32_gflops" << YAML::Value
      << num(d.peak_fp32_gflops) << YAML::Key << "fp16_gflops" << YAML::Value << num(d.peak_fp16_gflops)
      << YAML::Key << "int8_gops" << YAML::Value << num(d.peak_int8_gops) << YAML::EndMap;
  if (!d.caches_kib.empty()) {
    out << YAML::Key << "caches" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : d.caches_kib) out << YAML::Key << k << YAML::Value << num(v);
    out << YAML::EndMap;
  }
  out << YAML::Key << "memory_bandwidth_gbps" << YAML::Value << num(d.memory_bandwidth_gbps);
  out << YAML::Key << "memory_efficiency" << YAML::Value;
  emit_curve(out, d.memory_efficiency, "half_kib", 1024.0);
  out << YAML::Key << "dispatch_us" << YAML::Value << num(d.dispatch_us);
  if (!d.is_cpu()) {
    out << YAML::Key << "transfer" << YAML::Value << YAML::BeginMap << YAML::Key << "bandwidth_gbps" << YAML::Value
        << num(d.transfer_bandwidth_gbps) << YAML::Key << "latency_us" << YAML::Value << num(d.transfer_latency_us)
        << YAML::EndMap;
  }
  out << YAML::Key << "numerics" << YAML::Value << d.numerics;
  out << YAML::Key << "dtypes" << YAML::Value << YAML::Flow << d.dtypes;
  out << YAML::Key << "on_unsupported" << YAML::Value
      << (d.on_unsupported == OnUnsupported::kError ? "error" : "fallback");
  out << YAML::Key << "ops" << YAML::Value;
  if (d.all_ops) {
    out << "all";
  } else {
    out << YAML::BeginMap;
    for (const auto& [op, c] : d.ops) {
      out << YAML::Key << op << YAML::Value << YAML::Flow << YAML::BeginMap;
      auto put = [&](const char* k, int64_t v) {
        if (v > 0) out << YAML::Key << k << YAML::Value << v;
      };
      put("max_kernel", c.max_kernel);
      if (!c.strides.empty()) out << YAML::Key << "strides" << YAML::Value << YAML::Flow << c.strides;
      if (!c.dilations.empty()) out << YAML::Key << "dilations" << YAML::Value << YAML::Flow << c.dilations;
      put("channel_multiple", c.channel_multiple);
      put("max_channels", c.max_channels);
      put("max_rank", c.max_rank);
      put("max_dim", c.max_dim);
      put("max_elements", c.max_elements);
      put("max_batch", c.max_batch);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "efficiency" << YAML::Value << YAML::BeginMap;
  for (OpClass c : all_op_classes()) {
    out << YAML::Key << op_class_name(c) << YAML::Value;
    emit_curve(out, d.curve(c), "half_mflop", 1e6);
  }
  out << YAML::EndMap;
  out << YAML::Key << "fusion" << YAML::Value << YAML::BeginSeq;
  for (const FusionPattern& f : d.fusion) out << f.text;
  out << YAML::EndSeq;
  out << YAML::EndMap;
  if (!out.good()) throw Error(path + ": cannot write device profile: " + out.GetLastError());

  std::ofstream file(path);
  if (!file) throw Error(path + ": cannot write device profile (is the folder writable?)");
  if (!comment.empty()) {
    size_t start = 0;
    while (start <= comment.size()) {
      const size_t nl = comment.find('\n', start);
      file << "# " << comment.substr(start, nl == std::string::npos ? std::string::npos : nl - start) << "\n";
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  file << out.c_str() << "\n";
  if (!file) throw Error(path + ": write failed");
}

}  // namespace xnn::sim
