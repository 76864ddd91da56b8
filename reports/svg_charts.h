// Inline SVG charts for the HTML report, drawn here in C++ (no chart library, nothing fetched
// when the report is viewed). Every label and tooltip goes through html_escape; tooltips are SVG
// <title> elements, which browsers show on hover. Elements carry classes the report's CSS styles
// and its end-to-end test looks for (circle.pt, circle.pt.front, rect.bar, rect.seg, ...).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace xnn::reports {

// &, <, >, " and ' as character references: safe in element content and quoted attributes.
std::string html_escape(const std::string& s);

// Printf-style formatting into a std::string.
std::string strf(const char* format, ...) __attribute__((format(printf, 1, 2)));

// "Nice" axis ticks (1, 2, 5 x 10^k steps) covering [lo, hi], about `count` of them.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;    // shown next to the point
  std::string tooltip;  // <title>
  bool highlight = false;  // on the Pareto front
  std::string job_id;      // data-job attribute (the report's script links points and table rows)
};

// Scatter with axes, ticks and axis labels. Highlighted points are drawn as front points and
// joined, in x order, by a step line (the Pareto front).
std::string scatter_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                        const std::vector<ScatterPoint>& points);

struct Bar {
  std::string label;
  double value = 0;
  std::string value_text;  // printed at the bar's end
  std::string tooltip;
};

// Horizontal bars, one per row, scaled to the largest value.
std::string bar_chart_svg(const std::string& title, const std::vector<Bar>& bars);

struct Segment {
  std::string label;
  double value = 0;
  std::string tooltip;
};

// One horizontal bar split into segments proportional to their values (an op breakdown), with
// a legend below; colours cycle through a fixed palette.
std::string stacked_bar_svg(const std::string& title, const std::vector<Segment>& segments);

// A small line chart of a series over epochs 1..n with point markers.
std::string line_chart_svg(const std::string& title, const std::string& y_label, const std::vector<double>& values,
                           const std::string& value_format = "%.4g");

}  // namespace xnn::reports
