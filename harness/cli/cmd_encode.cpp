// xnn-lab encode MODEL -o OUT.xnn [--bits B | --bits-per-layer NAME=B...] [--coder huffman|rans|fixed]
//   [--no-cluster] [--no-keep-zero] [--min-elements N] [--load-repetitions N] [--json]
//
// Weight clustering and entropy coding (Deep Compression's last stages; compress/encode): the
// weights of Conv / Gemm / MatMul with >= N elements become 2^B-entry k-means codebooks, stored
// as rANS- or Huffman-coded indices, sparse with coded relative indices where zeros (pruning)
// make that smaller. Prints per tensor and in total the bits per weight against the empirical
// entropy bound, Huffman, rANS, zstd -19 and xz -9 on the same symbol streams, the file sizes,
// and the load time of the encoded vs the dense file (the decode cost at load). The output is
// an ordinary model once loaded: `xnn-lab eval OUT.xnn` etc. work on it.
#include <cstdio>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "harness/encode/encode_job.h"

namespace xnn::cli {

void add_encode_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("encode", "Weight clustering (k-means codebooks) and entropy-coded weights, saved as .xnn");
  static encode::EncodeJob job;
  static std::vector<std::string> per_layer;
  static std::string coder = "rans";
  static bool no_cluster = false, no_keep_zero = false, as_json = false;
  cmd->add_option("model", job.model_path, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", job.output_path, "Output model (.xnn)")->required();
  cmd->add_option("--bits", job.options.bits, "Codebook of 2^B centroids per weight tensor (1..8)")->capture_default_str();
  cmd->add_option("--bits-per-layer", per_layer, "NAME=B for one weight (value or node name), repeatable")->delimiter(',');
  cmd->add_option("--coder", coder, "Entropy coder of the indices: rans, huffman or fixed (bit-packed)")
      ->check(CLI::IsMember({"rans", "huffman", "fixed"}))
      ->capture_default_str();
  cmd->add_flag("--no-cluster", no_cluster, "Do not cluster: each tensor's distinct values are its codebook (<= 2^B)");
  cmd->add_flag("--no-keep-zero", no_keep_zero, "Let zeros join the nearest cluster instead of an exact 0 centroid");
  cmd->add_option("--min-elements", job.options.min_elements, "Weights with fewer elements stay dense")->capture_default_str();
  cmd->add_option("--load-repetitions", job.load_repetitions, "Loads of each file for the load-time medians (0 = skip)")
      ->capture_default_str();
  cmd->add_flag("--json", as_json, "Print the result as one JSON object");
  cmd->callback([&exit_code] {
    job.options.coder = coding::symbol_coder_from_name(coder);
    job.options.cluster = !no_cluster;
    job.options.keep_zero = !no_keep_zero;
    for (const std::string& item : per_layer) {
      const size_t eq = item.rfind('=');
      int bits = 0;
      size_t used = 0;
      try {
        if (eq != std::string::npos && eq > 0) bits = std::stoi(item.substr(eq + 1), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (eq == std::string::npos || eq == 0 || used == 0 || used != item.size() - eq - 1) {
        throw Error("--bits-per-layer '" + item + "': expected NAME=BITS");
      }
      job.options.bits_per_layer[item.substr(0, eq)] = bits;
    }
    const encode::EncodeJobResult r = encode::run_encode_job(job);
    if (as_json) {
      std::printf("%s\n", encode::to_json(r).c_str());
    } else {
      std::printf("%s", encode::to_text(r).c_str());
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
