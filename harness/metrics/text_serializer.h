// Prometheus text exposition format 0.0.4 (what /metrics serves, what the Pushgateway and
// node_exporter's textfile collector read). prometheus-cpp's TextSerializer, same signatures.
//
// Per family with at least one sample:
//   # HELP <name> <help, with \ and newline escaped>
//   # TYPE <name> counter|gauge|histogram|untyped
//   <name>{<label>="<value, with \ " and newline escaped>",...} <value>
// Histograms write cumulative <name>_bucket{...,le="<bound>"} lines ending with le="+Inf"
// (equal to _count), then <name>_sum and <name>_count. Values use the shortest text that reads
// back to the same double (plain decimals from 1e-6 to 1e21, else with an exponent); NaN, +Inf
// and -Inf are written as such. No timestamps (the textfile
// collector and the Pushgateway refuse them).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/metrics/registry.h"

namespace xnn::metrics {

class TextSerializer {
 public:
  std::string Serialize(const std::vector<MetricFamily>& metrics) const;
  void Serialize(std::ostream& out, const std::vector<MetricFamily>& metrics) const;
};

// The Content-Type of the format, for HTTP responses and pushes.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Building blocks, exposed for tests: a sample value ("0.25", "3", "NaN", "+Inf"), a HELP text
// and a label value escaped as the format requires.
std::string FormatValue(double value);
std::string EscapeHelp(const std::string& help);
std::string EscapeLabelValue(const std::string& value);

}  // namespace xnn::metrics
