// Each xnn-lab subcommand lives in its own file and registers itself on the app. A command's
// callback stores its exit code in `exit_code`; errors propagate as xnn::Error and are
// reported by main() (exit 1), usage errors by CLI11 (exit 2).
#pragma once
#include <CLI/CLI.hpp>

namespace xnn::cli {

void add_convert_command(CLI::App& app, int& exit_code);
void add_infer_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_conformance_command(CLI::App& app, int& exit_code);
void add_eval_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_list_command(CLI::App& app, int& exit_code);
void add_show_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);
void add_train_command(CLI::App& app, int& exit_code);
void add_gate_command(CLI::App& app, int& exit_code);
void add_import_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_protect_command(CLI::App& app, int& exit_code);
void add_calibrate_command(CLI::App& app, int& exit_code);
void add_predict_command(CLI::App& app, int& exit_code);
void add_targets_command(CLI::App& app, int& exit_code);
void add_chain_command(CLI::App& app, int& exit_code);
void add_bundle_command(CLI::App& app, int& exit_code);
void add_quantize_command(CLI::App& app, int& exit_code);
void add_prune_command(CLI::App& app, int& exit_code);  // cmd_prune.cpp
void add_encode_command(CLI::App& app, int& exit_code);  // cmd_encode.cpp
void add_study_command(CLI::App& app, int& exit_code);  // cmd_study.cpp
void add_nas_command(CLI::App& app, int& exit_code);  // cmd_nas.cpp
void add_compress_command(CLI::App& app, int& exit_code);  // cmd_compress.cpp

}  // namespace xnn::cli
