// nas_strategy_bench: runs black-box strategies on the benchmark functions (bench_functions.h)
// for B trials x S seeds and prints JSON: for every (function, strategy, seed) the best value
// found so far after each trial. scripts/bench_search_vs_optuna.py runs it beside Optuna.
//
//   nas_strategy_bench [--functions branin,hartmann6,branin_mixed,nas_tabular]
//                      [--strategies random,evolution,tpe] [--budget 100] [--seeds 5]
//                      [--store DB]
//
// With --store, every run is a Study recorded in the results database DB (named
// FUNCTION-STRATEGY-sSEED); re-running resumes each study up to the budget.
//
// Strategies: random, evolution (population 20, tournament 5), evolution:POPULATION:SAMPLE, tpe
// (Optuna's defaults + skipping repeats), tpe_plain (exactly Optuna's: repeats allowed),
// tpe_univariate.
//
// Also prints, per function, its optimum and its value at 5 fixed random probe points (the
// Python twin checks them). Seeds are 0 .. S-1. Strategies are driven by plain ask/tell (no database), draw = trial index.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "harness/util/json.h"
#include "nas/bench/bench_functions.h"
#include "nas/search/aging_evolution.h"
#include "nas/search/random_search.h"
#include "nas/search/tpe.h"
#include "nas/study/study.h"

using namespace xnn::nas;

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, uint64_t seed) {
  std::vector<Direction> dirs = {Direction::kMinimize};
  if (name == "random") return std::make_unique<RandomSearch>(space, dirs, seed);
  if (name == "evolution") return std::make_unique<AgingEvolution>(space, dirs, seed);
  if (name.rfind("evolution:", 0) == 0) {  // evolution:POPULATION:SAMPLE
    AgingEvolutionOptions o;
    if (std::sscanf(name.c_str(), "evolution:%d:%d", &o.population_size, &o.sample_size) != 2)
      throw xnn::Error("strategy '" + name + "': expected evolution:POPULATION:SAMPLE");
    return std::make_unique<AgingEvolution>(space, dirs, seed, o);
  }
  if (name == "tpe") return std::make_unique<Tpe>(space, dirs, seed);
  if (name == "tpe_univariate") {
    TpeOptions o;
    o.multivariate = false;
    return std::make_unique<Tpe>(space, dirs, seed, o);
  }
  if (name == "tpe_plain") {  // exactly Optuna's algorithm: repeats allowed
    TpeOptions o;
    o.skip_duplicates = false;
    return std::make_unique<Tpe>(space, dirs, seed, o);
  }
  throw xnn::Error("unknown strategy '" + name +
                   "' (expected random, evolution, evolution:POPULATION:SAMPLE, tpe, tpe_univariate or tpe_plain)");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> functions = bench::bench_function_names();
  std::vector<std::string> strategies = {"random", "evolution", "tpe"};
  int budget = 100, seeds = 5;
  std::string store_path;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw xnn::Error(a + ": expected a value");
        return argv[++i];
      };
      if (a == "--functions") functions = split_list(next());
      else if (a == "--strategies") strategies = split_list(next());
      else if (a == "--budget") budget = std::stoi(next());
      else if (a == "--seeds") seeds = std::stoi(next());
      else if (a == "--store") store_path = next();
      else if (a == "-h" || a == "--help") {
        std::cout << "usage: nas_strategy_bench [--functions LIST] [--strategies LIST] [--budget N] [--seeds S]"
                     " [--store DB]\n";
        return 0;
      } else {
        throw xnn::Error("unknown option '" + a + "'");
      }
    }
    if (budget < 1 || seeds < 1) throw xnn::Error("--budget and --seeds must be >= 1");
    std::unique_ptr<xnn::Store> store;
    if (!store_path.empty()) store = std::make_unique<xnn::Store>(store_path);

    xnn::json::Writer w;
    w.begin_object().field("budget", budget).field("seeds", seeds).key("functions").begin_object();
    for (const std::string& fname : functions) {
      bench::BenchFunction f = bench::make_bench_function(fname);
      w.key(fname).begin_object().key("optimum").raw(param_value_text(f.optimum));
      // Probe points (random, fixed seed): the Python twin recomputes them to prove it is identical.
      w.key("probes").begin_array();
      for (uint64_t i = 0; i < 5; ++i) {
        auto rng = derive_rng(12345, i);
        TrialParams params = f.space.sample(rng);
        w.begin_object().key("params").begin_object();
        for (const auto& [name, value] : params) {
          w.key(name);
          if (const auto* s = std::get_if<std::string>(&value)) w.value(*s);
          else w.raw(param_value_text(value));
        }
        w.end_object().key("value").raw(param_value_text(f.evaluate(params))).end_object();
      }
      w.end_array().key("runs").begin_array();
      for (const std::string& sname : strategies) {
        for (int seed = 0; seed < seeds; ++seed) {
          auto strategy = make_strategy(sname, f.space, static_cast<uint64_t>(seed));
          auto start = std::chrono::steady_clock::now();
          std::vector<double> values;
          if (store) {
            Study study(*store, fname + "-" + sname + "-s" + std::to_string(seed), std::move(strategy), nullptr,
                        {{fname}});
            int done = static_cast<int>(study.trials().size());
            study.optimize([&](TrialContext& t) { return TrialOutcome{{f.evaluate(t.params())}, {}}; },
                           std::max(0, budget - done));
            for (const Trial& t : study.trials()) {
              if (t.state == TrialState::kComplete) values.push_back(t.values[0]);
            }
          } else {
            for (int t = 0; t < budget; ++t) {
              Trial trial;
              trial.number = t;
              trial.params = strategy->ask(t);
              trial.state = TrialState::kComplete;
              trial.values = {f.evaluate(trial.params)};
              strategy->tell(trial);
              values.push_back(trial.values[0]);
            }
          }
          std::vector<double> best;
          for (double v : values) best.push_back(best.empty() ? v : std::min(best.back(), v));
          double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          w.begin_object().field("strategy", sname).field("seed", seed).field("seconds", secs).key("best");
          w.begin_array();
          for (double b : best) w.raw(param_value_text(b));
          w.end_array().end_object();
        }
      }
      w.end_array().end_object();
    }
    w.end_object().end_object();
    std::cout << w.str() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "nas_strategy_bench: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
