#include "harness/sim/sim_report.h"

#include <algorithm>
#include <cstdio>

#include "harness/util/json.h"

namespace xnn::sim {

std::string sim_result_json(const SimResult& r) {
  json::Writer w;
  w.begin_object().field("device", r.device);
  w.key("host");
  r.host.empty() ? w.null() : w.value(r.host);
  w.field("latency_ms", r.total_ms);
  w.key("device_ms").begin_object();
  for (const auto& [device, ms] : r.device_ms) w.field(device, ms);
  w.end_object();
  w.field("fell_back", r.fell_back).field("fused_kernels", r.fused_kernels).field("transfer_count", r.transfer_count);
  w.key("ops").begin_array();
  for (const SimOpRow& o : r.ops) {
    w.begin_object().field("name", o.node_name).field("type", o.op_type).field("class", o.op_class);
    w.field("device", o.device).field("dtype", o.dtype).field("partition", o.partition);
    w.field("time_ms", o.time_ms).field("percent", r.total_ms > 0 ? 100 * o.time_ms / r.total_ms : 0.0);
    w.field("compute_ms", o.compute_ms).field("memory_ms", o.memory_ms).field("dispatch_ms", o.dispatch_ms);
    w.field("bound", o.bound).field("flops", o.flops).field("bytes", o.bytes).field("macs", o.macs);
    w.field("shapes", o.shapes).field("fused_group", o.fused_group).field("fused_into", o.fused_into);
    w.field("fell_back", o.fell_back).field("reason", o.reason).end_object();
  }
  w.end_array();
  w.key("partitions").begin_array();
  for (const SimPartition& p : r.partitions) {
    w.begin_object().field("index", p.index).field("device", p.device).field("accelerator", p.accelerator);
    w.field("time_ms", p.time_ms).key("nodes").begin_array();
    for (const std::string& n : p.nodes) w.value(n);
    w.end_array().end_object();
  }
  w.end_array();
  w.key("transfers").begin_array();
  for (const SimTransfer& t : r.transfers) {
    w.begin_object().field("value", t.value).field("from", t.from).field("to", t.to);
    w.field("bytes", t.bytes).field("time_ms", t.time_ms).end_object();
  }
  w.end_array().end_object();
  return w.str();
}

std::string sim_result_table(const SimResult& r, const std::string& model_name) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s on sim:%s: simulated %.4f ms (%zu ops, %zu partitions, %d fused kernels, "
                "%d fell back to %s, %d transfers)\n",
                model_name.c_str(), r.device.c_str(), r.total_ms, r.ops.size(), r.partitions.size(), r.fused_kernels,
                r.fell_back, r.host.empty() ? "the host" : r.host.c_str(), r.transfer_count);
  out += line;
  for (const auto& [device, ms] : r.device_ms) {
    std::snprintf(line, sizeof line, "  %-24s %10.4f ms  %6.2f%%\n", device.c_str(), ms,
                  r.total_ms > 0 ? 100 * ms / r.total_ms : 0.0);
    out += line;
  }
  size_t name_w = 4, op_w = 2, device_w = 6;
  for (const SimOpRow& o : r.ops) {
    name_w = std::max(name_w, o.node_name.size());
    op_w = std::max(op_w, o.op_type.size());
    device_w = std::max(device_w, o.device.size());
  }
  const int nw = static_cast<int>(std::min<size_t>(name_w, 40)), ow = static_cast<int>(op_w),
            dw = static_cast<int>(device_w);
  std::snprintf(line, sizeof line, "%-*s  %-*s  %-*s  %-5s  %-8s  %10s  %6s\n", nw, "node", ow, "op", dw, "device",
                "dtype", "bound", "ms", "%");
  out += line;
  for (const SimOpRow& o : r.ops) {
    std::snprintf(line, sizeof line, "%-*.*s  %-*s  %-*s  %-5s  %-8s  %10.4f  %6.2f", nw, nw, o.node_name.c_str(), ow,
                  o.op_type.c_str(), dw, o.device.c_str(), o.dtype.c_str(), o.bound.c_str(), o.time_ms,
                  r.total_ms > 0 ? 100 * o.time_ms / r.total_ms : 0.0);
    out += line;
    if (!o.fused_into.empty()) out += "  fused into " + o.fused_into;
    if (o.fell_back) out += "  fell back: " + o.reason;
    out += "\n";
  }
  return out;
}

}  // namespace xnn::sim
