#include "nas/format.h"
#include "nas/darts/darts_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "engine/core/error.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "harness/data/batch_loader.h"
#include "harness/util/json.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

// The session's parameters split by role. Copies of a Parameter share its value and grad
// storage, so each group can be stepped by its own optimiser.
struct ParameterGroups {
  std::vector<train::Parameter> weights, alphas;
  std::vector<float*> alpha, noise, scale;  // per position
  std::vector<float*> alpha_grad;
};

ParameterGroups group_parameters(train::TrainingSession& session, const Supernet& net) {
  std::map<std::string, train::Parameter*> by_name;
  for (train::Parameter& p : session.parameters()) by_name[p.name] = &p;
  ParameterGroups g;
  std::map<std::string, bool> relaxation;
  for (const MixedOp& m : net.ops) {
    const auto find = [&](const std::string& name) {
      const auto it = by_name.find(name);
      if (it == by_name.end()) throw Error("darts: the supernet's '" + name + "' is not a trainable parameter");
      return it->second;
    };
    train::Parameter* a = find(m.alpha);
    g.alphas.push_back(*a);
    g.alphas.back().weight_decay = true;  // DARTS decays the architecture weights
    g.alpha.push_back(a->value.data<float>());
    g.alpha_grad.push_back(a->grad.data<float>());
    g.noise.push_back(find(m.noise)->value.data<float>());
    g.scale.push_back(find(m.scale)->value.data<float>());
    relaxation[m.alpha] = relaxation[m.noise] = relaxation[m.scale] = true;
  }
  for (train::Parameter& p : session.parameters()) {
    if (!relaxation.count(p.name)) g.weights.push_back(p);
  }
  return g;
}

data::LoaderOptions loader_options(const train::TrainConfig& recipe, bool augment, uint64_t seed) {
  data::LoaderOptions lo;
  lo.batch_size = recipe.batch_size;
  lo.shuffle = true;
  lo.drop_last = true;  // equal batches: BatchNorm statistics of a tiny last batch are noise
  lo.seed = seed;
  lo.train = true;
  if (augment) lo.augment = recipe.augment;
  lo.prefetch = recipe.prefetch;
  lo.preprocess.mean = {recipe.mean};
  lo.preprocess.std = {recipe.std};
  return lo;
}

std::string probs_json(const std::vector<std::vector<double>>& probs) {
  json::Writer w;
  w.begin_array();
  for (const auto& row : probs) {
    w.begin_array();
    for (double v : row) w.value(std::round(v * 1e4) / 1e4);
    w.end_array();
  }
  w.end_array();
  return w.str();
}

// A search-only Strategy: each ask returns the parameters set by `next` (the derived
// architecture), so the study records derived architectures as its trials.
class DerivedArchStrategy : public Strategy {
 public:
  DerivedArchStrategy(SearchSpace space, std::vector<Direction> directions, uint64_t seed, std::string settings)
      : Strategy(std::move(space), std::move(directions), seed), settings_(std::move(settings)) {}
  void next(TrialParams params) { next_ = std::move(params); }
  TrialParams ask(int64_t) override { return next_; }
  void tell(const Trial&) override {}
  std::string name() const override { return "darts"; }
  std::string config_json() const override { return settings_; }

 private:
  std::string settings_;
  TrialParams next_;
};

double attr_number(const TrialRecord& r, const std::string& key) {
  const auto it = r.user_attrs.find(key);
  if (it == r.user_attrs.end()) throw Error("darts: trial " + std::to_string(r.number) + " lacks '" + key + "'");
  return std::stod(it->second);
}
std::string attr_string(const TrialRecord& r, const std::string& key) {
  const auto it = r.user_attrs.find(key);
  if (it == r.user_attrs.end() || it->second.size() < 2) throw Error("darts: trial lacks '" + key + "'");
  return it->second.substr(1, it->second.size() - 2);  // our own strings: encodings, no escapes
}

}  // namespace

DartsTrace search_supernet(Supernet& net, const LatencyTable& table, const DartsOptions& options, double lambda,
                           const train::TrainConfig& recipe, const data::Dataset& weight_split,
                           const data::Dataset& alpha_split, const train::ProgressFn& progress) {
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  if (table.positions.size() != net.positions.size()) throw Error("darts: the latency table has other positions");
  const auto t0 = std::chrono::steady_clock::now();
  train::TrainingSession session(net.model,
                                 train::TrainingOptions{recipe.threads, recipe.seed, recipe.label_smoothing});
  ParameterGroups g = group_parameters(session, net);

  data::BatchLoader weight_loader(weight_split, loader_options(recipe, true, recipe.seed));
  data::BatchLoader alpha_loader(alpha_split, loader_options(recipe, false, recipe.seed + 1));
  const int64_t per_epoch = weight_loader.batches_per_epoch();

  std::unique_ptr<train::Optimizer> weight_opt = train::make_optimizer(recipe.optimizer);
  train::ScheduleConfig sc = recipe.schedule;
  if (sc.type != "constant") sc.total_steps = per_epoch * options.epochs;
  if (sc.type == "cosine") sc.warmup_steps = static_cast<int64_t>(std::llround(recipe.warmup_epochs * per_epoch));
  const std::unique_ptr<train::LrSchedule> schedule = train::make_schedule(sc);
  train::OptimizerConfig ac;
  ac.type = "adamw";
  ac.beta1 = options.alpha_beta1;
  ac.weight_decay = options.alpha_weight_decay;
  std::unique_ptr<train::Optimizer> alpha_opt = train::make_optimizer(ac);

  const bool gumbel = options.relaxation == "gumbel";
  const int64_t total_steps = per_epoch * options.epochs;
  std::mt19937_64 rng(recipe.seed ^ 0x9e3779b97f4a7c15ULL);
  std::uniform_real_distribution<double> uniform(1e-10, 1.0 - 1e-10);
  // Writes the relaxation's noise and 1/τ for step `step` (no-op for a plain softmax).
  const auto relax = [&](int64_t step) {
    if (!gumbel) return;
    const double frac = total_steps > 1 ? static_cast<double>(step) / static_cast<double>(total_steps - 1) : 1.0;
    const double tau = options.tau_start * std::pow(options.tau_end / options.tau_start, frac);
    for (size_t p = 0; p < net.positions.size(); ++p) {
      for (size_t i = 0; i < net.positions[p].op_count(); ++i) {
        g.noise[p][i] = static_cast<float>(-std::log(-std::log(uniform(rng))));
        g.scale[p][i] = static_cast<float>(1.0 / tau);
      }
    }
  };
  const auto clean_probs = [&] {
    std::vector<std::vector<double>> probs;
    for (size_t p = 0; p < net.positions.size(); ++p) {
      const size_t n = net.positions[p].op_count();
      const std::vector<float> zero(n, 0.0f), one(n, 1.0f);
      probs.push_back(mixing_weights(g.alpha[p], zero.data(), one.data(), n));
    }
    return probs;
  };

  log("darts search (lambda " + fmt("%g", lambda) + "): " + std::to_string(net.positions.size()) + " mixed ops, " +
      std::to_string(weight_split.count) + " weight / " + std::to_string(alpha_split.count) + " alpha images, " +
      std::to_string(per_epoch) + " steps/epoch x " + std::to_string(options.epochs) + " epochs (" +
      std::to_string(options.warmup_epochs) + " warm-up), " + options.relaxation + ", weights " +
      weight_opt->describe() + ", alphas " + alpha_opt->describe() + " lr " + fmt("%g", options.alpha_lr));

  DartsTrace trace;
  int64_t step = 0, alpha_epoch = 0;
  alpha_loader.start_epoch(alpha_epoch);
  data::Batch batch;
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    weight_loader.start_epoch(epoch);
    int64_t w_hits = 0, w_count = 0, a_hits = 0, a_count = 0;
    while (weight_loader.next(batch)) {
      relax(step);
      const train::StepResult r = session.train_step(batch.images, batch.labels);
      if (recipe.clip_grad_norm > 0) train::clip_grad_norm(g.weights, recipe.clip_grad_norm);
      weight_opt->step(g.weights, schedule->lr_at(step));
      w_hits += r.correct;
      w_count += r.count;
      if (epoch >= options.warmup_epochs) {
        if (!alpha_loader.next(batch)) {
          alpha_loader.start_epoch(++alpha_epoch);
          if (!alpha_loader.next(batch)) throw Error("darts: the alpha split yields no batch");
        }
        relax(step);
        const train::StepResult ar = session.train_step(batch.images, batch.labels);
        for (size_t p = 0; p < net.positions.size(); ++p) {
          expected_latency(g.alpha[p], g.noise[p], g.scale[p], table.latency_ms[p], lambda, g.alpha_grad[p]);
        }
        alpha_opt->step(g.alphas, options.alpha_lr);
        a_hits += ar.correct;
        a_count += ar.count;
      }
      ++step;
    }
    const auto probs = clean_probs();
    double expected = table.stem_ms + table.head_ms;
    std::string picks;
    for (size_t p = 0; p < probs.size(); ++p) {
      const std::vector<float> zero(probs[p].size(), 0.0f), one(probs[p].size(), 1.0f);
      expected += expected_latency(g.alpha[p], zero.data(), one.data(), table.latency_ms[p], 0, nullptr);
      const size_t best = static_cast<size_t>(std::max_element(probs[p].begin(), probs[p].end()) - probs[p].begin());
      picks += (picks.empty() ? "" : " ") + net.positions[p].name() + "=" + net.positions[p].op_name(best) +
               fmt("(%.2f)", probs[p][best]);
    }
    trace.probs.push_back(probs);
    trace.expected_latency_ms.push_back(expected);
    trace.train_accuracy.push_back(w_count ? static_cast<double>(w_hits) / static_cast<double>(w_count) : 0);
    trace.alpha_accuracy.push_back(a_count ? static_cast<double>(a_hits) / static_cast<double>(a_count) : 0);
    log("darts epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options.epochs) + ": train acc " +
        fmt("%.2f%%", 100 * trace.train_accuracy.back()) + ", alpha acc " +
        (epoch < options.warmup_epochs ? std::string("- (warm-up)")
                                       : fmt("%.2f%%", 100 * trace.alpha_accuracy.back())) +
        ", E[latency] " + fmt("%.4f ms", expected) + "; " + picks);
  }
  const auto probs = clean_probs();
  for (const auto& row : probs) {
    trace.ops.push_back(static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  trace.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return trace;
}

arch::Arch derive_arch(const arch::SearchSpace& space, const DartsOptions& options,
                       const std::vector<BlockPosition>& positions, const std::vector<std::vector<double>>& probs,
                       std::vector<size_t>* ops_out) {
  if (probs.size() != positions.size()) throw Error("derive_arch: one probability row per position expected");
  arch::Arch a;
  a.resolution = options.resolution;
  a.width = options.width;
  a.stages.resize(space.stages.size());
  std::vector<size_t> ops(positions.size());
  for (size_t s = 0; s < space.stages.size(); ++s) {
    std::vector<size_t> at;  // this stage's positions, by block index
    for (size_t p = 0; p < positions.size(); ++p) {
      if (positions[p].stage == s) at.push_back(p);
    }
    const auto best_block = [&](size_t p) {  // the most likely non-skip op
      const BlockPosition& pos = positions[p];
      size_t best = 0;
      for (size_t i = 1; i < pos.candidates.size(); ++i) {
        if (probs[p][i] > probs[p][best]) best = i;
      }
      return best;
    };
    const auto skip_prob = [&](size_t p) {
      return positions[p].optional ? probs[p][positions[p].candidates.size()] : 0.0;
    };
    std::vector<size_t> kept;
    for (size_t p : at) {
      const size_t arg = static_cast<size_t>(std::max_element(probs[p].begin(), probs[p].end()) - probs[p].begin());
      if (!positions[p].is_skip(arg)) kept.push_back(p);
    }
    const auto& depths = space.stages[s].depths;
    if (std::find(depths.begin(), depths.end(), static_cast<int64_t>(kept.size())) == depths.end()) {
      // Not a depth of the stage: the depth most consistent with the skip probabilities.
      int64_t best_d = depths.front();
      double best_score = -1;
      for (int64_t d : depths) {
        double score = 0;
        for (size_t b = 0; b < at.size(); ++b)
          score += static_cast<int64_t>(b) < d ? 1 - skip_prob(at[b]) : skip_prob(at[b]);
        if (score > best_score) best_score = score, best_d = d;
      }
      kept.assign(at.begin(), at.begin() + best_d);
    }
    for (size_t p : at) ops[p] = positions[p].candidates.size();  // skip unless kept
    for (size_t p : kept) {
      const size_t arg = static_cast<size_t>(std::max_element(probs[p].begin(), probs[p].end()) - probs[p].begin());
      ops[p] = positions[p].is_skip(arg) ? best_block(p) : arg;
      a.stages[s].push_back(positions[p].candidates[ops[p]]);
    }
  }
  std::string why;
  if (!arch::arch_in_space(space, a, &why))
    throw Error("darts: derived architecture '" + a.to_string() + "' is not in the space: " + why);
  if (ops_out) *ops_out = ops;
  return a;
}

SearchResult run_darts_search(const NasConfig& config, Store& store, const LatencyFn& latency,
                              const train::ProgressFn& progress) {
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const DartsOptions options = parse_darts_options(config);

  // 1. The latency table (cached; the source names what the entries were measured with).
  const LatencySource& src = config.latency;
  const std::string source = src.method == "predicted"
                                 ? "predicted:" + src.predictor + ":t" + std::to_string(src.threads)
                                 : "measured:" + src.target + ":t" + std::to_string(src.threads);
  const LatencyTable table =
      build_latency_table(config.space, options.resolution, options.width, options.activation, source, latency,
                          (fs::path(config.output_dir) / "latency_table").string(), progress);

  // The study: one trial per λ, parameters = the derived architecture's decisions.
  NasConfig flat = config;
  flat.hyperparameters.clear();  // the darts search does not tune the recipe
  json::Writer settings;
  settings.begin_object();
  settings.field("relaxation", options.relaxation)
      .field("epochs", options.epochs)
      .field("warmup_epochs", options.warmup_epochs);
  settings.field("width", options.width)
      .field("resolution", options.resolution)
      .field("activation", options.activation);
  settings.field("alpha_lr", options.alpha_lr).field("val_fraction", options.val_fraction);
  settings.end_object();
  auto strategy_owner = std::make_unique<DerivedArchStrategy>(make_search_space(flat), objective_directions(config),
                                                              config.seed, settings.str());
  DerivedArchStrategy* strategy = strategy_owner.get();
  StudyOptions so;
  so.objective_names = config.objectives;
  Study study(store, config.name, std::move(strategy_owner), nullptr, so);

  std::vector<CandidateResult> results;
  std::unique_ptr<data::Dataset> weight_split, alpha_split;
  for (size_t li = 0; li < options.lambdas.size(); ++li) {
    const double lambda = options.lambdas[li];
    const std::string lambda_text = json::number(lambda);
    // A rerun re-uses the finished trial of this λ.
    std::optional<TrialRecord> done;
    for (const TrialRecord& r : study.trial_records()) {
      const auto it = r.user_attrs.find("lambda");
      if (r.state == TrialState::kComplete && it != r.user_attrs.end() && it->second == lambda_text) done = r;
    }
    CandidateResult c;
    if (done) {
      c.trial = done->number;
      c.name = "trial_" + std::to_string(done->number);
      c.top1 = done->values.at(0);
      c.latency_ms = attr_number(*done, "latency_ms");
      c.params = static_cast<int64_t>(attr_number(*done, "params"));
      c.size_bytes = static_cast<int64_t>(attr_number(*done, "size_bytes"));
      c.arch = attr_string(*done, "arch");
      const fs::path dir = fs::path(config.output_dir) / "trials" / c.name;
      c.xnn_path = (dir / "model.xnn").string();
      c.onnx_path = (dir / "model.onnx").string();
      log("lambda " + lambda_text + ": re-using trial " + std::to_string(c.trial) + " (" + c.arch + ")");
      results.push_back(c);
      continue;
    }

    if (!weight_split) {
      const int64_t limit = options.train_limit > 0 ? options.train_limit : config.recipe.train_limit;
      const data::Dataset all = data::load_fashion_mnist(config.recipe.data_path, "train", limit);
      const int64_t n_alpha = std::max<int64_t>(1, std::llround(options.val_fraction * static_cast<double>(all.count)));
      weight_split = std::make_unique<data::Dataset>(data::slice_dataset(all, 0, all.count - n_alpha));
      alpha_split = std::make_unique<data::Dataset>(data::slice_dataset(all, all.count - n_alpha, n_alpha));
    }
    Supernet net = build_supernet(config.space, table.positions, options.resolution, options.width, config.seed);
    train::TrainConfig recipe = config.recipe;
    recipe.seed = config.seed;
    const DartsTrace trace =
        search_supernet(net, table, options, lambda, recipe, *weight_split, *alpha_split, progress);
    std::vector<size_t> ops;
    const arch::Arch a = derive_arch(config.space, options, table.positions, trace.probs.back(), &ops);
    const double table_ms = table.predict_ms(ops);
    log("lambda " + lambda_text + ": derived " + a.to_string() + " in " + fmt("%.1f s", trace.seconds) +
        ", table latency " + fmt("%.4f ms", table_ms));

    strategy->next(params_from_arch(config.space, a));
    TrialContext ctx = study.ask();
    ctx.set_user_attr("lambda", lambda_text);
    ctx.set_user_attr("arch", json::quote(a.to_string()));
    ctx.set_user_attr("table_latency_ms", json::number(table_ms));
    ctx.set_user_attr("search_seconds", json::number(trace.seconds));
    std::string history = "[";
    for (size_t e = 0; e < trace.probs.size(); ++e) history += (e ? "," : "") + probs_json(trace.probs[e]);
    ctx.set_user_attr("alpha_history", history + "]");
    for (size_t e = static_cast<size_t>(options.warmup_epochs); e < trace.alpha_accuracy.size(); ++e) {
      ctx.report(static_cast<int64_t>(e + 1), trace.alpha_accuracy[e]);  // epochs that stepped the alphas
    }
    try {
      c.name = "trial_" + std::to_string(ctx.number());
      c.trial = ctx.number();
      c.arch = a.to_string();
      train::TrainConfig r = config.recipe;
      r.resume = false;
      r.name = config.name + "_" + c.name;
      auto model = arch::build_arch_model(config.space, a, config.seed + static_cast<uint64_t>(ctx.number()), 0);
      CandidateResult m = train_and_measure(model, r, (fs::path(config.output_dir) / "trials" / c.name).string(),
                                            latency, progress, nullptr);
      m.name = c.name;
      m.trial = c.trial;
      m.arch = c.arch;
      c = std::move(m);
      ctx.set_user_attr("latency_ms", json::number(c.latency_ms));
      ctx.set_user_attr("params", std::to_string(c.params));
      ctx.set_user_attr("size_bytes", std::to_string(c.size_bytes));
      study.tell(ctx, candidate_outcome(config, c));
    } catch (const std::exception& e) {
      study.tell_failed(ctx, e.what());
      throw;
    }
    log("lambda " + lambda_text + ": " + c.name + " retrained: top1 " + fmt("%.2f%%", 100 * c.top1) + ", measured " +
        fmt("%.4f ms", c.latency_ms) + " vs table sum " + fmt("%.4f ms", table_ms) + " (" +
        fmt("%+.1f%%", 100 * (table_ms / c.latency_ms - 1)) + "), " + std::to_string(c.params) + " params");
    results.push_back(c);
  }

  SearchResult result;
  result.study = config.name;
  for (const TrialRecord& r : study.trial_records()) {
    if (r.state == TrialState::kComplete) ++result.complete;
    if (r.state == TrialState::kFail && !r.interrupted) ++result.failed;
  }
  result.baselines = train_baselines(config, latency, progress);
  result.front = pareto_results(config, results);
  export_front(config, result.front, progress);
  return result;
}

}  // namespace xnn::nas
