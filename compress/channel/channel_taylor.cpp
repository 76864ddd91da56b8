#include "compress/channel/channel_taylor.h"

#include <cmath>
#include <map>
#include <memory>

#include "engine/core/error.h"
#include "engine/train/training_session.h"

namespace xnn::channel {

namespace {

// Per channel of member `m`: sum over its slice of value * grad.
std::vector<double> slice_dot(const train::Parameter& p, const Member& m, int64_t channels) {
  const Shape& s = p.value.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < m.axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(m.axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[static_cast<size_t>(m.axis)];
  const float* v = p.value.data<float>();
  const float* g = p.grad.data<float>();
  std::vector<double> out(static_cast<size_t>(channels), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t q = m.offset + c * m.inner; q < m.offset + (c + 1) * m.inner; ++q)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = (o * len + q) * inner + i;
          out[static_cast<size_t>(c)] += double(v[at]) * g[at];
        }
  return out;
}

bool bn_site(const Member& m) { return m.kind == ParamKind::kBnScale || m.kind == ParamKind::kBnShift; }
bool producer_site(const Member& m) {
  return m.role == MemberRole::kProducer && (m.kind == ParamKind::kWeight || m.kind == ParamKind::kBias);
}

}  // namespace

ImportanceScores taylor_importance(const Model& model, const ChannelAnalysis& analysis, const CalibrationData& data,
                                   int threads) {
  XNN_CHECK(!data.batches.empty() && data.labels.size() == data.batches.size(),
            "Taylor importance needs calibration batches with labels");
  auto copy = std::make_shared<Model>(model);
  for (Value& v : copy->graph.values)
    if (v.data) v.data = v.data->clone();
  train::TrainingOptions to;
  to.threads = threads;
  train::TrainingSession session(copy, to);
  std::map<std::string, train::Parameter*> by_name;
  for (train::Parameter& p : session.parameters()) by_name[p.name] = &p;

  // Per group, per site node: accumulated sum over batches (per channel).
  std::vector<std::map<int, std::vector<double>>> sums(analysis.groups.size());
  for (size_t b = 0; b < data.batches.size(); ++b) {
    XNN_CHECK(data.batches[b].size() == 1, "Taylor importance: the model must have a single input");
    const std::vector<int64_t>& l = data.labels[b];
    const Tensor labels = Tensor::from_vector<int64_t>(l, {static_cast<int64_t>(l.size())});
    session.train_step(data.batches[b].begin()->second, labels);
    for (const ChannelGroup& grp : analysis.groups) {
      if (!grp.prunable) continue;
      bool has_bn = false;
      for (const Member& m : grp.members) has_bn = has_bn || bn_site(m);
      for (const Member& m : grp.members) {
        if (!(has_bn ? bn_site(m) : producer_site(m))) continue;
        auto it = by_name.find(copy->graph.value(m.value).name);
        if (it == by_name.end()) continue;  // not trainable (no gradient): contributes nothing
        std::vector<double>& acc = sums[static_cast<size_t>(grp.id)][m.node];
        if (acc.empty()) acc.assign(static_cast<size_t>(grp.channels), 0.0);
        const std::vector<double> d = slice_dot(*it->second, m, grp.channels);
        for (size_t c = 0; c < d.size(); ++c) acc[c] += d[c];
      }
    }
  }
  ImportanceScores out;
  for (const ChannelGroup& grp : analysis.groups) {
    std::vector<double> score(static_cast<size_t>(grp.channels), 0.0);
    for (const auto& [node, acc] : sums[static_cast<size_t>(grp.id)])
      for (size_t c = 0; c < acc.size(); ++c) score[c] += std::fabs(acc[c]) / static_cast<double>(data.batches.size());
    out.per_group.push_back(std::move(score));
  }
  return out;
}

}  // namespace xnn::channel
