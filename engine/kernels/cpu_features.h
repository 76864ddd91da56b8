// Runtime ISA dispatch. Every kernel has a scalar path that is always built and tested; an
// ISA-specific path (AVX2+FMA here, NEON behind __aarch64__ guards) is chosen at run time from
// cpuid. XNN_ISA=scalar in the environment forces the scalar paths (tests run both); XNN_ISA=avx2
// keeps AVX2 but turns off the VNNI int8 kernels.
#pragma once
#include <string_view>

namespace xnn::kernels {

enum class Isa { kScalar, kAvx2 };

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;      // the cpuid bit alone
  bool avx512 = false;       // AVX-512 usable as the *_avx512.cpp kernels use it: F, VL (EVEX on
                             // ymm, 32 registers) and BW (byte/word ops, masks), with AVX2 and the
                             // OS saving opmask/ZMM state; every AVX-512 CPU since Skylake-X
  bool avx_vnni = false;     // VEX vpdpbusd (AVX-VNNI: Alder Lake, Sapphire Rapids, Zen 5)
  bool avx512_vnni = false;  // EVEX vpdpbusd: AVX512-VNNI with avx512 (Cascade Lake, Ice Lake,
                             // Sapphire Rapids, Zen 4); on ymm the same operation as avx_vnni, on
                             // zmm twice as wide
  bool avx512_vbmi = false;  // VPERMB (byte permutes across a register): Ice Lake, Zen 4; not
                             // Cascade Lake
};

// What this CPU (and OS: XSAVE state for YMM) supports. Read once.
const CpuFeatures& cpu_features();
// The best ISA this CPU supports, unless XNN_ISA (scalar|avx2) selects a lower one.
Isa best_isa();
// Whether the CPU can run vpdpbusd on ymm registers in either encoding (avx_vnni or avx512_vnni).
bool cpu_has_vnni();
// Whether the VNNI kernels (vpdpbusd on ymm; int8 GEMM) may run: the CPU has AVX-VNNI or
// AVX512-VNNI+VL, AVX2 is the chosen ISA and XNN_ISA does not cap it (XNN_ISA=avx2 keeps the
// plain AVX2 kernels, to measure or test what a CPU without VNNI runs). An extension of the AVX2
// level, not an Isa: only the int8 GEMM has VNNI kernels.
bool vnni_enabled();
// Whether the 512-bit VNNI int8 GEMM (vpdpbusd on zmm) may run: avx512_enabled() and avx512_vnni
// (its epilogue also needs BW: saturating narrows and byte-masked stores).
bool vnni512_enabled();
// Whether AVX-512 kernels may run: the CPU has usable AVX-512F, AVX2 is the chosen ISA and
// XNN_ISA does not cap it (the same cap as vnni_enabled).
bool avx512_enabled();
// Whether `isa` can run here.
bool isa_supported(Isa isa);
std::string_view isa_name(Isa isa);  // "scalar", "avx2"

}  // namespace xnn::kernels
