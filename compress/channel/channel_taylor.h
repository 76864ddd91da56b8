// First-order Taylor importance (Molchanov et al. 2019): the loss change from removing channel
// c is about |sum over positions of a_c * dL/da_c|, a_c the channel's activation. For a node
// y = w*x + b (Conv, Gemm) or y = gamma*xhat + beta (BatchNorm) that sum equals the sum of
// param * dL/dparam over the channel's weights and bias (scale and shift), so the autograd's
// parameter gradients give it without hooking activations. Per group, the sites are its
// BatchNorms (the activation after normalisation) or, without one, its Conv/Gemm producers;
// per site |sum over batches|, summed over sites.
#pragma once
#include "compress/channel/channel_importance.h"
#include "compress/channel/ratio_search.h"

namespace xnn::channel {

// Needs `data.labels` (cross-entropy on the first output as logits) and a single-input model.
// The model is not modified (training-mode BatchNorm statistics go to a copy).
ImportanceScores taylor_importance(const Model& model, const ChannelAnalysis& analysis, const CalibrationData& data,
                                   int threads = 1);

}  // namespace xnn::channel
