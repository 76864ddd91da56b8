// The HTML report: one self-contained file (inline CSS, inline SVG charts drawn in C++, and a
// small inline script for sortable tables and point/row highlighting; nothing is fetched when it
// is opened). Sections: summary, accuracy vs latency per target with the Pareto front, model
// size, per-op latency, training curves (runs of `xnn-lab train`), baseline comparison (gate
// verdicts), environment with the run's command and config. Every string from the store is
// HTML-escaped. The script sets <body data-ready="1"> when it has run, or data-error="..." when
// it failed (the end-to-end test checks both in headless Chromium).
#pragma once
#include <string>

#include "reports/report_data.h"

namespace xnn::reports {

std::string render_html(const ReportData& data);

}  // namespace xnn::reports
