// Runtime ISA dispatch. Every kernel has a scalar path that is always built and tested; an
// ISA-specific path (AVX2+FMA here, NEON behind __aarch64__ guards) is chosen at run time from
// cpuid. XNN_ISA=scalar in the environment forces the scalar paths (tests run both); XNN_ISA=avx2
// keeps AVX2 but turns off the AVX-VNNI int8 kernels.
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
// Whether the AVX-VNNI kernels (vpdpbusd on ymm; int8 GEMM) may run: the CPU has AVX-VNNI, AVX2
// is the chosen ISA and XNN_ISA does not cap it (XNN_ISA=avx2 keeps the plain AVX2 kernels, to
// measure or test what a CPU without VNNI runs). An extension of the AVX2 level, not an Isa:
// only the int8 GEMM has VNNI kernels.
bool avx_vnni_enabled();
// Whether `isa` can run here.
bool isa_supported(Isa isa);
std::string_view isa_name(Isa isa);  // "scalar", "avx2"

}  // namespace xnn::kernels
