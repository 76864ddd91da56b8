#include "harness/cli/key_option.h"

namespace xnn::cli {

void add_key_file_option(CLI::App* cmd, std::string& key_file) {
  cmd->add_option("--key-file", key_file,
                  "Key of a protected model (xnn-lab protect): 32 raw bytes or 64 hex characters")
      ->check(CLI::ExistingFile);
}

LoadOptions load_options_for(const std::string& key_file) {
  LoadOptions options;
  if (!key_file.empty()) options.key = read_key_file(key_file);
  return options;
}

}  // namespace xnn::cli
