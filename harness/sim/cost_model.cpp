#include "harness/sim/cost_model.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/passes/optimize.h"
#include "engine/runtime/graph_cost.h"
#include "harness/sim/fusion.h"
#include "harness/sim/op_support.h"
#include "harness/sim/partition.h"

namespace xnn::sim {

double op_flops(OpClass c, double macs) {
  const bool mac_based = c == OpClass::kConv || c == OpClass::kDepthwise || c == OpClass::kGemm;
  return mac_based ? 2.0 * macs : macs;
}

std::string compute_dtype(const DeviceProfile& d, const std::string& node_dtype) {
  if (node_dtype == "fp32") return d.numerics == "fp16" ? "fp16" : "fp32";
  if (node_dtype == "fp16") return d.peak_fp16_gflops > 0 ? "fp16" : "fp32";
  if (node_dtype == "int8") {
    if (d.peak_int8_gops > 0) return "int8";
    return d.numerics == "fp16" ? "fp16" : "fp32";
  }
  return "fp32";
}

KernelTime kernel_time(const DeviceProfile& d, OpClass c, const std::string& dtype, double flops, double bytes,
                       int cores_used) {
  double peak = d.peak_gflops(dtype);
  // Arithmetic the device lacks (index maths on an fp16-only NPU): its fastest unit stands in.
  if (peak <= 0) peak = std::max({d.peak_fp32_gflops, d.peak_fp16_gflops, d.peak_int8_gops});
  if (peak <= 0) throw Error("device profile '" + d.name + "' has no compute peak for " + dtype);
  const double core_share =
      d.is_cpu() ? static_cast<double>(std::clamp(cores_used, 1, d.cores)) / static_cast<double>(d.cores) : 1.0;
  KernelTime t;
  t.dispatch_ms = d.dispatch_us * 1e-3;
  if (flops > 0) t.compute_ms = flops / (peak * 1e9 * core_share * d.curve(c).at(flops)) * 1e3;
  if (bytes > 0) t.memory_ms = bytes / (d.memory_bandwidth_gbps * 1e9 * d.memory_efficiency.at(bytes)) * 1e3;
  return t;
}

namespace {

std::string shapes_text(const NodeCost& c) {
  auto join = [](const std::vector<Shape>& v) {
    std::string s;
    for (const Shape& x : v) {
      std::string d;
      for (size_t i = 0; i < x.size(); ++i) {
        if (i) d += 'x';
        d += std::to_string(x[i]);
      }
      if (!s.empty()) s += ';';
      s += x.empty() ? std::string("scalar") : d;
    }
    return s;
  };
  return join(c.input_shapes) + "->" + join(c.output_shapes);
}

double element_bytes_scale(const std::string& node_dtype, const std::string& cdt) {
  if (node_dtype == "fp32" && cdt == "fp16") return 0.5;
  return 1.0;
}

int cores_for(const DeviceProfile& p, int threads) {
  if (!p.is_cpu()) return p.cores;
  return threads > 0 ? std::min(threads, p.cores) : p.cores;
}

}  // namespace

SimResult simulate(const Graph& graph, const std::map<std::string, Shape>& input_shapes, const DeviceProfile& device,
                   const DeviceProfile* host, const SimOptions& opt) {
  const bool accel = !device.is_cpu();
  if (accel && host == nullptr) {
    throw Error("device profile '" + device.name + "' is an accelerator: its host profile '" + device.host +
                "' is needed to run fallback ops");
  }
  if (accel && !host->is_cpu()) {
    throw Error("device profile '" + device.name + "': host '" + host->name + "' is a " + host->kind +
                ", expected a cpu or mcu profile");
  }
  const DeviceProfile& host_profile = accel ? *host : device;

  Graph g = graph;
  if (opt.opt_level > 0) optimize_graph(g, opt.opt_level);
  const GraphCost cost = estimate_graph_cost(g, input_shapes);
  const size_t n = g.nodes.size();
  if (cost.nodes.size() != n) throw Error("graph cost has " + std::to_string(cost.nodes.size()) + " nodes, graph " + std::to_string(n));

  // Placement.
  std::vector<Side> side(n, Side::kDevice);
  std::vector<bool> free(n, false);
  std::vector<std::string> reason(n);
  std::vector<size_t> refused;
  for (size_t k = 0; k < n; ++k) {
    free[k] = is_free_op(g.nodes[k]);
    if (free[k]) continue;
    reason[k] = unsupported_reason(device, g, g.nodes[k], cost.nodes[k]);
    if (reason[k].empty()) continue;
    refused.push_back(k);
    side[k] = Side::kHost;
  }
  const OnUnsupported policy = opt.on_unsupported.value_or(device.on_unsupported);
  if (!refused.empty() && (!accel || policy == OnUnsupported::kError)) {
    std::string msg = "model cannot run on " + device.name;
    msg += accel ? " (on_unsupported: error): " : " (a " + device.kind + " has no host to fall back to): ";
    msg += std::to_string(refused.size()) + " of " + std::to_string(n) + " nodes unsupported: ";
    const size_t shown = std::min<size_t>(refused.size(), 10);
    for (size_t i = 0; i < shown; ++i) {
      const Node& nd = g.nodes[refused[i]];
      if (i) msg += "; ";
      msg += "'" + nd.name + "' (" + nd.op_type + "): " + reason[refused[i]];
    }
    if (refused.size() > shown) msg += "; and " + std::to_string(refused.size() - shown) + " more";
    if (accel) msg += " (on_unsupported: fallback runs them on " + host_profile.name + ")";
    throw Error(msg);
  }

  const Partitioning parts = partition_graph(g, side, free, accel ? Side::kHost : Side::kDevice);
  auto profile_of = [&](Side s) -> const DeviceProfile& { return s == Side::kDevice ? device : host_profile; };
  std::vector<const DeviceProfile*> device_of_node(n, nullptr);
  for (size_t k = 0; k < n; ++k) {
    if (!free[k]) device_of_node[k] = &profile_of(parts.side_of_node[k]);
  }
  const std::vector<FusedGroup> groups = find_fusions(g, device_of_node, parts.partition_of_node);

  // Shapes and element sizes of every value (for fused intermediates and transfers).
  std::vector<double> value_bytes(g.values.size(), 0.0);
  for (size_t k = 0; k < n; ++k) {
    const Node& nd = g.nodes[k];
    for (size_t j = 0; j < nd.outputs.size() && j < cost.nodes[k].output_shapes.size(); ++j) {
      const int v = nd.outputs[j];
      if (v < 0) continue;
      const DType t = g.value(v).dtype == DType::kUnknown ? DType::kF32 : g.value(v).dtype;
      value_bytes[static_cast<size_t>(v)] =
          static_cast<double>(shape_numel(cost.nodes[k].output_shapes[j])) * static_cast<double>(dtype_size(t));
    }
  }
  for (int i : g.inputs) {
    const Value& v = g.value(i);
    const DType t = v.dtype == DType::kUnknown ? DType::kF32 : v.dtype;
    value_bytes[static_cast<size_t>(i)] =
        static_cast<double>(shape_numel(concrete_input_shape(v, input_shapes))) * static_cast<double>(dtype_size(t));
  }

  SimResult r;
  r.device = device.name;
  r.host = accel ? host_profile.name : "";
  std::vector<SimOpRow> rows(n);
  for (size_t k = 0; k < n; ++k) {
    const Node& nd = g.nodes[k];
    SimOpRow& row = rows[k];
    row.node_index = k;
    row.node_name = nd.name;
    row.op_type = nd.op_type;
    row.op_class = op_class_name(classify_op(nd, cost.nodes[k]));
    row.device = profile_of(parts.side_of_node[k]).name;
    row.partition = parts.partition_of_node[k];
    row.fell_back = accel && !free[k] && side[k] == Side::kHost;
    row.reason = reason[k];
    row.shapes = shapes_text(cost.nodes[k]);
    row.macs = cost.nodes[k].cost.macs;
    const std::string nd_dtype = node_dtype(g, nd);
    row.dtype = free[k] ? nd_dtype : compute_dtype(profile_of(parts.side_of_node[k]), nd_dtype);
    if (free[k]) {
      row.bound = "free";
    } else {
      const double scale = element_bytes_scale(nd_dtype, row.dtype);
      row.flops = op_flops(classify_op(nd, cost.nodes[k]), cost.nodes[k].cost.macs);
      row.bytes = (cost.nodes[k].cost.bytes_read + cost.nodes[k].cost.bytes_written) * scale;
    }
  }

  std::vector<long> anchor_of(n, -1);
  for (const FusedGroup& grp : groups) {
    const size_t a = grp.nodes[0];
    const DeviceProfile& prof = *device_of_node[a];
    double flops = 0, bytes = 0;
    for (size_t k : grp.nodes) {
      flops += rows[k].flops;
      bytes += rows[k].bytes;
      anchor_of[k] = static_cast<long>(a);
    }
    const double scale = element_bytes_scale(node_dtype(g, g.nodes[a]), rows[a].dtype);
    for (int v : grp.internal) bytes -= 2.0 * value_bytes[static_cast<size_t>(v)] * scale;
    bytes = std::max(bytes, 0.0);
    const OpClass cls = classify_op(g.nodes[a], cost.nodes[a]);
    const KernelTime kt = kernel_time(prof, cls, rows[a].dtype, flops, bytes, cores_for(prof, opt.threads));
    if (grp.nodes.size() > 1) {
      ++r.fused_kernels;
      std::string label;
      for (size_t k : grp.nodes) {
        if (!label.empty()) label += '+';
        label += g.nodes[k].name;
      }
      for (size_t k : grp.nodes) {
        rows[k].fused_group = label;
        if (k != a) {
          rows[k].fused_into = g.nodes[a].name;
          rows[k].bound = "fused";
        }
      }
    }
    SimOpRow& ar = rows[a];
    ar.flops = flops;
    ar.bytes = bytes;
    ar.compute_ms = kt.compute_ms;
    ar.memory_ms = kt.memory_ms;
    ar.dispatch_ms = kt.dispatch_ms;
    ar.time_ms = kt.total_ms();
    ar.bound = kt.compute_ms >= kt.memory_ms ? "compute" : "memory";
    r.device_ms[prof.name] += ar.time_ms;
  }

  // Transfers over the host <-> device link, booked on the kernel that waits for them.
  for (const Crossing& c : parts.crossings) {
    const double bytes = value_bytes[static_cast<size_t>(c.value)];
    const double ms = device.transfer_latency_us * 1e-3 + bytes / (device.transfer_bandwidth_gbps * 1e9) * 1e3;
    const size_t k = anchor_of[c.first_consumer] >= 0 ? static_cast<size_t>(anchor_of[c.first_consumer]) : c.first_consumer;
    rows[k].transfer_ms += ms;
    rows[k].time_ms += ms;
    const Side to = c.from == Side::kDevice ? Side::kHost : Side::kDevice;
    r.transfers.push_back(SimTransfer{g.value(c.value).name, profile_of(c.from).name, profile_of(to).name, bytes, ms});
    r.device_ms["transfer"] += ms;
  }
  r.transfer_count = static_cast<int>(r.transfers.size());

  for (const Partition& p : parts.partitions) {
    SimPartition sp;
    sp.index = p.index;
    sp.device = profile_of(p.side).name;
    sp.accelerator = accel && p.side == Side::kDevice;
    for (size_t k : p.nodes) {
      sp.nodes.push_back(g.nodes[k].name);
      sp.time_ms += rows[k].time_ms - rows[k].transfer_ms;
    }
    r.partitions.push_back(std::move(sp));
  }
  for (size_t k : parts.order) {
    r.total_ms += rows[k].time_ms;
    if (rows[k].fell_back) ++r.fell_back;
    r.ops.push_back(std::move(rows[k]));
  }
  return r;
}

}  // namespace xnn::sim
