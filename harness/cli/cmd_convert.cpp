// xnn-lab convert IN -o OUT [--qdq]: import (ONNX or .xnn), validate, write .xnn — or ONNX when OUT
// ends in .onnx (so .xnn models, optimised ones included, load in other tools). --qdq writes an
// int8 model in the QDQ form (compress/quantize/qdq_form.h) instead of its QOperator form.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "compress/quantize/qdq_form.h"
#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_export.h"
#include "engine/runtime/model_io.h"
#include "harness/cli/commands.h"

namespace xnn::cli {
namespace {

bool has_onnx_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".onnx";
}

}  // namespace

void add_convert_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "convert", "Convert a model: ONNX or .xnn in; .xnn out, or ONNX out when the output ends in .onnx");
  static std::string in, out;
  static bool qdq = false;
  cmd->add_option("input", in, "Input model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", out,
                  "Output file: .xnn, or .onnx for ONNX (our fused ops are written as standard ONNX ops)")
      ->required();
  cmd->add_flag("--qdq", qdq,
                "Write quantised operators in the QDQ form (DequantizeLinear -> float op -> QuantizeLinear, standard "
                "ONNX) instead of QLinear*/com.microsoft ops");
  cmd->callback([&exit_code] {
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<Model> model = load_model(in);
    if (qdq) {
      quantize::QdqStats stats;
      model = std::make_shared<Model>(quantize::to_qdq_form(*model, &stats));
      if (stats.converted == 0) throw Error(in + ": --qdq: the model has no quantised operator to rewrite");
      std::printf("QDQ form: %d quantised operators -> %d DequantizeLinear + %d QuantizeLinear around float ops\n",
                  stats.converted, stats.dequantize_nodes, stats.quantize_nodes);
    }
    if (has_onnx_extension(out)) {
      export_onnx_file(*model, out);
    } else {
      XnnSaveOptions opts;
      opts.extra_options["converted_from"] = std::filesystem::path(in).filename().string();
      opts.extra_options["converter"] = "xnn-lab 0.1.0";
      save_xnn(*model, out, opts);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("converted %s -> %s: %zu nodes, %lld parameters, %llu bytes, %.1f ms\n", in.c_str(), out.c_str(),
                model->graph.nodes.size(), static_cast<long long>(model->graph.parameter_count()),
                static_cast<unsigned long long>(std::filesystem::file_size(out)), ms);
    exit_code = 0;
  });
}

}  // namespace xnn::cli
