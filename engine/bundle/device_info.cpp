#include "engine/bundle/device_info.h"

#include <sched.h>
#include <unistd.h>

#include <thread>

#include "engine/kernels/cpu_features.h"

namespace xnn {

std::string_view bundle_isa_name(BundleIsa isa) {
  switch (isa) {
    case BundleIsa::kScalar: return "scalar";
    case BundleIsa::kAvx2: return "avx2";
    case BundleIsa::kAvx512: return "avx512";
    case BundleIsa::kNeon: return "neon";
  }
  return "?";
}

bool parse_bundle_isa(std::string_view name, BundleIsa& out) {
  for (BundleIsa isa : {BundleIsa::kScalar, BundleIsa::kAvx2, BundleIsa::kAvx512, BundleIsa::kNeon}) {
    if (bundle_isa_name(isa) == name) {
      out = isa;
      return true;
    }
  }
  return false;
}

bool DeviceInfo::supports(BundleIsa isa) const {
  switch (isa) {
    case BundleIsa::kScalar: return true;
    case BundleIsa::kAvx2: return avx2;
    case BundleIsa::kAvx512: return avx512;
    case BundleIsa::kNeon: return neon;
  }
  return false;
}

std::string DeviceInfo::describe() const {
  std::string isas = "scalar";
  if (avx2) isas += " avx2";
  if (avx512) isas += " avx512";
  if (neon) isas += " neon";
  std::string s = isas + ", " + std::to_string(logical_cores) + " logical cores, " + std::to_string(memory_mib) +
                  " MiB";
  if (!device_class.empty()) s += ", class '" + device_class + "'";
  return s;
}

DeviceInfo detect_device() {
  DeviceInfo d;
  const bool engine_vectorised = kernels::best_isa() != kernels::Isa::kScalar;
  d.avx2 = engine_vectorised && kernels::isa_supported(kernels::Isa::kAvx2);
  d.avx512 = engine_vectorised && kernels::cpu_features().avx512f;
#if defined(__aarch64__)
  d.neon = true;
#endif
  // The affinity mask, not the machine's core count: a container or taskset may allow fewer.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    d.logical_cores = CPU_COUNT(&set);
  } else {
    d.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  }
  if (d.logical_cores < 1) d.logical_cores = 1;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    d.memory_mib = static_cast<int64_t>(pages) * page_size / (1024 * 1024);
  }
  return d;
}

}  // namespace xnn
