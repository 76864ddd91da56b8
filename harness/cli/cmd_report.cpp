// xnn-lab report [--db FILE] [--experiment NAME] [--run SEL] [--baseline SEL] [--policy FILE]
//                [--format html|md] [--top-ops N] -o FILE
// One self-contained HTML file (or Markdown for CI summaries) from the results store; the
// library is reports/ (sections and the screenshot: reports/README.md).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "reports/html_report.h"
#include "reports/markdown_report.h"
#include "reports/report_data.h"

namespace xnn::cli {

void add_report_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("report", "Write a self-contained HTML (or Markdown) report of a run from the results store");
  static reports::ReportOptions opts;
  static std::string out_path, format;
  static size_t top_ops = 8;
  cmd->add_option("--db", opts.db, "SQLite database (default ./xnn-lab.db)");
  cmd->add_option("--experiment", opts.experiment, "Report on this experiment (default: the whole database)");
  cmd->add_option("--run", opts.run,
                  "Run id (or unique prefix), latest, commit:SHA or tag:NAME (default: the latest FINISHED run)");
  cmd->add_option("--baseline", opts.baseline,
                  "Compare with this run as `xnn-lab gate` does: run id, commit:SHA, tag:NAME or FILE.db:RUN");
  cmd->add_option("--policy", opts.policy, "Gate policy (YAML) for the baseline comparison (default: built-in)");
  cmd->add_option("--format", format, "html or md (default: md for an -o ending in .md, else html)")
      ->check(CLI::IsMember({"html", "md"}));
  cmd->add_option("--top-ops", top_ops, "Slowest ops shown per job in the per-op breakdown (default 8)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", out_path, "Output file ('-' for standard output)")->required();
  cmd->callback([&exit_code] {
    opts.top_ops = top_ops;
    std::string fmt = format;
    if (fmt.empty()) {
      const std::string ext = std::filesystem::path(out_path).extension().string();
      fmt = (ext == ".md" || ext == ".markdown") ? "md" : "html";
    }
    const reports::ReportData data = reports::gather_report(opts);
    const std::string text = fmt == "md" ? reports::render_markdown(data) : reports::render_html(data);
    if (out_path == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::ofstream f(out_path, std::ios::binary | std::ios::trunc);
      if (!f) throw Error(out_path + ": cannot write the report (does the folder exist, is it writable?)");
      f << text;
      f.close();
      if (!f) throw Error(out_path + ": writing the report failed");
      std::fprintf(stderr, "report: %s (%s, run %s, %zu jobs%s)\n", out_path.c_str(), fmt.c_str(), data.run.id.c_str(),
                   data.jobs.size(), data.baseline ? ", with baseline" : "");
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
