// The one-shot objective served over a line protocol (`xnn-lab nas CONFIG --objective-server`),
// so another search library — Optuna, in scripts/bench_oneshot_vs_optuna.py — drives exactly
// the objective our strategies see, on the same trained supernet, in the same process.
//
// The first line out, once the supernet is ready:
//   {"ready":true,"space":<SearchSpace::to_json>,"params":[names in order],
//    "objectives":[..],"directions":["maximize",..],"constraints":["latency_ms",..]}
// Requests, one per line in:
//   evaluate V1 .. Vn        internal values in parameter order (a categorical: its index)
//   search STRATEGY SEED N   N trials of our strategy (random|evolution|tpe|nsga2; the config's
//                            options when it is the config's strategy) on an in-memory study:
//                            a result line per trial, then {"done":true}
//   quit                     (or end of input)
// A result line: {"trial":i (search only),"arch":"..","values":[..],"constraints":[..],
//   "feasible":bool,"cached":bool,"latency_ms":..,"params":..}; a bad request gets
//   {"error":".."} and the server goes on.
// Scores are cached per architecture encoding, so every strategy sees one value per subnet
// (a measured latency would otherwise differ between repeats) and repeats cost nothing.
#pragma once
#include <iosfwd>

#include "nas/blackbox_search.h"
#include "nas/nas_config.h"

namespace xnn::nas {

void serve_subnet_objective(const NasConfig& config, const LatencyFn& latency, std::istream& in, std::ostream& out,
                            const train::ProgressFn& progress);

}  // namespace xnn::nas
