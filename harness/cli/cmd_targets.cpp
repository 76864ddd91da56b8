// xnn-lab targets [--json]: the targets an experiment can name -- this machine's CPU (measured
// for real) and every simulated device profile (sim:<profile>, configs/devices/ or
// $XNN_DEVICES_DIR) with its key figures.
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "harness/cli/commands.h"
#include "harness/sim/device_profile.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

std::vector<std::string> cpu_feature_names() {
  const kernels::CpuFeatures& f = kernels::cpu_features();
  std::vector<std::string> out;
  if (f.avx2) out.push_back("avx2");
  if (f.fma) out.push_back("fma");
  if (f.f16c) out.push_back("f16c");
  if (f.avx512f) out.push_back("avx512f");
  if (f.avx_vnni) out.push_back("avx_vnni");
  return out;
}

std::string rate_or_dash(double giga, const char* unit) { return giga > 0 ? sim::format_rate(giga, unit) : "-"; }

}  // namespace

void add_targets_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("targets", "List the targets experiments can use: this CPU and simulated devices");
  static bool as_json = false;
  cmd->add_flag("--json", as_json, "Print a JSON array, one object per target");
  cmd->footer("Simulated profiles come from $XNN_DEVICES_DIR (if set), then the repository's configs/devices/;\n"
              "fields and the cost model: configs/devices/README.md. Use them as `kind: sim:<profile>`.");
  cmd->callback([&exit_code] {
    const std::vector<sim::DeviceProfile> profiles = sim::list_device_profiles();
    const int hw_threads = static_cast<int>(std::thread::hardware_concurrency());
    const std::string isa(kernels::isa_name(kernels::best_isa()));
    const std::vector<std::string> features = cpu_feature_names();
    if (as_json) {
      json::Writer w;
      w.begin_array();
      w.begin_object().field("kind", "cpu").field("simulated", false).field("cpu_model", cpu_model_name());
      w.field("cores", hw_threads).field("isa", isa);
      w.key("features").begin_array();
      for (const std::string& f : features) w.value(f);
      w.end_array();
      w.field("numerics", "fp32").end_object();
      for (const sim::DeviceProfile& p : profiles) {
        w.begin_object().field("kind", "sim:" + p.name).field("simulated", true);
        w.key("profile").raw(sim::device_profile_json(p));
        w.end_object();
      }
      w.end_array();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("%-26s %-5s %5s %14s %14s %14s %11s %-8s %s\n", "KIND", "TYPE", "CORES", "PEAK FP32", "PEAK FP16",
                  "PEAK INT8", "BANDWIDTH", "NUMERICS", "HOST / DESCRIPTION");
      std::string feat;
      for (const std::string& f : features) {
        if (!feat.empty()) feat += ' ';
        feat += f;
      }
      std::printf("%-26s %-5s %5d %14s %14s %14s %11s %-8s %s\n", "cpu", "real", hw_threads, "measured", "measured",
                  "measured", "measured", "fp32",
                  ("this machine: " + cpu_model_name() + ", kernels " + isa + " (" + feat + ")").c_str());
      for (const sim::DeviceProfile& p : profiles) {
        char bw[32];
        std::snprintf(bw, sizeof(bw), "%.4g GB/s", p.memory_bandwidth_gbps);
        const std::string host_desc = (p.host.empty() ? "" : "host " + p.host + "; ") + p.description;
        std::printf("%-26s %-5s %5d %14s %14s %14s %11s %-8s %s\n", ("sim:" + p.name).c_str(), p.kind.c_str(), p.cores,
                    rate_or_dash(p.peak_fp32_gflops, "FLOP/s").c_str(), rate_or_dash(p.peak_fp16_gflops, "FLOP/s").c_str(),
                    rate_or_dash(p.peak_int8_gops, "OP/s").c_str(), bw, p.numerics.c_str(), host_desc.c_str());
      }
      std::printf("\n%zu simulated profiles; use a kind above in an experiment's targets (e.g. targets: [cpu, sim:%s])\n",
                  profiles.size(), profiles.empty() ? "<profile>" : profiles.front().name.c_str());
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
