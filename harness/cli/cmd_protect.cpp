// xnn-lab protect MODEL --key-file KEY -o OUT.xnn [--encrypt-graph]
// xnn-lab protect --generate-key KEY
//
// Wraps a model (.onnx or .xnn) in the AES-256-GCM container of engine/format/xnn_protect.h.
// The plaintext .xnn only ever exists in memory.
#include <cstdio>
#include <filesystem>

#include "engine/format/xnn_protect.h"
#include "engine/runtime/model_io.h"
#include "harness/cli/commands.h"

namespace xnn::cli {

void add_protect_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "protect",
      "Encrypt a model's weights (or, with --encrypt-graph, the whole model) with AES-256-GCM.\n"
      "Weights-only files keep the graph (op types, attributes, shapes) readable: `inspect` works without\n"
      "the key, running needs it. infer/bench/eval/inspect take --key-file KEY. A wrong key or a modified\n"
      "file is refused. This stops casual extraction of weights from an app package; it does not stop an\n"
      "attacker with a debugger on the device or who finds the key in the app.");
  static std::string model_path, key_path, out_path, generate_path;
  static bool encrypt_graph = false;
  auto* model_opt = cmd->add_option("model", model_path, "Model to protect (.onnx or .xnn)")->check(CLI::ExistingFile);
  cmd->add_option("--key-file", key_path, "Key: 32 raw bytes or 64 hex characters (+ optional newline)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", out_path, "Protected output file (.xnn)");
  cmd->add_flag("--encrypt-graph", encrypt_graph, "Encrypt the whole model, graph included (inspect needs the key)");
  auto* gen = cmd->add_option("--generate-key", generate_path,
                              "Write a new random 32-byte key to this file (mode 0600; never overwrites) and exit");
  gen->excludes(model_opt);
  cmd->callback([&exit_code] {
    if (!generate_path.empty()) {
      if (!key_path.empty() || !out_path.empty() || encrypt_graph) {
        throw CLI::ValidationError("--generate-key", "takes no model, --key-file, -o or --encrypt-graph");
      }
      generate_key_file(generate_path);
      std::printf("wrote a new 32-byte key to %s (mode 0600); keep it out of the model's folder\n",
                  generate_path.c_str());
      exit_code = 0;
      return;
    }
    if (model_path.empty()) throw CLI::RequiredError("model (or --generate-key KEY)");
    if (key_path.empty()) throw CLI::RequiredError("--key-file");
    if (out_path.empty()) throw CLI::RequiredError("-o,--output");
    const ModelKey key = read_key_file(key_path);
    LoadOptions load;
    if (detect_model_kind(model_path) == ModelFileKind::kProtectedXnn) load.key = key;  // re-protect
    std::shared_ptr<Model> model = load_model(model_path, load);
    const ProtectMode mode = encrypt_graph ? ProtectMode::kWholeModel : ProtectMode::kWeights;
    save_protected_xnn(*model, out_path, key, mode);
    std::printf("protected %s -> %s (AES-256-GCM, %s encrypted): %lld parameters, %llu bytes\n", model_path.c_str(),
                out_path.c_str(), encrypt_graph ? "whole model" : "weights", 
                static_cast<long long>(model->graph.parameter_count()),
                static_cast<unsigned long long>(std::filesystem::file_size(out_path)));
    exit_code = 0;
  });
}

}  // namespace xnn::cli
