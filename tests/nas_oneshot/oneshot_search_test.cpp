// The one-shot search end to end on the CI config (supernet, subnet study, retraining, export)
// with a latency stand-in (the model file's size), and its resumption: a rerun loads the
// finished supernet and the scored subnets instead of redoing them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "nas/format.h"
#include "nas/oneshot/oneshot_search.h"
#include "nas/oneshot/supernet_weights.h"
#include "nas/study/study.h"
#include "nas/study/study_store.h"

namespace fs = std::filesystem;
using namespace xnn;
using namespace xnn::nas;

namespace {

CandidateResult cand(const char* name, double top1, double ms, const char* arch = nullptr) {
  CandidateResult c;
  c.name = name;
  c.arch = arch ? arch : name;
  c.top1 = top1;
  c.latency_ms = ms;
  return c;
}

// A scored pool for the pick rules: "g" is "d"'s architecture scored again under another trial.
std::vector<CandidateResult> scored_pool() {
  return {cand("a", 0.50, 0.030), cand("b", 0.52, 0.050), cand("c", 0.49, 0.020), cand("d", 0.51, 0.040),
          cand("g", 0.51, 0.039, "d"), cand("e", 0.50, 0.041), cand("f", 0.47, 0.010)};
}

std::string names(const std::vector<CandidateResult>& v) {
  std::string s;
  for (const CandidateResult& c : v) s += c.name;
  return s;
}

// An empty scratch folder of this process.
fs::path fresh_dir(const std::string& prefix) {
  const fs::path dir = fs::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The CI one-shot config writing under dir/out, with more overrides.
NasConfig ci_config(const fs::path& dir, std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "output.dir=" + (dir / "out").string());
  return load_nas_config(std::string(XNN_SOURCE_DIR) + "/configs/nas/fmnist_oneshot_ci.yaml", overrides);
}

}  // namespace

TEST(OneshotSearch, ReturnsAFrontOfExportedRetrainedModelsAndResumes) {
  const fs::path dir = fresh_dir("oneshot_search");
  const NasConfig config = ci_config(dir, {});
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e5; };
  std::vector<std::string> lines;
  const train::ProgressFn log = [&](const std::string& l) { lines.push_back(l); };

  SearchResult first;
  {
    Store store((dir / "nas.db").string());
    first = run_oneshot_search(config, store, latency, log);
  }
  EXPECT_EQ(first.study, "fmnist_oneshot_ci.subnets");
  EXPECT_EQ(first.complete, 6);
  ASSERT_GE(first.front.size(), 1u);
  ASSERT_LE(first.front.size(), 1u);  // oneshot.retrain: 1
  for (const CandidateResult& c : first.front) {
    EXPECT_EQ(c.name.rfind("subnet_", 0), 0u) << c.name;
    EXPECT_GE(c.trial, 0);
    EXPECT_EQ(fs::path(c.xnn_path).parent_path(), dir / "out" / "front");
    EXPECT_TRUE(fs::is_regular_file(c.xnn_path)) << c.xnn_path;
    EXPECT_TRUE(fs::is_regular_file(c.onnx_path)) << c.onnx_path;
    EXPECT_GT(c.top1, 0.0);
    EXPECT_LE(c.top1, 1.0);
    EXPECT_GT(c.latency_ms, 0.0);
    EXPECT_GT(c.params, 0);
    EXPECT_LE(c.params, 200000);  // the config's constraint
    EXPECT_NO_THROW(arch::parse_arch(c.arch));
    EXPECT_EQ(arch::parse_arch(c.arch).width, 0.5);  // the supernet's width
  }
  ASSERT_EQ(first.baselines.size(), 1u);
  EXPECT_EQ(first.baselines[0].name, "tiny_mobilenet");
  EXPECT_TRUE(fs::is_regular_file(dir / "out" / "supernet" / "supernet.tensors"));
  const auto has = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("supernet epoch 1/1: "));
  EXPECT_TRUE(has("generation 2 [6/6 subnets]; front (inherited weights): subnet_"));
  EXPECT_TRUE(has("retrained subnet_"));
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("subnet_5 \"r28-", 0) == 0; }));

  lines.clear();
  Store store((dir / "nas.db").string());
  const SearchResult second = run_oneshot_search(config, store, latency, log);
  EXPECT_TRUE(has("supernet: resuming from")) << "supernet not re-used";
  EXPECT_TRUE(has("resuming subnet study 'fmnist_oneshot_ci.subnets': 6 subnet(s) scored"));
  EXPECT_FALSE(has("supernet epoch 1/1: "));
  EXPECT_FALSE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("subnet_6 ", 0) == 0; }));
  ASSERT_EQ(second.front.size(), first.front.size());
  EXPECT_EQ(second.front[0].arch, first.front[0].arch);
  EXPECT_DOUBLE_EQ(second.front[0].top1, first.front[0].top1);  // the retrained model re-used
  fs::remove_all(dir);
}

// oneshot.sharing: pointwise end to end: the supernet logs it, its checkpoint keys the 1x1
// convolutions by expansion alone and the depthwise ones by kernel and expansion, and the search
// scores and retrains subnets from it as from an unshared one.
TEST(OneshotSearch, PointwiseSharedSupernetKeysOneByOnesByExpansion) {
  const fs::path dir = fresh_dir("oneshot_shared");
  const NasConfig config = ci_config(dir, {"oneshot.sharing=pointwise"});
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e5; };
  std::vector<std::string> lines;
  Store store((dir / "nas.db").string());
  const SearchResult r = run_oneshot_search(config, store, latency, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(r.complete, 6);
  ASSERT_EQ(r.front.size(), 1u);
  EXPECT_GT(r.front[0].top1, 0.0);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.find("block weights shared: pointwise") != std::string::npos; }));
  int pointwise = 0, depthwise = 0;
  for (const auto& [entry, t] : load_tensor_file((dir / "out" / "supernet" / "supernet.tensors").string())) {
    if (entry.rfind("weight/stage", 0) != 0) continue;
    const std::string key = entry.substr(7);
    const std::string choice = key.substr(key.find('/') + 1, key.rfind('/') - key.find('/') - 1);
    EXPECT_EQ(choice.find("se"), std::string::npos) << key;  // SE on and off share
    if (key.find("/depthwise.") != std::string::npos) {
      EXPECT_EQ(choice[0], 'k') << key;
      ++depthwise;
    } else {
      EXPECT_EQ(choice[0], 'e') << key;
      ++pointwise;
    }
  }
  EXPECT_GT(pointwise, 0);
  EXPECT_GT(depthwise, 0);
  fs::remove_all(dir);
}

// retrain_at_baselines: the baseline's untrained model is measured once (the figure kept for a
// resumed search), and the best inherited-accuracy subnet within that latency is retrained
// beside the accuracy winner; with a budget no subnet meets, none is added.
TEST(OneshotSearch, RetrainsTheBestSubnetWithinEachBaselinesLatency) {
  const fs::path dir = fresh_dir("oneshot_baselines");
  const NasConfig config = ci_config(dir, {"oneshot.retrain_at_baselines=true"});
  // Stand-in latency: the model file's size (the baseline's 3 stages against the subnets' 3-6 blocks).
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e5; };
  std::vector<std::string> lines;
  const train::ProgressFn log = [&](const std::string& l) { lines.push_back(l); };
  const auto line_with = [&](const std::string& text) -> std::string {
    for (const std::string& l : lines) {
      if (l.find(text) != std::string::npos) return l;
    }
    return "";
  };
  {
    Store store((dir / "nas.db").string());
    run_oneshot_search(config, store, latency, log);
  }
  const fs::path record = dir / "out" / "baselines" / "tiny_mobilenet" / "untrained_latency_ms";
  ASSERT_TRUE(fs::is_regular_file(record));
  EXPECT_TRUE(fs::is_regular_file(record.parent_path() / "untrained.xnn"));  // the probe is kept
  double budget = 0;
  std::ifstream(record) >> budget;
  EXPECT_GT(budget, 0.0);

  // Which subnets the search scored, with their stand-in latency and inherited accuracy.
  Store store((dir / "nas.db").string());
  StudyStore studies(store);
  const std::optional<StudyRecord> subnets = studies.find_study("fmnist_oneshot_ci.subnets");
  ASSERT_TRUE(subnets.has_value());
  std::map<std::string, std::pair<double, double>> scored;  // name -> (top1, latency)
  double best_top1 = -1;
  for (const TrialRecord& r : studies.trials(subnets->id)) {
    if (r.state != TrialState::kComplete) continue;
    const double ms = std::stod(r.user_attrs.at("latency_ms"));
    scored["subnet_" + std::to_string(r.number)] = {r.values.at(0), ms};
    if (ms <= budget) best_top1 = std::max(best_top1, r.values.at(0));
  }
  const std::string pick = line_with("baseline tiny_mobilenet (");
  ASSERT_FALSE(pick.empty());
  if (best_top1 < 0) {
    EXPECT_NE(pick.find("no subnet within it"), std::string::npos) << pick;
  } else {
    const std::string key = "its best subnet within it is ";
    const size_t at = pick.find(key);
    ASSERT_NE(at, std::string::npos) << pick;
    const std::string name = pick.substr(at + key.size(), pick.find(' ', at + key.size()) - at - key.size());
    ASSERT_TRUE(scored.count(name)) << pick;
    EXPECT_EQ(scored[name].first, best_top1) << pick;  // ties in accuracy may pick either
    EXPECT_LE(scored[name].second, budget) << pick;
    EXPECT_FALSE(line_with("retrained " + name + ":").empty());
  }

  // A resumed search reads the recorded budget: one no subnet meets adds none.
  std::ofstream(record) << "1e-9\n";
  lines.clear();
  run_oneshot_search(config, store, latency, log);
  EXPECT_NE(line_with("baseline tiny_mobilenet (").find("no subnet within it"), std::string::npos);
  fs::remove_all(dir);
}

TEST(OneshotSearch, BestWithinLatencyPicksByInheritedTop1UnderTheBudget) {
  const std::vector<CandidateResult> scored = scored_pool();
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 1)), "d");      // b is over the budget
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 3)), "dae");    // ties keep their order: a before e
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 10)), "daecf");
  EXPECT_EQ(names(best_within_latency(scored, 0.005, 2)), "");       // nothing fits
  EXPECT_EQ(names(best_within_latency(scored, 1.0, 2)), "bd");
  // A floor (retrain_band): only subnets of at least that latency.
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 10, 0.030)), "dae");
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 10, 0.0405)), "e");
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 10, 0.05)), "");

  // The retrain list: a baseline's picks join the front winners only with a new architecture
  // ("g" is "d" under another trial number, "d" itself is already there).
  std::vector<CandidateResult> chosen = best_within_latency(scored, std::numeric_limits<double>::infinity(), 2);
  EXPECT_EQ(names(chosen), "bd");
  EXPECT_EQ(append_new_architectures(chosen, {scored[4], scored[0], scored[3]}), 1);
  EXPECT_EQ(names(chosen), "bda");
  EXPECT_EQ(append_new_architectures(chosen, {}), 0);
}

// Screening (oneshot.screen_epochs): each baseline's picks are trained briefly and ranked on
// the validation images; only screen_keep go on to the full retrain, screened once per
// architecture, and a resumed search re-uses the screens.
TEST(OneshotSearch, ScreeningTrainsEachPickBrieflyAndRetrainsOnlyTheBest) {
  const fs::path dir = fresh_dir("oneshot_screen");
  fs::create_directories(dir / "out" / "baselines" / "tiny_mobilenet");
  // Every subnet within the baseline's (recorded) latency, so the picks are the 3 best inherited.
  std::ofstream(dir / "out" / "baselines" / "tiny_mobilenet" / "untrained_latency_ms") << "1e9\n";
  const NasConfig config =
      ci_config(dir, {"oneshot.retrain=0", "oneshot.retrain_at_baselines=true", "oneshot.retrain_per_baseline=3",
                      "oneshot.screen_epochs=1", "oneshot.screen_keep=1", "train.epochs=2"});
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e5; };
  std::vector<std::string> lines;
  const train::ProgressFn log = [&](const std::string& l) { lines.push_back(l); };
  const auto count_with = [&](const std::string& text) {
    int n = 0;
    for (const std::string& l : lines) n += l.find(text) != std::string::npos;
    return n;
  };
  SearchResult first;
  {
    Store store((dir / "nas.db").string());
    first = run_oneshot_search(config, store, latency, log);
  }
  // Three distinct picks screened (or fewer when the 6 subnets repeat an architecture), one kept
  // and retrained for the recipe's 2 epochs.
  const int screens = count_with("screen subnet_");
  EXPECT_GE(screens, 2);
  EXPECT_LE(screens, 3);
  EXPECT_EQ(count_with("retrained subnet_"), 1);
  std::string kept;
  for (const std::string& l : lines) {
    const std::string key = "baseline tiny_mobilenet: screening keeps ";
    if (l.rfind(key, 0) == 0) kept = l.substr(key.size());
  }
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.find(','), std::string::npos);  // screen_keep: 1
  // The kept subnet has the best screened validation top-1 of the picks.
  double best = -1, kept_val = -1;
  for (const std::string& l : lines) {
    if (l.rfind("screen subnet_", 0) != 0) continue;
    const size_t at = l.find("validation top1 ");
    ASSERT_NE(at, std::string::npos) << l;
    const double v = std::stod(l.substr(at + 16));
    best = std::max(best, v);
    if (l.rfind("screen " + kept + " ", 0) == 0) kept_val = v;
  }
  EXPECT_EQ(kept_val, best);
  EXPECT_TRUE(fs::is_regular_file(dir / "out" / "screen" / kept / "model.xnn"));
  ASSERT_EQ(first.front.size(), 1u);
  EXPECT_EQ(first.front[0].name, kept);

  // Resumed: the same pick, from the finished screens (no training epochs run again).
  lines.clear();
  Store store((dir / "nas.db").string());
  const SearchResult second = run_oneshot_search(config, store, latency, log);
  ASSERT_EQ(second.front.size(), 1u);
  EXPECT_EQ(second.front[0].name, kept);
  EXPECT_EQ(count_with("screen subnet_"), screens);
  fs::remove_all(dir);
}

// trials_per_baseline: a study per baseline, top-1 under its latency and above retrain_band of
// it, seeded with the front search's subnets nearest its cost, whose subnets join the picks'
// pool; a resumed search continues it.
TEST(OneshotSearch, EachBaselineGetsAStudyUnderItsLatency) {
  const fs::path dir = fresh_dir("oneshot_target");
  const NasConfig config = ci_config(
      dir, {"oneshot.retrain_at_baselines=true", "oneshot.trials_per_baseline=4", "oneshot.retrain_band=0.25"});
  const LatencyFn latency = [](const std::string& path) { return static_cast<double>(fs::file_size(path)) / 1e5; };
  std::vector<std::string> lines;
  const train::ProgressFn log = [&](const std::string& l) { lines.push_back(l); };
  const auto count_prefix = [&](const std::string& p) {
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(p, 0) == 0; });
  };
  Store store((dir / "nas.db").string());
  run_oneshot_search(config, store, latency, log);
  EXPECT_EQ(count_prefix("tiny_mobilenet_subnet_"), 4);
  EXPECT_EQ(count_prefix("subnet_"), 6);  // the main study: trials 6
  double budget = 0;
  std::ifstream(dir / "out" / "baselines" / "tiny_mobilenet" / "untrained_latency_ms") >> budget;
  StudyStore studies(store);
  const std::optional<StudyRecord> target = studies.find_study("fmnist_oneshot_ci.subnets.tiny_mobilenet");
  ASSERT_TRUE(target.has_value());
  const std::vector<TrialRecord> trials = studies.trials(target->id);
  ASSERT_EQ(trials.size(), 4u);

  // Its first trials are the front search's subnets nearest the baseline's cost: min(a
  // generation (3), half its trials (2)) of them, the most accurate within 1.25x its latency
  // first, then the fastest, one per architecture.
  EXPECT_EQ(count_prefix("baseline tiny_mobilenet: its study starts from 2 subnet(s) of the front search"), 1);
  struct Scored {
    double top1, ms;
    std::string arch;
  };
  std::vector<Scored> near, rest;
  for (const TrialRecord& r : studies.trials(studies.find_study("fmnist_oneshot_ci.subnets")->id)) {
    if (r.state != TrialState::kComplete) continue;
    const Scored x{r.values.at(0), std::stod(r.user_attrs.at("latency_ms")), r.user_attrs.at("arch")};
    (x.ms <= 1.25 * budget ? near : rest).push_back(x);
  }
  std::stable_sort(near.begin(), near.end(), [](const Scored& a, const Scored& b) { return a.top1 > b.top1; });
  std::stable_sort(rest.begin(), rest.end(), [](const Scored& a, const Scored& b) { return a.ms < b.ms; });
  near.insert(near.end(), rest.begin(), rest.end());
  std::vector<std::string> seeds;
  for (const Scored& x : near) {
    if (seeds.size() < 2 && std::find(seeds.begin(), seeds.end(), x.arch) == seeds.end()) seeds.push_back(x.arch);
  }
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_EQ(trials[0].user_attrs.at("arch"), seeds[0]);
  EXPECT_EQ(trials[1].user_attrs.at("arch"), seeds[1]);
  for (const TrialRecord& r : trials) {
    ASSERT_EQ(r.state, TrialState::kComplete);
    ASSERT_EQ(r.values.size(), 1u);  // top-1 only
    // Its constraints: the config's params bound, then the latency ratio to the baseline's
    // untrained model measured right after it, minus 1, then the band's floor minus that ratio.
    ASSERT_EQ(r.constraints.size(), 3u);
    const double ms = std::stod(r.user_attrs.at("latency_ms")), base = std::stod(r.user_attrs.at("baseline_latency_ms"));
    EXPECT_NEAR(base, budget, 1e-9 * budget);  // the stand-in latency is the file's size: the same probe
    EXPECT_NEAR(std::stod(r.user_attrs.at("latency_ratio")), ms / base, 1e-8);  // attributes keep 10 digits
    EXPECT_NEAR(r.constraints[1], ms / base - 1, 1e-8);
    EXPECT_NEAR(r.constraints[2], 0.25 - ms / base, 1e-8);
  }
  int in_band = 0;
  for (const TrialRecord& r : trials) {
    const double ratio = std::stod(r.user_attrs.at("latency_ratio"));
    in_band += ratio <= 1 && ratio >= 0.25;
  }
  EXPECT_EQ(count_prefix("baseline tiny_mobilenet (" + fmt("%.3f ms", budget) + " untrained): its study scored 4 subnets, "),
            1);
  const std::string band_line = std::to_string(in_band) + " of them at least 0.25x its latency (retrain_band)";
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [&](const std::string& l) { return l.find(band_line) != std::string::npos; }),
            1);
  lines.clear();
  run_oneshot_search(config, store, latency, log);
  EXPECT_EQ(count_prefix("tiny_mobilenet_subnet_"), 0);
  EXPECT_EQ(count_prefix("resuming subnet study 'fmnist_oneshot_ci.subnets.tiny_mobilenet': 4 subnet(s) scored"), 1);
  EXPECT_EQ(count_prefix("baseline tiny_mobilenet: its study starts from"), 0);  // both seeds ran
  fs::remove_all(dir);
}

TEST(OneshotSearch, BestScreenedKeepsTheBestValidationScoresInPickOrderOnTies) {
  const auto cand = [](const char* name) {
    CandidateResult c;
    c.name = name;
    c.arch = std::string("arch_") + name;
    return c;
  };
  const std::vector<CandidateResult> picks = {cand("a"), cand("b"), cand("c"), cand("d")};
  const std::map<std::string, double> screened = {{"arch_a", 0.80}, {"arch_b", 0.85}, {"arch_c", 0.85}, {"arch_d", 0.70}};
  EXPECT_EQ(names(best_screened(picks, screened, 1)), "b");
  EXPECT_EQ(names(best_screened(picks, screened, 3)), "bca");
  EXPECT_EQ(names(best_screened(picks, screened, 9)), "bcad");
  EXPECT_THROW(best_screened({cand("z")}, screened, 1), Error);
}

// best_within_latency's confirmation: called in pick order on candidates that pass the budget,
// a rejected architecture is skipped under every trial number, the confirmed latency replaces
// the recorded one, and max_confirms bounds the calls.
TEST(OneshotSearch, BestWithinLatencyConfirmsPicksInOrder) {
  const std::vector<CandidateResult> scored = scored_pool();  // inherited order: b, d, g, a, e, c, f
  std::string asked;
  const PickConfirm reject_d = [&](CandidateResult& c) {
    asked += c.name;
    c.latency_ms *= 2;  // the confirmed figure
    return c.arch != "d";
  };
  std::vector<CandidateResult> picks = best_within_latency(scored, 0.041, 2, 0, reject_d);
  EXPECT_EQ(names(picks), "ae");
  EXPECT_EQ(asked, "dae");  // g is d's architecture: not asked again
  EXPECT_DOUBLE_EQ(picks[0].latency_ms, 0.060);
  asked.clear();
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 3, 0, reject_d, 2)), "a");  // two calls: d, a
  EXPECT_EQ(asked, "da");
  asked.clear();
  EXPECT_EQ(names(best_within_latency(scored, 0.041, 1, 0.035, reject_d)), "e");  // floor: c, f, a never asked
  EXPECT_EQ(asked, "de");
}

// latency.confirm_rounds with retrain_at_baselines: each pick's model and the baseline's are
// measured back to back; a pick slower over those rounds is dropped, the verdicts are kept for
// a resumed search, and confirmed picks are retrained with their confirmed latency.
TEST(OneshotSearch, PicksAreConfirmedBackToBackWithTheBaseline) {
  const fs::path dir = fresh_dir("oneshot_confirm");
  const NasConfig config = ci_config(
      dir, {"oneshot.retrain_at_baselines=true", "oneshot.retrain_per_baseline=2", "latency.confirm_rounds=3"});
  // Stand-in latency: the file's size, the baseline's probe 100x (every subnet is within its
  // budget); with `inflate`, a model under a confirm/ folder 1000x (slower in every round).
  bool inflate = true;
  int confirm_calls = 0;
  const LatencyFn latency = [&](const std::string& path) {
    double ms = static_cast<double>(fs::file_size(path)) / 1e5;
    if (path.find("untrained.xnn") != std::string::npos) ms *= 100;
    if (path.find("/confirm/") != std::string::npos) {
      ++confirm_calls;
      if (inflate) ms *= 1000;
    }
    return ms;
  };
  std::vector<std::string> lines;
  const train::ProgressFn log = [&](const std::string& l) { lines.push_back(l); };
  const auto with_prefix = [&](const std::string& p) {
    std::vector<std::string> out;
    for (const std::string& l : lines) {
      if (l.rfind(p, 0) == 0) out.push_back(l);
    }
    return out;
  };
  const auto line_with = [&](const std::string& text) -> std::string {
    for (const std::string& l : lines) {
      if (l.find(text) != std::string::npos) return l;
    }
    return "";
  };
  const fs::path verdicts = dir / "out" / "baselines" / "tiny_mobilenet" / "confirmed_picks.tsv";
  const auto verdict_lines = [&] {
    std::ifstream in(verdicts);
    int n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  };
  Store store((dir / "nas.db").string());

  // 1. Slower in every round: every candidate tried (at most 3 x 2) is dropped.
  run_oneshot_search(config, store, latency, log);
  const std::vector<std::string> confirms = with_prefix("confirm subnet_");
  ASSERT_GE(confirms.size(), 1u);
  EXPECT_LE(confirms.size(), 6u);
  for (const std::string& l : confirms) {
    EXPECT_NE(l.find(" vs tiny_mobilenet: latency ratio per round "), std::string::npos) << l;
    EXPECT_NE(l.find(": slower, dropped"), std::string::npos) << l;
  }
  EXPECT_EQ(confirm_calls, 3 * static_cast<int>(confirms.size()));  // 3 rounds, the pick once per round
  EXPECT_EQ(verdict_lines(), static_cast<int>(confirms.size()));
  EXPECT_TRUE(fs::is_empty(verdicts.parent_path() / "confirm"));  // the measured models are removed
  EXPECT_NE(line_with("no subnet within it confirmed by 3 back-to-back rounds"), "");

  // 2. Resumed: the recorded verdicts decide, nothing is measured again.
  lines.clear();
  confirm_calls = 0;
  run_oneshot_search(config, store, latency, log);
  EXPECT_TRUE(with_prefix("confirm subnet_").empty());
  EXPECT_EQ(confirm_calls, 0);
  EXPECT_NE(line_with("no subnet within it confirmed"), "");

  // 2b. Another number of rounds: the recorded verdicts do not count, each pick is measured again.
  const NasConfig five = ci_config(
      dir, {"oneshot.retrain_at_baselines=true", "oneshot.retrain_per_baseline=2", "latency.confirm_rounds=5"});
  lines.clear();
  confirm_calls = 0;
  run_oneshot_search(five, store, latency, log);
  EXPECT_EQ(with_prefix("confirm subnet_").size(), confirms.size());
  EXPECT_EQ(confirm_calls, 5 * static_cast<int>(confirms.size()));
  EXPECT_EQ(verdict_lines(), 2 * static_cast<int>(confirms.size()));

  // 3. Verdicts forgotten, no slower in the rounds: the picks stay, with the confirmed ratio x
  // the budget as their latency, and are retrained.
  fs::remove(verdicts);
  inflate = false;
  lines.clear();
  run_oneshot_search(config, store, latency, log);
  const std::vector<std::string> kept = with_prefix("confirm subnet_");
  ASSERT_GE(kept.size(), 1u);
  for (const std::string& l : kept) EXPECT_NE(l.find(": kept"), std::string::npos) << l;
  const std::string pick = line_with("its best subnet within it is ");
  ASSERT_NE(pick, "");
  const std::string key = "its best subnet within it is ";
  const size_t at = pick.find(key) + key.size();
  const std::string name = pick.substr(at, pick.find(' ', at) - at);
  EXPECT_NE(line_with("confirm " + name + " vs tiny_mobilenet"), "");
  EXPECT_NE(line_with("retrained " + name + ":"), "");
  fs::remove_all(dir);
}
