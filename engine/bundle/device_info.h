// The capabilities a bundle's runtime policy is matched against (engine/bundle/bundle_policy.h):
// which ISAs the engine can use here, how many logical cores the process may run on, how much
// physical memory the machine has, and an optional device class name chosen by the host app
// (e.g. "low_end" from its own device list).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace xnn {

// Instruction sets a policy rule can require. kScalar is met by every device.
enum class BundleIsa { kScalar, kAvx2, kAvx512, kNeon };
std::string_view bundle_isa_name(BundleIsa isa);  // "scalar", "avx2", "avx512", "neon"
// Parses one of those names; false for anything else.
bool parse_bundle_isa(std::string_view name, BundleIsa& out);

struct DeviceInfo {
  bool avx2 = false;    // AVX2 + FMA usable by the engine's kernels
  bool avx512 = false;  // AVX-512F
  bool neon = false;    // AArch64 Advanced SIMD
  int logical_cores = 1;
  int64_t memory_mib = 0;
  std::string device_class;  // given by the host app; empty: none

  bool supports(BundleIsa isa) const;
  // "avx2 avx512, 8 logical cores, 15872 MiB, class 'flagship'"
  std::string describe() const;
};

// This machine: ISAs as the engine dispatches them (XNN_ISA=scalar turns avx2/avx512 off, since
// the engine then runs scalar kernels), the cores in this process's CPU affinity mask, physical
// memory. device_class stays empty: only the host app knows it.
DeviceInfo detect_device();

}  // namespace xnn
