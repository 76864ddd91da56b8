// Benchmark objectives with known optima for comparing search strategies (all minimised),
// implemented identically in scripts/bench_search_vs_optuna.py (same spaces, same values):
//
//   branin        Branin-Hoo on x1 in [-5, 10], x2 in [0, 15]; optimum 0.397887357729738
//   hartmann6     Hartmann 6-D on [0, 1]^6; optimum -3.32236801141551
//   branin_mixed  Branin plus a categorical "op" (offsets conv 1, dw 0, skip 2, pool 0.5), an int
//                 "k" in [1, 8] (0.1 (k - 3)^2) and a log float "lr" in [1e-4, 1]
//                 (0.5 (log10 lr + 2)^2); optimum 0.397887357729738 (op dw, k 3, lr 0.01)
//   nas_tabular   8 categorical decisions of 4 operations each (65536 architectures): the error
//                 is 0.05 + 0.9 (sum of per-decision effects + 0.5 x sum of adjacent pairwise
//                 interactions) / 11.5, every effect drawn in [0, 1) from splitmix64(seed 2026);
//                 the optimum is found exactly by dynamic programming along the chain.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "nas/search/search_space.h"

namespace xnn::nas::bench {

struct BenchFunction {
  std::string name;
  SearchSpace space;
  double optimum = 0;  // the minimum
  std::function<double(const TrialParams&)> evaluate;
};

const std::vector<std::string>& bench_function_names();
// An Error lists the known names.
BenchFunction make_bench_function(const std::string& name);

double branin(double x1, double x2);
double hartmann6(const std::vector<double>& x);

}  // namespace xnn::nas::bench
