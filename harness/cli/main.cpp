// xnn-lab: the command-line entry point. Wires the subcommands; knows no engine internals.
#include <cstdio>
#include <exception>

#include "engine/core/error.h"
#include "harness/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"xnn-lab: convert, run, compress, search and measure neural networks for on-device targets"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "xnn-lab 0.1.0");
  int exit_code = 0;
  xnn::cli::add_convert_command(app, exit_code);
  xnn::cli::add_infer_command(app, exit_code);
  xnn::cli::add_bench_command(app, exit_code);
  xnn::cli::add_inspect_command(app, exit_code);
  xnn::cli::add_conformance_command(app, exit_code);
  xnn::cli::add_eval_command(app, exit_code);
  xnn::cli::add_run_command(app, exit_code);
  xnn::cli::add_list_command(app, exit_code);
  xnn::cli::add_show_command(app, exit_code);
  xnn::cli::add_compare_command(app, exit_code);
  xnn::cli::add_export_command(app, exit_code);
  xnn::cli::add_train_command(app, exit_code);
  xnn::cli::add_gate_command(app, exit_code);
  xnn::cli::add_import_command(app, exit_code);
  xnn::cli::add_serve_command(app, exit_code);
  xnn::cli::add_report_command(app, exit_code);
  xnn::cli::add_protect_command(app, exit_code);
  xnn::cli::add_calibrate_command(app, exit_code);
  xnn::cli::add_predict_command(app, exit_code);
  xnn::cli::add_targets_command(app, exit_code);
  xnn::cli::add_chain_command(app, exit_code);
  xnn::cli::add_bundle_command(app, exit_code);
  xnn::cli::add_quantize_command(app, exit_code);
  xnn::cli::add_prune_command(app, exit_code);
  xnn::cli::add_encode_command(app, exit_code);
  xnn::cli::add_study_command(app, exit_code);
  xnn::cli::add_nas_command(app, exit_code);
  xnn::cli::add_compress_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const xnn::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
