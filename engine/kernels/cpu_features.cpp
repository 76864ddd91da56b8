#include "engine/kernels/cpu_features.h"

#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace xnn::kernels {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  bool ymm_enabled = false, zmm_enabled = false;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    ymm_enabled = (lo & 0x6) == 0x6;    // XMM and YMM state saved by the OS
    zmm_enabled = (lo & 0xe6) == 0xe6;  // also opmask and ZMM state: EVEX code may run
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = avx && ymm_enabled && (b & (1u << 5));
    f.avx512f = b & (1u << 16);
    const bool avx512vl = b & (1u << 31), avx512bw = b & (1u << 30), avx512vnni = c & (1u << 11);
    f.avx512 = f.avx2 && zmm_enabled && f.avx512f && avx512vl && avx512bw;
    f.avx512_vnni = f.avx512 && avx512vnni;
    f.avx512_vbmi = f.avx512 && (c & (1u << 1));
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx_vnni = ymm_enabled && (a & (1u << 4));
  if (!ymm_enabled) f.fma = false;
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return cpu_features().avx2 && cpu_features().fma;
  }
  return false;
}

Isa best_isa() {
  static const Isa isa = [] {
    const char* env = std::getenv("XNN_ISA");
    if (env && std::string(env) == "scalar") return Isa::kScalar;
    return isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
  }();
  return isa;
}

bool cpu_has_vnni() { return cpu_features().avx_vnni || cpu_features().avx512_vnni; }

namespace {
// Whether kernels beyond plain AVX2 (VNNI, AVX-512) may run: AVX2 is the chosen ISA and XNN_ISA
// does not cap it at avx2 or scalar.
bool above_avx2_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("XNN_ISA");
    const bool capped = env && (std::string(env) == "avx2" || std::string(env) == "scalar");
    return !capped && best_isa() == Isa::kAvx2;
  }();
  return allowed;
}
}  // namespace

bool vnni_enabled() { return above_avx2_allowed() && cpu_has_vnni(); }

bool avx512_enabled() { return above_avx2_allowed() && cpu_features().avx512; }

bool vnni512_enabled() { return avx512_enabled() && cpu_features().avx512_vnni; }

std::string_view isa_name(Isa isa) { return isa == Isa::kAvx2 ? "avx2" : "scalar"; }

}  // namespace xnn::kernels
