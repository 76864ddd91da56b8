// Device profiles: what the simulator knows about a CPU, GPU, NPU or DSP it has never run on.
// One YAML file per device in configs/devices/ (schema and sources: configs/devices/README.md):
// compute peaks per dtype, memory bandwidth, per-kernel dispatch overhead, host<->device transfer,
// the numerics the device computes in, which ops/dtypes/shapes it accepts, efficiency curves per
// op class and the fusion patterns its runtime applies.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace xnn::sim {

// Op classes share an efficiency curve: a device reaches different fractions of its peak on
// dense convolutions than on depthwise ones or on elementwise work.
enum class OpClass { kConv, kDepthwise, kGemm, kPool, kElementwise, kOther };
const std::vector<OpClass>& all_op_classes();
std::string op_class_name(OpClass c);  // "conv", "depthwise", ...

// Fraction of peak an op of `work` reaches: eff(work) = max * work / (work + half). A saturating
// curve: tiny ops get almost nothing, eff(half) = max / 2, large ops approach `max`. `work` is in
// FLOP (compute curves) or bytes (the memory curve).
struct EfficiencyCurve {
  double max = 1.0;   // (0, 1]
  double half = 0.0;  // >= 0; 0 means every op reaches `max`
  double at(double work) const;
};

// Shape limits of one op on an accelerator; 0 / empty means "no limit".
struct OpConstraint {
  int64_t max_kernel = 0;             // every spatial kernel dim (Conv, ConvTranspose, pools)
  std::vector<int64_t> strides;       // allowed stride values (every spatial stride)
  std::vector<int64_t> dilations;     // allowed dilation values
  int64_t channel_multiple = 0;       // input and output channels (dim 1) must be multiples of it
  int64_t max_channels = 0;           // input and output channels
  int64_t max_rank = 0;               // rank of every input and output tensor
  int64_t max_dim = 0;                // every dimension of every input and output tensor
  int64_t max_elements = 0;           // elements of every input and output tensor
  int64_t max_batch = 0;              // dim 0 of the first input
};

// A fusion pattern: a chain of steps, each a set of ONNX op types ("Conv + Add + Relu|Clip").
// Each step's output must feed only the next step (see fusion.h).
struct FusionPattern {
  std::vector<std::vector<std::string>> steps;
  std::string text;  // as written in the profile
};

enum class OnUnsupported { kError, kFallback };

struct DeviceProfile {
  std::string name;         // file stem; `sim:<name>` in experiments
  std::string kind;         // cpu | mcu | gpu | npu | dsp
  std::string description;
  std::string host;         // accelerators: the CPU profile that runs fallback ops
  std::string source_path;  // the file it was loaded from ("" when built in code)

  int cores = 1;
  double frequency_ghz = 0;
  int simd_width_bits = 0;
  double peak_fp32_gflops = 0, peak_fp16_gflops = 0, peak_int8_gops = 0;  // 0: no such arithmetic
  std::vector<std::pair<std::string, double>> caches_kib;  // reported, e.g. {"l2_kib", 512}
  double memory_bandwidth_gbps = 0;
  EfficiencyCurve memory_efficiency;  // over bytes moved by one kernel
  double dispatch_us = 0;             // per kernel launch
  double transfer_bandwidth_gbps = 0; // host <-> device (accelerators)
  double transfer_latency_us = 0;

  std::string numerics = "fp32";            // fp32 | fp16 | int8: what it computes float models in
  std::vector<std::string> dtypes;          // tensor dtypes it accepts: fp32 fp16 int8 int32 int64 bool
  bool all_ops = false;                     // `ops: all` (CPUs): every op the engine implements
  std::map<std::string, OpConstraint> ops;  // otherwise: ONNX op type -> limits
  std::map<OpClass, EfficiencyCurve> efficiency;  // one per op class, all present
  std::vector<FusionPattern> fusion;
  OnUnsupported on_unsupported = OnUnsupported::kFallback;

  // CPUs and MCUs run every op and need no host.
  bool is_cpu() const { return kind == "cpu" || kind == "mcu"; }
  bool accepts_dtype(const std::string& dtype) const;
  // Peak in GFLOP/s (GOP/s for int8) of arithmetic in `dtype` (fp32 | fp16 | int8); 0 if none.
  double peak_gflops(const std::string& dtype) const;
  const EfficiencyCurve& curve(OpClass c) const;
};

// Loads and validates a profile. Errors are "FILE:LINE:COL: key 'peak.fp32_gflops': expected a
// number >= 0, got 'fast'", with did-you-mean for unknown keys.
DeviceProfile load_device_profile(const std::string& path);

// Folders searched for profiles, in order: $XNN_DEVICES_DIR (if set), then the repository's
// configs/devices (compiled in).
std::vector<std::string> device_profile_dirs();
// Loads `<dir>/<name>.yaml` from the first folder that has it; throws listing the known profiles
// (with did-you-mean) when none does.
DeviceProfile find_device_profile(const std::string& name);
// Every profile in the search folders (the first folder wins on a name clash), sorted by name.
std::vector<DeviceProfile> list_device_profiles();
std::vector<std::string> device_profile_names();

// Writes `profile` as YAML that load_device_profile reads back to an equal profile (used for
// refitted profiles). A leading comment says where it came from. Throws naming `path` on I/O errors.
void write_device_profile(const DeviceProfile& profile, const std::string& path, const std::string& comment = "");

// Human units: format_rate(116.2, "FLOP/s") = "116.2 GFLOP/s", format_rate(12000, "OP/s") = "12 TOP/s".
std::string format_rate(double giga, const std::string& unit);

// The profile's key figures as one JSON object (target descriptions, `xnn-lab targets --json`):
// name, kind, description, host, cores, frequency_ghz, simd_width_bits, peak_*, memory_bandwidth_gbps,
// dispatch_us, transfer_*, numerics, dtypes, ops ("all" or the list), on_unsupported, caches, source.
std::string device_profile_json(const DeviceProfile& profile);

}  // namespace xnn::sim
