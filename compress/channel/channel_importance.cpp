#include "compress/channel/channel_importance.h"

#include <cmath>

#include "engine/core/error.h"

namespace xnn::channel {

Importance parse_importance(const std::string& name) {
  if (name == "l1") return Importance::kL1;
  if (name == "l2") return Importance::kL2;
  if (name == "bn") return Importance::kBnGamma;
  if (name == "taylor") return Importance::kTaylor;
  throw Error("unknown channel importance '" + name + "': expected l1, l2, bn or taylor");
}

std::string importance_name(Importance i) {
  switch (i) {
    case Importance::kL1: return "l1";
    case Importance::kL2: return "l2";
    case Importance::kBnGamma: return "bn";
    case Importance::kTaylor: return "taylor";
  }
  return "?";
}

namespace {

// Norm of each of the member's channel slices (all positions of the slice along the axis,
// all elements across the other axes).
std::vector<double> slice_norms(const Tensor& t, const Member& m, int64_t channels, bool l2) {
  XNN_CHECK(t.dtype() == DType::kF32, "channel importance: member constants must be float32");
  const float* d = t.data<float>();
  const Shape& s = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < m.axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(m.axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t len = s[static_cast<size_t>(m.axis)];
  std::vector<double> out(static_cast<size_t>(channels), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = m.offset + c * m.inner; p < m.offset + (c + 1) * m.inner; ++p) {
        const float* row = d + (o * len + p) * inner;
        double acc = 0;
        for (int64_t i = 0; i < inner; ++i) acc += l2 ? double(row[i]) * row[i] : std::fabs(double(row[i]));
        out[static_cast<size_t>(c)] += acc;
      }
    }
  }
  if (l2) for (double& v : out) v = std::sqrt(v);
  return out;
}

void add_normalised(std::vector<double>& acc, const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(std::max<size_t>(1, v.size()));
  for (size_t i = 0; i < v.size(); ++i) acc[i] += mean > 0 ? v[i] / mean : 0.0;
}

}  // namespace

ImportanceScores weight_importance(const Graph& graph, const ChannelAnalysis& analysis, Importance kind) {
  XNN_CHECK(kind != Importance::kTaylor, "Taylor importance needs data: use taylor_importance (channel_taylor.h)");
  ImportanceScores out;
  for (const ChannelGroup& grp : analysis.groups) {
    std::vector<double> score(static_cast<size_t>(grp.channels), 0.0);
    bool used_bn = false;
    if (kind == Importance::kBnGamma) {
      for (const Member& m : grp.members) {
        if (m.kind != ParamKind::kBnScale) continue;
        std::vector<double> g = slice_norms(*graph.value(m.value).data, m, grp.channels, false);
        for (size_t i = 0; i < g.size(); ++i) score[i] += g[i];
        used_bn = true;
      }
      if (!used_bn && grp.prunable) ++out.fallbacks;
    }
    if (!used_bn) {
      for (const Member& m : grp.members) {
        const bool filter = m.kind == ParamKind::kWeight &&
                            (m.role == MemberRole::kProducer || m.role == MemberRole::kDepthwise);
        if (!filter) continue;
        add_normalised(score, slice_norms(*graph.value(m.value).data, m, grp.channels, kind == Importance::kL2));
      }
    }
    out.per_group.push_back(std::move(score));
  }
  return out;
}

}  // namespace xnn::channel
