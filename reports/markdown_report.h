// The Markdown report, for CI summaries ($GITHUB_STEP_SUMMARY) and PR comments: the run, the
// summary table, the Pareto front per target, training results, and the baseline verdicts (the
// gate's). Strings from the store are escaped for table cells: '|' as "\|", and <, >, & as
// character references, so a model name can never inject HTML into a rendered summary.
#pragma once
#include <string>

#include "reports/report_data.h"

namespace xnn::reports {

// Text safe inside a Markdown table cell (and in running text); "-" for an empty string.
std::string md_escape(const std::string& s);

std::string render_markdown(const ReportData& data);

}  // namespace xnn::reports
