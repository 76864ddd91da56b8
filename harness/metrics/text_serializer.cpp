#include "harness/metrics/text_serializer.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <sstream>
#include <system_error>

namespace xnn::metrics {

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // The shortest digits that read back to the same double; plain decimals for magnitudes in
  // [1e-6, 1e21) (timestamps, byte counts and small latencies stay readable), exponent otherwise.
  char buf[512];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  if (res.ec != std::errc() || res.ptr == buf + sizeof(buf)) return "NaN";
  *res.ptr = '\0';  // for atoi
  const char* e = std::find(buf, res.ptr, 'e');
  const int exponent = e == res.ptr ? 0 : std::atoi(e + 1);
  if (value == 0 || (exponent >= -6 && exponent < 21)) {
    res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
    if (res.ec != std::errc()) return "NaN";
  }
  return std::string(buf, res.ptr);
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Untyped: break;
  }
  return "untyped";
}

// {a="1",b="2"} plus an optional extra label (le) last; nothing when there are no labels.
void write_labels(std::ostream& out, const std::vector<ClientMetric::Label>& labels, const char* extra_name = nullptr,
                  const std::string& extra_value = "") {
  if (labels.empty() && !extra_name) return;
  out << '{';
  bool first = true;
  for (const auto& l : labels) {
    if (!first) out << ',';
    first = false;
    out << l.name << "=\"" << EscapeLabelValue(l.value) << '"';
  }
  if (extra_name) {
    if (!first) out << ',';
    out << extra_name << "=\"" << EscapeLabelValue(extra_value) << '"';
  }
  out << '}';
}

void write_sample(std::ostream& out, const std::string& name, const ClientMetric& m, double value) {
  out << name;
  write_labels(out, m.label);
  out << ' ' << FormatValue(value) << '\n';
}

}  // namespace

void TextSerializer::Serialize(std::ostream& out, const std::vector<MetricFamily>& metrics) const {
  for (const MetricFamily& f : metrics) {
    if (f.metric.empty()) continue;
    out << "# HELP " << f.name << ' ' << EscapeHelp(f.help) << '\n';
    out << "# TYPE " << f.name << ' ' << type_name(f.type) << '\n';
    for (const ClientMetric& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter: write_sample(out, f.name, m, m.counter.value); break;
        case MetricType::Gauge: write_sample(out, f.name, m, m.gauge.value); break;
        case MetricType::Untyped: write_sample(out, f.name, m, m.untyped.value); break;
        case MetricType::Histogram: {
          bool wrote_inf = false;
          for (const auto& b : m.histogram.bucket) {
            out << f.name << "_bucket";
            write_labels(out, m.label, "le", FormatValue(b.upper_bound));
            out << ' ' << b.cumulative_count << '\n';
            wrote_inf = wrote_inf || std::isinf(b.upper_bound);
          }
          if (!wrote_inf) {  // a hand-built family without +Inf: the format requires it
            out << f.name << "_bucket";
            write_labels(out, m.label, "le", "+Inf");
            out << ' ' << m.histogram.sample_count << '\n';
          }
          out << f.name << "_sum";
          write_labels(out, m.label);
          out << ' ' << FormatValue(m.histogram.sample_sum) << '\n';
          out << f.name << "_count";
          write_labels(out, m.label);
          out << ' ' << m.histogram.sample_count << '\n';
          break;
        }
      }
    }
  }
}

std::string TextSerializer::Serialize(const std::vector<MetricFamily>& metrics) const {
  std::ostringstream out;
  Serialize(out, metrics);
  return out.str();
}

}  // namespace xnn::metrics
