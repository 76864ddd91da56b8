#include "harness/compress_recipe/shared_centroids.h"

#include <cstring>
#include <set>

#include "compress/encode/kmeans.h"
#include "engine/core/error.h"

namespace xnn::compress_recipe {
namespace {

// Each non-zero centroid <- the mean of its members; members <- their centroid.
void share_tensor(const ClusteredTensor& t, float* w) {
  std::vector<double> sum(static_cast<size_t>(t.centroids), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(t.centroids), 0);
  for (int64_t i = 0; i < t.numel; ++i) {
    const uint16_t a = t.assignment[static_cast<size_t>(i)];
    sum[a] += w[i];
    ++count[a];
  }
  std::vector<float> centroid(static_cast<size_t>(t.centroids), 0.0f);
  for (int c = 0; c < t.centroids; ++c) {
    if (c != t.zero_index && count[static_cast<size_t>(c)] > 0) {
      centroid[static_cast<size_t>(c)] = static_cast<float>(sum[static_cast<size_t>(c)] / count[static_cast<size_t>(c)]);
    }
  }
  for (int64_t i = 0; i < t.numel; ++i) w[i] = centroid[t.assignment[static_cast<size_t>(i)]];
}

}  // namespace

SharedCentroids SharedCentroids::cluster(Model& model, int bits, const std::map<std::string, int>& bits_per_layer,
                                         int64_t min_elements) {
  Graph& g = model.graph;
  struct Target {
    int value;
    std::string node;
  };
  std::vector<Target> targets;
  std::set<int> seen;
  std::set<std::string> known;
  for (const Node& n : g.nodes) {
    if (n.domain != "" || (n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul")) continue;
    if (n.inputs.size() < 2 || n.inputs[1] < 0) continue;
    const Value& v = g.value(n.inputs[1]);
    if (!v.data || v.data->dtype() != DType::kF32 || v.data->numel() < min_elements) continue;
    if (!seen.insert(n.inputs[1]).second) continue;
    targets.push_back({n.inputs[1], n.name});
    known.insert(v.name);
    known.insert(n.name);
  }
  for (const auto& [name, b] : bits_per_layer) {
    if (!known.count(name)) {
      std::string list;
      for (const Target& t : targets) list += (list.empty() ? "" : ", ") + t.node + " (" + g.value(t.value).name + ")";
      throw Error("bits_per_layer: no clusterable weight or node named '" + name + "'; candidates: " +
                  (list.empty() ? "(none)" : list));
    }
  }
  SharedCentroids out;
  for (const Target& target : targets) {
    Value& v = g.value(target.value);
    int b = bits;
    if (auto it = bits_per_layer.find(v.name); it != bits_per_layer.end()) b = it->second;
    if (auto it = bits_per_layer.find(target.node); it != bits_per_layer.end()) b = it->second;
    const Tensor& original = *v.data;
    const int64_t numel = original.numel();
    const auto* w = static_cast<const float*>(original.raw());
    encode::Clustering c = encode::kmeans_1d(std::span<const float>(w, static_cast<size_t>(numel)), 1 << b, true);
    ClusteredTensor t;
    t.value = v.name;
    t.node = target.node;
    t.bits = b;
    t.numel = numel;
    t.centroids = static_cast<int>(c.centroids.size());
    for (int k = 0; k < t.centroids; ++k) {
      uint32_t bitsof = 0;
      std::memcpy(&bitsof, &c.centroids[static_cast<size_t>(k)], 4);
      if (bitsof == 0) t.zero_index = k;
    }
    Tensor clustered(DType::kF32, original.shape());  // a fresh buffer: the original may be mapped read-only
    float* dst = clustered.data<float>();
    for (int64_t i = 0; i < numel; ++i) dst[i] = c.centroids[c.assignment[static_cast<size_t>(i)]];
    t.assignment = std::move(c.assignment);
    v.data = clustered;
    out.tensors_.push_back(std::move(t));
  }
  return out;
}

void SharedCentroids::share(std::span<train::Parameter> params) const {
  for (train::Parameter& p : params) {
    for (const ClusteredTensor& t : tensors_) {
      if (t.value != p.name) continue;
      if (p.value.numel() != t.numel || p.value.dtype() != DType::kF32) {
        throw Error("clustered weight '" + t.value + "' changed size during fine-tuning");
      }
      share_tensor(t, p.value.data<float>());
    }
  }
}

void SharedCentroids::share(Model& model) const {
  Graph& g = model.graph;
  for (const ClusteredTensor& t : tensors_) {
    for (Value& v : g.values) {
      if (v.name != t.value || !v.data) continue;
      if (v.data->numel() != t.numel || v.data->dtype() != DType::kF32) {
        throw Error("clustered weight '" + t.value + "' changed size");
      }
      Tensor copy(DType::kF32, v.data->shape());
      std::memcpy(copy.raw(), v.data->raw(), v.data->nbytes());
      share_tensor(t, copy.data<float>());
      v.data = copy;
    }
  }
}

}  // namespace xnn::compress_recipe
