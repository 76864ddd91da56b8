// One printf-style number in a progress line ("%.2f%%", "%.3fms"): the searches' logs share it.
#pragma once
#include <cstdio>
#include <string>

namespace xnn::nas {

inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace xnn::nas
