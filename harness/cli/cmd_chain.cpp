// xnn-lab chain PIPELINE.yaml -o BUNDLE.xnn: several models composed into one graph (plain
// calls, If on a gate's score, a loop over slices), written as one .xnn file.
#include <cstdio>

#include "engine/format/xnn_format.h"
#include "harness/chain/compose.h"
#include "harness/cli/commands.h"

namespace xnn::cli {
namespace {

void print_io(const char* kind, const Graph& g, const std::vector<int>& values) {
  for (int i : values) {
    const Value& v = g.value(i);
    std::printf("  %-6s %-24s %s %s\n", kind, v.name.c_str(), std::string(dtype_name(v.dtype)).c_str(),
                dims_str(v.shape).c_str());
  }
}

}  // namespace

void add_chain_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("chain", "Compose several models into one .xnn bundle (pipeline YAML: configs/chain/README.md)");
  static std::string pipeline_path, out_path;
  cmd->add_option("pipeline", pipeline_path, "Pipeline file (.yaml)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", out_path, "Bundle to write (.xnn)")->required();
  cmd->callback([&exit_code] {
    if (out_path.size() < 4 || out_path.substr(out_path.size() - 4) != ".xnn") {
      throw Error("chain: the bundle is written as .xnn, got '" + out_path + "'");
    }
    const chain::PipelineSpec spec = chain::load_pipeline(pipeline_path);
    const Model bundle = chain::compose_pipeline(spec);
    save_xnn(bundle, out_path);
    std::printf("%s: %zu models, %zu steps -> %s (%zu nodes)\n", pipeline_path.c_str(), spec.models.size(),
                spec.steps.size(), out_path.c_str(), bundle.graph.nodes.size());
    print_io("input", bundle.graph, bundle.graph.inputs);
    print_io("output", bundle.graph, bundle.graph.outputs);
    exit_code = 0;
  });
}

}  // namespace xnn::cli
