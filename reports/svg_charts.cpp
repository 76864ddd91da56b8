#include "reports/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace xnn::reports {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string strf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

namespace {

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string tick_text(double v) {
  std::string s = strf("%.6g", v);
  return s;
}

// Shortens a label for display; the full text stays in the tooltip.
std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

struct Range {
  double lo, hi;
};

Range padded_range(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo) * 0.1, 1e-3);
    return {lo - pad, hi + pad};
  }
  const double pad = (hi - lo) * 0.12;
  return {lo - pad, hi + pad};
}

}  // namespace

std::string scatter_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                        const std::vector<ScatterPoint>& points) {
  const double W = 600, H = 380, L = 70, R = 30, T = 34, B = 56;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const ScatterPoint& p : points) {
    xmin = std::min(xmin, p.x), xmax = std::max(xmax, p.x);
    ymin = std::min(ymin, p.y), ymax = std::max(ymax, p.y);
  }
  if (points.empty()) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  const Range xr = padded_range(xmin, xmax), yr = padded_range(ymin, ymax);
  auto sx = [&](double x) { return L + (x - xr.lo) / (xr.hi - xr.lo) * (W - L - R); };
  auto sy = [&](double y) { return H - B - (y - yr.lo) / (yr.hi - yr.lo) * (H - T - B); };
  std::string s = strf("<svg class=\"chart scatter\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
                       W, H, W, H);
  s += "<title>" + html_escape(title) + "</title>\n";
  s += strf("<text class=\"ctitle\" x=\"%.1f\" y=\"20\" text-anchor=\"middle\">%s</text>\n", W / 2, html_escape(title).c_str());
  // Grid and ticks.
  for (double t : nice_ticks(xr.lo, xr.hi, 6)) {
    const double x = sx(t);
    s += strf("<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, T, x, H - B);
    s += strf("<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, H - B + 16, tick_text(t).c_str());
  }
  for (double t : nice_ticks(yr.lo, yr.hi, 5)) {
    const double y = sy(t);
    s += strf("<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", L, y, W - R, y);
    s += strf("<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 6, y + 4, tick_text(t).c_str());
  }
  s += strf("<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", L, H - B, W - R, H - B);
  s += strf("<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", L, T, L, H - B);
  s += strf("<text class=\"alabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2, H - 14,
            html_escape(x_label).c_str());
  s += strf("<text class=\"alabel\" transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
            (T + H - B) / 2, html_escape(y_label).c_str());
  // The Pareto front as a staircase through the front points in x order.
  std::vector<const ScatterPoint*> front;
  for (const ScatterPoint& p : points) {
    if (p.highlight) front.push_back(&p);
  }
  std::sort(front.begin(), front.end(), [](const ScatterPoint* a, const ScatterPoint* b) {
    return a->x != b->x ? a->x < b->x : a->y < b->y;
  });
  if (front.size() >= 2) {
    std::string d = strf("M%.1f %.1f", sx(front[0]->x), sy(front[0]->y));
    for (size_t i = 1; i < front.size(); ++i) d += strf(" H%.1f V%.1f", sx(front[i]->x), sy(front[i]->y));
    s += "<path class=\"front\" d=\"" + d + "\"><title>Pareto front</title></path>\n";
  }
  for (const ScatterPoint& p : points) {
    const double x = sx(p.x), y = sy(p.y);
    s += strf("<circle class=\"pt%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" data-job=\"%s\"><title>%s</title></circle>", p.highlight ? " front" : "",
              x, y, p.highlight ? 7 : 5, html_escape(p.job_id).c_str(), html_escape(p.tooltip).c_str());
    s += strf("<text class=\"plabel\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 9, y - 7, html_escape(clip(p.label, 28)).c_str());
  }
  return s + "</svg>\n";
}

std::string bar_chart_svg(const std::string& title, const std::vector<Bar>& bars) {
  const double W = 680, L = 250, R = 110, T = 30, row = 24;
  const double H = T + row * static_cast<double>(bars.size()) + 10;
  double vmax = 0;
  for (const Bar& b : bars) vmax = std::max(vmax, b.value);
  std::string s = strf("<svg class=\"chart bars\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H, W, H);
  s += "<title>" + html_escape(title) + "</title>\n";
  s += strf("<text class=\"ctitle\" x=\"%.1f\" y=\"18\" text-anchor=\"middle\">%s</text>\n", W / 2, html_escape(title).c_str());
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = T + row * static_cast<double>(i);
    const double w = vmax > 0 ? std::max(1.0, b.value / vmax * (W - L - R)) : 1.0;
    s += strf("<text class=\"blabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", L - 8, y + 15,
              html_escape(clip(b.label, 36)).c_str());
    s += strf("<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>", L, y + 3, w,
              row - 6, kPalette[i % 10], html_escape(b.tooltip).c_str());
    s += strf("<text class=\"bvalue\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", L + w + 6, y + 15, html_escape(b.value_text).c_str());
  }
  return s + "</svg>\n";
}

std::string stacked_bar_svg(const std::string& title, const std::vector<Segment>& segments) {
  const double W = 680, L = 10, R = 10, T = 28, bar_h = 26, legend_row = 18;
  const double H = T + bar_h + 12 + legend_row * static_cast<double>(segments.size()) + 6;
  double total = 0;
  for (const Segment& g : segments) total += std::max(0.0, g.value);
  std::string s = strf("<svg class=\"chart stacked\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H, W, H);
  s += "<title>" + html_escape(title) + "</title>\n";
  s += strf("<text class=\"ctitle\" x=\"%.1f\" y=\"18\">%s</text>\n", L, html_escape(title).c_str());
  double x = L;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& g = segments[i];
    const double w = total > 0 ? std::max(0.0, g.value) / total * (W - L - R) : 0;
    s += strf("<rect class=\"seg\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>\n", x, T,
              std::max(w, 0.5), bar_h, kPalette[i % 10], html_escape(g.tooltip).c_str());
    x += w;
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const double y = T + bar_h + 12 + legend_row * static_cast<double>(i);
    s += strf("<rect class=\"key\" x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\"/>", L, y, kPalette[i % 10]);
    s += strf("<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", L + 17, y + 10, html_escape(segments[i].label).c_str());
  }
  return s + "</svg>\n";
}

std::string line_chart_svg(const std::string& title, const std::string& y_label, const std::vector<double>& values,
                           const std::string& value_format) {
  const double W = 340, H = 220, L = 58, R = 16, T = 30, B = 44;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (std::isnan(v)) continue;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(hi >= lo)) lo = 0, hi = 1;
  const Range yr = padded_range(lo, hi);
  const double n = static_cast<double>(std::max<size_t>(values.size(), 1));
  auto sx = [&](double i) { return n <= 1 ? (L + W - R) / 2 : L + (i - 1) / (n - 1) * (W - L - R); };
  auto sy = [&](double y) { return H - B - (y - yr.lo) / (yr.hi - yr.lo) * (H - T - B); };
  std::string s = strf("<svg class=\"chart curve\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H, W, H);
  s += "<title>" + html_escape(title) + "</title>\n";
  s += strf("<text class=\"ctitle\" x=\"%.1f\" y=\"18\" text-anchor=\"middle\">%s</text>\n", W / 2, html_escape(title).c_str());
  for (double t : nice_ticks(yr.lo, yr.hi, 4)) {
    s += strf("<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", L, sy(t), W - R, sy(t));
    s += strf("<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 5, sy(t) + 4, tick_text(t).c_str());
  }
  const size_t every = values.size() > 12 ? (values.size() + 11) / 12 : 1;
  for (size_t i = 1; i <= values.size(); i += every) {
    s += strf("<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>", sx(static_cast<double>(i)), H - B + 15, i);
  }
  s += strf("<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", L, H - B, W - R, H - B);
  s += strf("<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", L, T, L, H - B);
  s += strf("<text class=\"alabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n", (L + W - R) / 2, H - 10);
  s += strf("<text class=\"alabel\" transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", (T + H - B) / 2,
            html_escape(y_label).c_str());
  std::string points;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    points += strf("%s%.1f,%.1f", points.empty() ? "" : " ", sx(static_cast<double>(i + 1)), sy(values[i]));
  }
  if (!points.empty()) s += "<polyline class=\"line\" points=\"" + points + "\"/>\n";
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    const std::string v = strf(value_format.c_str(), values[i]);
    s += strf("<circle class=\"lpt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>epoch %zu: %s</title></circle>\n",
              sx(static_cast<double>(i + 1)), sy(values[i]), i + 1, html_escape(v).c_str());
  }
  return s + "</svg>\n";
}

}  // namespace xnn::reports
