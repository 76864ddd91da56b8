#include "compress/quantize/quantizer.h"

#include "compress/quantize/float_model.h"

namespace xnn::quantize {

PtqResult post_training_quantize(const Model& model, const Tensor& calibration_samples, const PtqOptions& options) {
  PtqResult r;
  r.float_model = prepare_float_model(model);
  // Exclusions are checked before the (longer) calibration so a typo fails fast.
  quantize_model_graph(*r.float_model, {}, options.graph);
  r.stats = collect_statistics(*r.float_model, calibration_samples, options.batch);
  r.ranges = choose_ranges(r.stats, options.calibration);
  QuantizeOptions graph = options.graph;
  if (graph.bias_correction && !graph.channel_means) graph.channel_means = &r.stats.channel_means;
  r.int8_model = std::make_shared<Model>(quantize_model_graph(*r.float_model, r.ranges, graph, &r.report));
  r.int8_model->metadata.options["quantization"] = "int8 ptq, " + calibration_method_name(options.calibration.method) +
                                                   (options.graph.per_channel ? ", per-channel weights" : ", per-tensor weights") +
                                                   (options.graph.bias_correction ? ", bias correction" : "") +
                                                   (options.graph.reduce_range ? ", reduced-range weights" : "");
  return r;
}

int64_t constant_bytes(const Graph& g) {
  int64_t bytes = 0;
  for (const Value& v : g.values) {
    if (v.is_constant() && v.data->defined()) bytes += static_cast<int64_t>(v.data->nbytes());
  }
  return bytes;
}

}  // namespace xnn::quantize
