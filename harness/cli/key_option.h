// --key-file KEY, shared by the commands that load models (infer, bench, eval, inspect): the key
// of a model protected with `xnn-lab protect` (engine/format/xnn_protect.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "engine/runtime/model_io.h"

namespace xnn::cli {

void add_key_file_option(CLI::App* cmd, std::string& key_file);
// LoadOptions with the key read from `key_file` (no key when it is empty).
LoadOptions load_options_for(const std::string& key_file);

}  // namespace xnn::cli
