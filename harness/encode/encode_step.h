// The `encode` experiment step: weight clustering and entropy-coded storage of the variant's
// model (harness/encode/encode_job.h), saved as .xnn for the next step or for measurement.
//
//   variants:
//     - name: coded5
//       steps:
//         - convert
//         - {type: encode, bits: 5, coder: rans, bits_per_layer: {fc1.weight: 4}}
//
// Keys mirror `xnn-lab encode`'s flags: bits (1..8, default 5), bits_per_layer (a mapping of
// weight value or node name to bits), coder (fixed | huffman | rans), cluster (default true;
// false = the weights' distinct values are the codebook), keep_zero (default true),
// min_elements (default 256). The runner's size metric records the encoded file's size_bytes;
// next to the model, encode_report.json records the job's result (encode --json's content:
// bits per weight against the entropy bound, Huffman, rANS, zstd -19 and xz -9). Load time is
// not measured here (the experiment's latency metrics measure the variant).
#pragma once
#include "harness/steps/step.h"

namespace xnn::encode {

void register_encode_step(StepRegistry& registry);

}  // namespace xnn::encode
