#include "compress/channel/ratio_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include "engine/core/error.h"
#include "engine/runtime/session.h"

namespace xnn::channel {

namespace {

std::vector<Tensor> run_first_outputs(const Model& model, const CalibrationData& data, int threads) {
  SessionOptions so;
  so.threads = threads;
  Session session(std::make_shared<const Model>(model), so);
  std::vector<Tensor> out;
  for (const auto& batch : data.batches) out.push_back(session.run(batch).at(0));
  return out;
}

double noise_to_signal(const std::vector<Tensor>& ref, const std::vector<Tensor>& got) {
  double noise = 0, signal = 0;
  for (size_t b = 0; b < ref.size(); ++b) {
    XNN_CHECK(ref[b].numel() == got[b].numel(), "sensitivity scan: pruned model's output changed shape");
    const float* r = ref[b].data<float>();
    const float* q = got[b].data<float>();
    for (int64_t i = 0; i < ref[b].numel(); ++i) {
      noise += (double(q[i]) - r[i]) * (double(q[i]) - r[i]);
      signal += double(r[i]) * r[i];
    }
  }
  return signal > 0 ? noise / signal : noise;
}

double accuracy_of(const std::vector<Tensor>& outputs, const CalibrationData& data) {
  int64_t correct = 0, total = 0;
  for (size_t b = 0; b < outputs.size(); ++b) {
    const Tensor& t = outputs[b];
    const std::vector<int64_t>& labels = data.labels[b];
    const int64_t n = static_cast<int64_t>(labels.size());
    XNN_CHECK(n > 0 && t.numel() % n == 0, "top-1: output of batch " + std::to_string(b) + " does not have one row per label");
    const int64_t classes = t.numel() / n;
    const float* d = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float* row = d + i * classes;
      correct += std::max_element(row, row + classes) - row == labels[static_cast<size_t>(i)];
      ++total;
    }
  }
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

void check_data(const CalibrationData& data) {
  XNN_CHECK(!data.batches.empty(), "channel pruning: the sensitivity scan needs at least one calibration batch");
  XNN_CHECK(data.labels.empty() || data.labels.size() == data.batches.size(),
            "channel pruning: labels must be given for every calibration batch or none");
}

// The damage of keeping `keep` channels of a group, interpolated linearly between the scanned
// points (the whole group: no damage).
double damage_at(const GroupSensitivity& gs, int64_t channels, int64_t keep) {
  std::vector<std::pair<int64_t, double>> pts{{channels, 0.0}};
  for (size_t i = 0; i < gs.keep.size(); ++i) pts.push_back({gs.keep[i], gs.damage[i]});
  std::sort(pts.begin(), pts.end());
  if (keep <= pts.front().first) return pts.front().second;
  for (size_t i = 1; i < pts.size(); ++i) {
    if (keep <= pts[i].first) {
      const double t = pts[i].first == pts[i - 1].first ? 1.0
                                                       : double(keep - pts[i - 1].first) / double(pts[i].first - pts[i - 1].first);
      return pts[i - 1].second + t * (pts[i].second - pts[i - 1].second);
    }
  }
  return 0.0;
}

// The greedy steps are coarse (a tenth of a group), so the last one usually overshoots the
// target: give channels back, `round_to` at a time, where they reduce the damage most per unit
// of cost, while the cost stays within the target.
void refill(const ChannelAnalysis& analysis, const SensitivityResult& sensitivity, const RatioSearchOptions& options,
            const std::function<double(const KeepCounts&)>& cost_of, double target, RatioSearchResult& r) {
  const int64_t step = std::max<int64_t>(1, options.round_to);
  for (;;) {
    double best = -1, best_cost = 0;
    size_t best_group = 0;
    int64_t best_keep = 0;
    for (const GroupSensitivity& gs : sensitivity.groups) {
      const size_t g = static_cast<size_t>(gs.group);
      const int64_t channels = analysis.groups[g].channels;
      if (r.keep[g] >= channels) continue;
      const int64_t keep = std::min(channels, r.keep[g] + step);
      KeepCounts trial = r.keep;
      trial[g] = keep;
      const double c = cost_of(trial);
      if (c > target) continue;
      const double gain = damage_at(gs, channels, r.keep[g]) - damage_at(gs, channels, keep) + 1e-9;
      const double added = options.rank_cost ? options.rank_cost(trial) - options.rank_cost(r.keep) : c - r.cost;
      const double score = gain / std::max(added, 1e-12);
      if (score > best) {
        best = score;
        best_group = g;
        best_keep = keep;
        best_cost = c;
      }
    }
    if (best < 0) return;
    r.keep[best_group] = best_keep;
    r.cost = best_cost;
    ++r.steps;
  }
}

}  // namespace

double top1_accuracy(const Model& model, const CalibrationData& data, int threads) {
  check_data(data);
  XNN_CHECK(!data.labels.empty(), "top-1 accuracy needs labels");
  return accuracy_of(run_first_outputs(model, data, threads), data);
}

SensitivityResult sensitivity_scan(const Model& model, const ChannelAnalysis& analysis, const ImportanceScores& scores,
                                   const CalibrationData& data, const SensitivityOptions& options,
                                   const ProgressFn& progress) {
  check_data(data);
  const std::vector<Tensor> ref = run_first_outputs(model, data, options.threads);
  SensitivityResult result;
  if (!data.labels.empty()) result.base_accuracy = accuracy_of(ref, data);
  for (const ChannelGroup& grp : analysis.groups) {
    if (!grp.prunable) continue;
    GroupSensitivity gs;
    gs.group = grp.id;
    for (double f : options.fractions) {
      const int64_t keep = round_keep(grp.channels, 1.0 - f, options.round_to);
      gs.fractions.push_back(f);
      gs.keep.push_back(keep);
      if (keep == grp.channels) {  // rounding left the group whole
        gs.damage.push_back(0.0);
        if (!data.labels.empty()) gs.accuracy.push_back(result.base_accuracy);
        continue;
      }
      KeepCounts counts = keep_all(analysis);
      counts[static_cast<size_t>(grp.id)] = keep;
      const Model pruned = prune_to_counts(model, analysis, scores, counts);
      const std::vector<Tensor> got = run_first_outputs(pruned, data, options.threads);
      gs.damage.push_back(noise_to_signal(ref, got));
      if (!data.labels.empty()) gs.accuracy.push_back(accuracy_of(got, data));
    }
    if (progress) {
      std::ostringstream os;
      os << "sensitivity group " << grp.id << " '" << grp.name << "' (" << grp.channels << " ch):";
      for (size_t i = 0; i < gs.fractions.size(); ++i) os << " " << gs.fractions[i] << "->" << gs.damage[i];
      progress(os.str());
    }
    result.groups.push_back(std::move(gs));
  }
  return result;
}

CostTarget parse_cost_target(const std::string& name) {
  if (name == "flops") return CostTarget::kFlops;
  if (name == "params") return CostTarget::kParams;
  throw Error("unknown pruning target '" + name + "': expected flops or params");
}

RatioSearchResult search_ratios(const ChannelAnalysis& analysis, const ChannelCostModel& cost_model,
                                const SensitivityResult& sensitivity, const RatioSearchOptions& options) {
  XNN_CHECK(options.ratio > 0 && options.ratio <= 1, "channel pruning: the target ratio must be in (0, 1]");
  auto cost_of = [&](const KeepCounts& k) {
    if (options.cost) return options.cost(k);
    return options.target == CostTarget::kFlops ? cost_model.macs(k) : cost_model.params(k);
  };
  RatioSearchResult r;
  r.keep = keep_all(analysis);
  r.base_cost = cost_of(r.keep);
  r.cost = r.base_cost;
  const double target = options.ratio * r.base_cost;
  std::vector<int> at(sensitivity.groups.size(), -1);  // index into the group's fractions; -1: whole
  while (r.cost > target) {
    double best = std::numeric_limits<double>::infinity(), best_cost = 0;
    size_t best_group = 0;
    int best_step = -1;
    for (size_t i = 0; i < sensitivity.groups.size(); ++i) {
      const GroupSensitivity& gs = sensitivity.groups[i];
      const size_t g = static_cast<size_t>(gs.group);
      // The next step that actually removes channels (rounding can repeat a count).
      int next = at[i] + 1;
      while (next < static_cast<int>(gs.fractions.size()) && gs.keep[static_cast<size_t>(next)] >= r.keep[g]) ++next;
      if (next >= static_cast<int>(gs.fractions.size()) || gs.fractions[static_cast<size_t>(next)] > options.max_fraction + 1e-9) continue;
      KeepCounts trial = r.keep;
      trial[g] = gs.keep[static_cast<size_t>(next)];
      const double c = cost_of(trial);
      if (r.cost - c <= 0) continue;
      const double saved = options.rank_cost ? options.rank_cost(r.keep) - options.rank_cost(trial) : r.cost - c;
      if (saved <= 0) continue;
      const double before = at[i] < 0 ? 0.0 : gs.damage[static_cast<size_t>(at[i])];
      // A tiny floor keeps zero-damage steps ordered by how much they save.
      const double added = std::max(0.0, gs.damage[static_cast<size_t>(next)] - before) + 1e-9;
      const double score = added / saved;
      if (score < best) {
        best = score;
        best_group = i;
        best_step = next;
        best_cost = c;
      }
    }
    if (best_step < 0) break;  // every group at its limit
    const GroupSensitivity& gs = sensitivity.groups[best_group];
    at[best_group] = best_step;
    r.keep[static_cast<size_t>(gs.group)] = gs.keep[static_cast<size_t>(best_step)];
    r.cost = best_cost;
    ++r.steps;
  }
  if (r.cost <= target) refill(analysis, sensitivity, options, cost_of, target, r);
  r.met = r.cost <= target;
  return r;
}

}  // namespace xnn::channel
