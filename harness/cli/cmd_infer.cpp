// xnn-lab infer MODEL --input [NAME=]FILE.npy ... --output-dir DIR
#include <cstdio>
#include <filesystem>
#include <map>

#include "engine/runtime/model_io.h"
#include "engine/runtime/npy.h"
#include "engine/runtime/session.h"
#include "harness/cli/commands.h"
#include "harness/cli/key_option.h"

namespace xnn::cli {
namespace {

// Output names may contain characters that are not safe in file names ('/', ':').
std::string file_name_for(const std::string& name) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s) {
    if (c == '/' || c == '\\' || c == ':' || c == '\0') c = '_';
  }
  if (s == "." || s == "..") s = "_" + s;
  return s;
}

}  // namespace

void add_infer_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("infer", "Run a model on .npy inputs and write every output as .npy");
  static std::string model_path, out_dir;
  static std::vector<std::string> input_args;
  cmd->add_option("model", model_path, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-i,--input", input_args,
                  "Input as [NAME=]FILE.npy; without NAME, inputs are taken in the model's input order")
      ->required();
  cmd->add_option("-d,--output-dir", out_dir, "Folder for <output name>.npy files")->required();
  static std::string key_file;
  add_key_file_option(cmd, key_file);
  cmd->callback([&exit_code] {
    Session session(load_model(model_path, load_options_for(key_file)));
    std::map<std::string, Tensor> inputs;
    size_t positional = 0;
    for (const std::string& arg : input_args) {
      const size_t eq = arg.find('=');
      std::string name, file;
      if (eq == std::string::npos) {
        if (positional >= session.inputs().size()) {
          throw Error("too many --input values: the model has " + std::to_string(session.inputs().size()) +
                      " input(s)");
        }
        name = session.inputs()[positional++].name;
        file = arg;
      } else {
        name = arg.substr(0, eq);
        file = arg.substr(eq + 1);
      }
      if (inputs.count(name)) throw Error("input '" + name + "' given twice");
      inputs[name] = read_npy(file);
    }
    std::vector<Tensor> outs = session.run(inputs);
    std::filesystem::create_directories(out_dir);
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string path = (std::filesystem::path(out_dir) / (file_name_for(session.outputs()[i].name) + ".npy")).string();
      write_npy(path, outs[i]);
      std::printf("%s: %s %s -> %s\n", session.outputs()[i].name.c_str(), std::string(dtype_name(outs[i].dtype())).c_str(),
                  shape_str(outs[i].shape()).c_str(), path.c_str());
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
