// The simulator's latency model: a model's graph on a device profile, op by op.
//
//   1. The engine's passes at level 1 (constant folding, BatchNorm folding, cleanup) run first:
//      every deployment runtime folds those; the device's own fusion comes later (fusion.h).
//   2. Each node is placed on the device if it accepts it (op_support.h), else on the host CPU
//      profile (fallback, with the reason) -- or the simulation fails (on_unsupported: error).
//   3. The graph is partitioned (partition.h); every tensor crossing sides pays
//      transfer latency + bytes / transfer bandwidth.
//   4. Nodes fuse into kernels by the device's patterns; per kernel (roofline):
//        time = dispatch + max(compute, memory)
//        compute = FLOP / (peak(dtype) * used_cores/cores * eff_class(FLOP))
//        memory  = bytes / (bandwidth * mem_eff(bytes))
//      with FLOP = 2 x MACs for conv/depthwise/gemm (the engine's cost counts one op per element
//      for the other classes), bytes = what the kernel's nodes read and write minus the tensors
//      passed inside the fused kernel, scaled to the dtype the device computes in (fp32 data on
//      an fp16 device moves half the bytes).
//   5. Partitions run one after another (a synchronous delegate): total = sum of kernel times
//      and transfers.
// Formulas and every profile field: configs/devices/README.md.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "harness/sim/device_profile.h"

namespace xnn::sim {

struct SimOptions {
  // CPU profiles (the device when it is a CPU, and the host) use min(threads, cores) cores;
  // 0 means all cores.
  int threads = 0;
  // Engine optimisation level applied before the device's own fusion (1: folding only).
  int opt_level = 1;
  // Overrides the profile's on_unsupported.
  std::optional<OnUnsupported> on_unsupported;
};

// One node of the optimised graph. A fused kernel's time is on its anchor (first node); the
// other nodes of the kernel show `fused_into` = the anchor's name and zero time.
struct SimOpRow {
  size_t node_index = 0;
  std::string node_name, op_type, op_class;
  std::string fused_group;   // "conv1+relu1" for every node of a fused kernel, else ""
  std::string fused_into;    // anchor's name for non-anchor nodes of a fused kernel
  std::string device;        // profile name that runs it
  std::string dtype;         // what it computes in on that device (fp32, fp16, int8, ...)
  int partition = -1;        // -1: a free view op
  double flops = 0, bytes = 0;  // of the kernel (anchor) or the node (others), after fusion
  double time_ms = 0, compute_ms = 0, memory_ms = 0, dispatch_ms = 0, transfer_ms = 0;
  std::string bound;         // "compute", "memory", "free" (views), "fused" (non-anchor nodes)
  bool fell_back = false;    // on the host because the device refused it
  std::string reason;        // why it fell back
  std::string shapes;        // "1x3x224x224;64x3x7x7->1x64x112x112"
  double macs = 0;           // the node's own MACs (engine cost model)
};

struct SimPartition {
  size_t index = 0;
  std::string device;
  bool accelerator = false;
  std::vector<std::string> nodes;
  double time_ms = 0;        // kernels in it (transfers not included)
};

struct SimTransfer {
  std::string value, from, to;  // tensor name, profile names
  double bytes = 0, time_ms = 0;
};

struct SimResult {
  std::string device, host;     // host: "" when the device is a CPU
  double total_ms = 0;
  std::vector<SimOpRow> ops;    // in execution order
  std::vector<SimPartition> partitions;
  std::vector<SimTransfer> transfers;
  std::map<std::string, double> device_ms;  // kernel time per profile, plus "transfer"
  int transfer_count = 0;
  int fell_back = 0;            // nodes that fell back to the host
  int fused_kernels = 0;        // kernels of two or more nodes
};

// Simulates `graph` with `input_shapes` (missing inputs: declared dims, symbols as 1) on `device`;
// `host` must be given when the device is an accelerator (its `host` profile). Throws Error naming
// the unsupported nodes (name, op, reason) when the device refuses some and on_unsupported is error.
SimResult simulate(const Graph& graph, const std::map<std::string, Shape>& input_shapes, const DeviceProfile& device,
                   const DeviceProfile* host, const SimOptions& options = {});

// The time of one kernel on `device` (the roofline above), exposed for the efficiency fit:
// `op_class` picks the curve, `dtype` the peak, `cores_used` scales the peak of CPU profiles.
struct KernelTime {
  double compute_ms = 0, memory_ms = 0, dispatch_ms = 0;
  double total_ms() const { return dispatch_ms + std::max(compute_ms, memory_ms); }
};
KernelTime kernel_time(const DeviceProfile& device, OpClass op_class, const std::string& dtype, double flops,
                       double bytes, int cores_used);

// The compute dtype for a node of `node_dtype` on `device`: float nodes on an fp16 device -> fp16;
// fp16 on a device without fp16 arithmetic -> fp32; integer index maths -> fp32 (scalar-ish).
std::string compute_dtype(const DeviceProfile& device, const std::string& node_dtype);

// FLOP of a node for the roofline: 2 x MACs for conv/depthwise/gemm, MACs otherwise.
double op_flops(OpClass op_class, double macs);

}  // namespace xnn::sim
