#include "compress/encode/kmeans.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace xnn::encode {

Clustering kmeans_1d(std::span<const float> values, int k, bool keep_zero, int max_iterations) {
  if (k < 1 || k > 4096) throw Error("k-means: " + std::to_string(k) + " clusters (expected 1..4096)");
  // The values to cluster, sorted: with sorted centroids every cluster is a contiguous range
  // between midpoints, so an iteration is k binary searches over prefix sums.
  std::vector<float> sorted;
  sorted.reserve(values.size());
  bool any_zero = false;
  for (float v : values) {
    if (keep_zero && v == 0.0f) {
      any_zero = true;
    } else {
      sorted.push_back(v);
    }
  }
  std::sort(sorted.begin(), sorted.end());
  const int free_k = keep_zero && any_zero ? k - 1 : k;
  std::vector<double> centroids;
  Clustering out;
  if (!sorted.empty() && free_k > 0) {
    std::vector<double> prefix(sorted.size() + 1, 0.0);
    for (size_t i = 0; i < sorted.size(); ++i) prefix[i + 1] = prefix[i] + sorted[i];
    const double lo = sorted.front(), hi = sorted.back();
    for (int c = 0; c < free_k; ++c) centroids.push_back(free_k == 1 ? (lo + hi) / 2 : lo + (hi - lo) * c / (free_k - 1));
    for (out.iterations = 0; out.iterations < max_iterations; ++out.iterations) {
      std::vector<double> next = centroids;
      size_t begin = 0;
      for (size_t c = 0; c < centroids.size(); ++c) {
        size_t end = sorted.size();
        if (c + 1 < centroids.size()) {
          const double mid = (centroids[c] + centroids[c + 1]) / 2;
          end = static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), mid) - sorted.begin());
        }
        if (end > begin) next[c] = (prefix[end] - prefix[begin]) / static_cast<double>(end - begin);
        begin = std::max(begin, end);
      }
      if (next == centroids) break;
      centroids = std::move(next);
    }
  }
  // Final codebook: float centroids, deduplicated bit for bit, only those some value uses.
  std::vector<float> candidates;
  if (keep_zero && any_zero) candidates.push_back(0.0f);
  for (double c : centroids) candidates.push_back(static_cast<float>(c));
  const size_t zero_slot = keep_zero && any_zero ? 1 : 0;  // candidates before this are fixed
  auto nearest = [&](float v) -> size_t {
    if (keep_zero && v == 0.0f) return 0;
    // Centroids after zero_slot are ascending: binary search the nearest.
    const auto first = candidates.begin() + static_cast<std::ptrdiff_t>(zero_slot);
    auto it = std::lower_bound(first, candidates.end(), v);
    if (it == candidates.end()) return candidates.size() - 1;
    if (it != first && (v - *(it - 1)) <= (*it - v)) --it;
    return static_cast<size_t>(it - candidates.begin());
  };
  std::vector<size_t> raw(values.size());
  std::vector<bool> used(candidates.size(), false);
  for (size_t i = 0; i < values.size(); ++i) {
    raw[i] = nearest(values[i]);
    used[raw[i]] = true;
  }
  std::map<uint32_t, uint16_t> slot_of_bits;
  std::vector<uint16_t> remap(candidates.size(), 0);
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (!used[c]) continue;
    uint32_t bits = 0;
    std::memcpy(&bits, &candidates[c], 4);
    auto [it, fresh] = slot_of_bits.emplace(bits, static_cast<uint16_t>(out.centroids.size()));
    if (fresh) out.centroids.push_back(candidates[c]);
    remap[c] = it->second;
  }
  out.assignment.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) out.assignment[i] = remap[raw[i]];
  return out;
}

}  // namespace xnn::encode
