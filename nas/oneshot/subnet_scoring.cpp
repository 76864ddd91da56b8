#include "nas/oneshot/subnet_scoring.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/runtime/session.h"
#include "engine/train/training_session.h"

namespace xnn::nas {

std::vector<data::Batch> fixed_batches(const data::Dataset& ds, int64_t batch_size, int64_t max_batches, bool shuffle,
                                       uint64_t seed, float mean, float std) {
  data::LoaderOptions lo;
  lo.batch_size = batch_size;
  lo.shuffle = shuffle;
  lo.seed = seed;
  lo.train = false;
  lo.prefetch = 0;
  lo.preprocess.mean = {mean};
  lo.preprocess.std = {std};
  data::BatchLoader loader(ds, lo);
  loader.start_epoch(0);
  std::vector<data::Batch> out;
  data::Batch b;
  while ((max_batches <= 0 || static_cast<int64_t>(out.size()) < max_batches) && loader.next(b)) out.push_back(b);
  return out;
}

void recalibrate_batchnorm(const std::shared_ptr<Model>& model, const std::vector<data::Batch>& batches, int threads) {
  if (batches.empty()) throw Error("BatchNorm re-calibration needs at least one batch");
  Graph& g = model->graph;
  struct Stats {
    Node* node;
    Attribute momentum;
    bool had_momentum;
    Tensor mean, var;              // the graph's running statistics (updated by each forward)
    std::vector<double> sum_mean, sum_var;
  };
  std::vector<Stats> bns;
  for (Node& n : g.nodes) {
    if (n.op_type != "BatchNormalization") continue;
    Stats s{&n, n.has_attr("momentum") ? n.attrs.at("momentum") : Attribute(0.9f), n.has_attr("momentum"),
            *g.value(n.inputs.at(3)).data, *g.value(n.inputs.at(4)).data, {}, {}};
    // Momentum 0: after a training-mode forward the running statistics ARE the batch's.
    n.attrs["momentum"] = 0.0f;
    s.sum_mean.assign(static_cast<size_t>(s.mean.numel()), 0.0);
    s.sum_var.assign(static_cast<size_t>(s.var.numel()), 0.0);
    bns.push_back(std::move(s));
  }
  {
    train::TrainingSession session(model, train::TrainingOptions{threads, 0, 0.0f});
    // The session may have given constants their own storage: read the statistics it updates.
    for (Stats& s : bns) {
      s.mean = *g.value(s.node->inputs.at(3)).data;
      s.var = *g.value(s.node->inputs.at(4)).data;
      std::fill(s.mean.data<float>(), s.mean.data<float>() + s.mean.numel(), 0.0f);
      std::fill(s.var.data<float>(), s.var.data<float>() + s.var.numel(), 1.0f);
    }
    for (const data::Batch& b : batches) {
      session.training_loss(b.images, b.labels);
      for (Stats& s : bns) {
        for (int64_t c = 0; c < s.mean.numel(); ++c) {
          s.sum_mean[static_cast<size_t>(c)] += s.mean.data<float>()[c];
          s.sum_var[static_cast<size_t>(c)] += s.var.data<float>()[c];
        }
      }
    }
  }
  const double k = static_cast<double>(batches.size());
  for (Stats& s : bns) {
    for (int64_t c = 0; c < s.mean.numel(); ++c) {
      s.mean.data<float>()[c] = static_cast<float>(s.sum_mean[static_cast<size_t>(c)] / k);
      s.var.data<float>()[c] = static_cast<float>(s.sum_var[static_cast<size_t>(c)] / k);
    }
    if (s.had_momentum) s.node->attrs["momentum"] = s.momentum;
    else s.node->attrs.erase("momentum");
  }
}

double top1_accuracy(const std::shared_ptr<Model>& model, const std::vector<data::Batch>& batches, int threads) {
  // The inference engine (BatchNorm folded, optimised kernels): several times faster than the
  // training session's forward, and what the exported model runs.
  SessionOptions options;
  options.threads = threads;
  Session session(model, options);
  const std::string input = session.inputs().at(0).name;
  int64_t correct = 0, count = 0;
  for (const data::Batch& b : batches) {
    const Tensor logits = session.run({{input, b.images}}).at(0);
    const int64_t n = logits.dim(0), k = logits.dim(1);
    const float* z = logits.data<float>();
    const int64_t* y = b.labels.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t arg = std::max_element(z + i * k, z + (i + 1) * k) - (z + i * k);
      correct += arg == y[i];
    }
    count += n;
  }
  return count ? static_cast<double>(correct) / static_cast<double>(count) : 0.0;
}

}  // namespace xnn::nas
