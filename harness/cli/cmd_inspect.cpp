// xnn-lab inspect MODEL [--json] [--shape NAME=D0,D1,...]
#include <cstdio>
#include <filesystem>
#include <map>

#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/util/json.h"
#include "harness/cli/commands.h"
#include "harness/cli/key_option.h"

namespace xnn::cli {
namespace {

std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& args) {
  std::map<std::string, Shape> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--shape '" + a + "': expected NAME=D0,D1,...");
    Shape s;
    std::string dims = a.substr(eq + 1);
    size_t p = 0;
    while (p <= dims.size() && !dims.empty()) {
      const size_t c = dims.find(',', p);
      const std::string tok = dims.substr(p, c == std::string::npos ? std::string::npos : c - p);
      char* end = nullptr;
      const long long v = std::strtoll(tok.c_str(), &end, 10);
      if (tok.empty() || *end != '\0' || v < 0) throw Error("--shape '" + a + "': '" + tok + "' is not a dimension");
      s.push_back(v);
      if (c == std::string::npos) break;
      p = c + 1;
    }
    out[a.substr(0, eq)] = s;
  }
  return out;
}

void write_io_json(json::Writer& w, const Graph& g, const std::vector<int>& ids) {
  w.begin_array();
  for (int i : ids) {
    const Value& v = g.value(i);
    w.begin_object().field("name", v.name).field("dtype", std::string(dtype_name(v.dtype)));
    w.key("shape");
    if (v.has_shape) {
      w.begin_array();
      for (const Dim& d : v.shape) d.known() ? w.value(d.value) : w.value(d.symbol.empty() ? "?" : d.symbol);
      w.end_array();
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Show a model's inputs, outputs, ops, parameters and MACs");
  static std::string model_path;
  static bool as_json = false;
  static std::vector<std::string> shape_args;
  static int opt_level = 2;
  cmd->add_option("model", model_path, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", as_json, "Print one JSON object");
  cmd->add_option("--shape", shape_args, "Concrete input shape NAME=D0,D1,... for symbolic dims (default 1)");
  cmd->add_option("--opt-level", opt_level, "Optimisation level of the memory plan reported (0, 1, 2)")
      ->check(CLI::Range(0, 2));
  static std::string key_file;
  add_key_file_option(cmd, key_file);
  cmd->footer("A weights-only protected model (xnn-lab protect) is inspectable without --key-file: inputs, outputs,\n"
              "ops, parameters; MACs and the memory plan need the key. --encrypt-graph models need the key.");
  cmd->callback([&exit_code] {
    const ModelFileKind kind = detect_model_kind(model_path);
    // Weights-only protected model without its key: the real graph, zeros for the encrypted
    // constants, so nothing computed from constant values (MACs, memory plan) is reported.
    const bool structure_only = kind == ModelFileKind::kProtectedXnn && key_file.empty();
    std::shared_ptr<Model> model = structure_only ? std::make_shared<Model>(load_protected_structure(model_path))
                                                  : load_model(model_path, load_options_for(key_file));
    const Graph& g = model->graph;
    const GraphCost cost = structure_only ? GraphCost{} : estimate_graph_cost(g, parse_shapes(shape_args));
    std::map<std::string, int> histogram;
    for (const Node& n : g.nodes) ++histogram[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
    int64_t weight_bytes = 0;
    for (const Value& v : g.values) {
      if (v.is_constant()) weight_bytes += static_cast<int64_t>(v.data->nbytes());
    }
    const auto file_bytes = static_cast<int64_t>(std::filesystem::file_size(model_path));
    const char* format = kind == ModelFileKind::kXnn ? "xnn" : kind == ModelFileKind::kOnnx ? "onnx" : "xnn-protected";
    // The session's static memory plan for these shapes (symbolic dims = 1 unless --shape).
    MemoryStats mem;
    size_t optimized_nodes = 0;
    std::string plan_error;
    if (structure_only) plan_error = "the weights are encrypted; pass --key-file";
    if (!structure_only) try {
      SessionOptions so;
      so.opt_level = opt_level;
      Session session(model, so);
      std::map<std::string, Shape> shapes = parse_shapes(shape_args);
      for (const IoInfo& in : session.inputs()) {
        if (shapes.count(in.name)) continue;
        Shape sh;
        for (const Dim& d : in.shape) sh.push_back(d.known() ? d.value : 1);
        shapes[in.name] = sh;
      }
      session.prepare(shapes);
      mem = session.memory_stats();
      optimized_nodes = session.optimized_graph().nodes.size();
    } catch (const Error& e) {
      plan_error = e.what();
    }
    if (as_json) {
      json::Writer w;
      w.begin_object();
      w.field("file", model_path).field("format", format).field("file_bytes", file_bytes);
      w.field("opset", model->opset).field("producer", model->metadata.producer);
      w.field("source_sha256", model->metadata.source_sha256);
      w.key("inputs");
      write_io_json(w, g, g.inputs);
      w.key("outputs");
      write_io_json(w, g, g.outputs);
      w.field("nodes", g.nodes.size()).field("parameters", g.parameter_count()).field("weight_bytes", weight_bytes);
      w.field("encrypted_weights", structure_only);
      w.field("macs", cost.total.macs).field("bytes_read", cost.total.bytes_read);
      w.field("bytes_written", cost.total.bytes_written).field("static_shapes", cost.static_shapes);
      w.key("memory_plan").begin_object();
      w.field("planned", mem.planned).field("arena_bytes", mem.arena_bytes);
      w.field("lower_bound_bytes", mem.lower_bound_bytes).field("output_bytes", mem.output_bytes);
      w.field("opt_level", opt_level).field("optimized_nodes", optimized_nodes);
      w.field("views", mem.aliased_tensors).field("in_place_tensors", mem.in_place_tensors);
      w.field("sliced_concats", mem.sliced_concats).field("sliced_tensors", mem.sliced_tensors);
      if (!plan_error.empty()) w.field("error", plan_error);
      w.end_object();
      w.key("ops").begin_object();
      for (const auto& [op, count] : histogram) w.field(op, count);
      w.end_object();
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("model:       %s (%s, %lld bytes)\n", model_path.c_str(), format, static_cast<long long>(file_bytes));
      std::printf("opset:       %lld\n", static_cast<long long>(model->opset));
      if (!model->metadata.producer.empty()) std::printf("producer:    %s\n", model->metadata.producer.c_str());
      if (!model->metadata.source_sha256.empty()) std::printf("source sha:  %s\n", model->metadata.source_sha256.c_str());
      for (int i : g.inputs) {
        std::printf("input:       %s %s %s\n", g.value(i).name.c_str(), std::string(dtype_name(g.value(i).dtype)).c_str(),
                    g.value(i).has_shape ? dims_str(g.value(i).shape).c_str() : "(unknown shape)");
      }
      for (int o : g.outputs) {
        std::printf("output:      %s %s %s\n", g.value(o).name.c_str(), std::string(dtype_name(g.value(o).dtype)).c_str(),
                    g.value(o).has_shape ? dims_str(g.value(o).shape).c_str() : "(unknown shape)");
      }
      std::printf("nodes:       %zu\n", g.nodes.size());
      std::printf("parameters:  %lld (%lld bytes of constants)\n", static_cast<long long>(g.parameter_count()),
                  static_cast<long long>(weight_bytes));
      if (structure_only) {
        std::printf("weights:     encrypted (protected model); MACs and memory plan need --key-file\n");
      } else {
        std::printf("MACs:        %.0f (%.3f G)%s\n", cost.total.macs, cost.total.macs / 1e9,
                    cost.static_shapes ? "" : " [shapes from a run on zero inputs]");
        std::printf("bytes:       %.0f read, %.0f written\n", cost.total.bytes_read, cost.total.bytes_written);
      }
      if (mem.planned) {
        std::printf("memory plan: arena %lld bytes (%.2f MiB), liveness lower bound %lld bytes (%.3fx); "
                    "%zu nodes after opt-level %d; %d views, %d in-place outputs, %d concats written in place by their producers\n",
                    static_cast<long long>(mem.arena_bytes), mem.arena_bytes / 1048576.0,
                    static_cast<long long>(mem.lower_bound_bytes),
                    mem.lower_bound_bytes ? static_cast<double>(mem.arena_bytes) / mem.lower_bound_bytes : 1.0,
                    optimized_nodes, opt_level, mem.aliased_tensors, mem.in_place_tensors, mem.sliced_concats);
      } else {
        std::printf("memory plan: none (%s)\n", plan_error.empty() ? "data-dependent shapes or control flow"
                                                                   : plan_error.c_str());
      }
      std::printf("ops:\n");
      for (const auto& [op, count] : histogram) std::printf("  %-24s %d\n", op.c_str(), count);
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
