// Runtime ISA dispatch. Every kernel has a scalar path that is always built and tested; an
// ISA-specific path (AVX2+FMA here, NEON behind __aarch64__ guards) is chosen at run time from
// cpuid. XNN_ISA=scalar in the environment forces the scalar paths (tests run both).
#pragma once
#include <string_view>

namespace xnn::kernels {

enum class Isa { kScalar, kAvx2 };

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx_vnni = false;
};

// What this CPU (and OS: XSAVE state for YMM) supports. Read once.
const CpuFeatures& cpu_features();
// The best ISA this CPU supports, unless XNN_ISA (scalar|avx2) selects a lower one.
Isa best_isa();
// Whether `isa` can run here.
bool isa_supported(Isa isa);
std::string_view isa_name(Isa isa);  // "scalar", "avx2"

}  // namespace xnn::kernels
