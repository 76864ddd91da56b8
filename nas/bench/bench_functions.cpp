#include "nas/bench/bench_functions.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/core/error.h"

namespace xnn::nas::bench {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Same generator as the Python twin: splitmix64, 53-bit uniform doubles in [0, 1).
struct SplitMix64 {
  uint64_t state;
  double uniform() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

constexpr int kDecisions = 8;
constexpr int kOps = 4;
constexpr uint64_t kTableSeed = 2026;
const char* const kOpNames[kOps] = {"conv3x3", "conv5x5", "dwconv3x3", "skip"};

struct Table {
  double unary[kDecisions][kOps];
  double pair[kDecisions - 1][kOps][kOps];
  double error(const int* c) const {
    double s = 0;
    for (int i = 0; i < kDecisions; ++i) s += unary[i][c[i]];
    double p = 0;
    for (int i = 0; i + 1 < kDecisions; ++i) p += pair[i][c[i]][c[i + 1]];
    return 0.05 + 0.9 * (s + 0.5 * p) / 11.5;
  }
};

std::shared_ptr<const Table> make_table() {
  auto t = std::make_shared<Table>();
  SplitMix64 g{kTableSeed};
  for (auto& row : t->unary)
    for (double& v : row) v = g.uniform();
  for (auto& m : t->pair)
    for (auto& row : m)
      for (double& v : row) v = g.uniform();
  return t;
}

// Exact minimum: DP over the chain (unary + 0.5 pair terms), then the same affine map.
double table_optimum(const Table& t) {
  double best[kOps];
  for (int c = 0; c < kOps; ++c) best[c] = t.unary[0][c];
  for (int i = 1; i < kDecisions; ++i) {
    double next[kOps];
    for (int b = 0; b < kOps; ++b) {
      next[b] = 1e300;
      for (int a = 0; a < kOps; ++a) next[b] = std::min(next[b], best[a] + 0.5 * t.pair[i - 1][a][b]);
      next[b] += t.unary[i][b];
    }
    std::copy(next, next + kOps, best);
  }
  return 0.05 + 0.9 * *std::min_element(best, best + kOps) / 11.5;
}

// "x1", "op0", ... (appending avoids GCC 12's false -Wrestrict on "literal" + std::string).
std::string indexed(const char* prefix, int i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

}  // namespace

double branin(double x1, double x2) {
  const double b = 5.1 / (4 * kPi * kPi), c = 5 / kPi, t = 1 / (8 * kPi);
  double u = x2 - b * x1 * x1 + c * x1 - 6;
  return u * u + 10 * (1 - t) * std::cos(x1) + 10;
}

double hartmann6(const std::vector<double>& x) {
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                 {0.05, 10, 17, 0.1, 8, 14},
                                 {3, 3.5, 1.7, 10, 17, 8},
                                 {17, 8, 0.05, 10, 0.1, 14}};
  static const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                 {2329, 4135, 8307, 3736, 1004, 9991},
                                 {2348, 1451, 3522, 2883, 3047, 6650},
                                 {4047, 8828, 8732, 5743, 1091, 381}};
  double f = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j) {
      double d = x[static_cast<size_t>(j)] - P[i][j] * 1e-4;
      inner += A[i][j] * d * d;
    }
    f -= alpha[i] * std::exp(-inner);
  }
  return f;
}

const std::vector<std::string>& bench_function_names() {
  static const std::vector<std::string> names = {"branin", "hartmann6", "branin_mixed", "nas_tabular"};
  return names;
}

BenchFunction make_bench_function(const std::string& name) {
  BenchFunction f;
  f.name = name;
  if (name == "branin") {
    f.space.add_float("x1", -5, 10).add_float("x2", 0, 15);
    f.optimum = 0.397887357729738;
    f.evaluate = [](const TrialParams& p) {
      return branin(std::get<double>(p.at("x1")), std::get<double>(p.at("x2")));
    };
  } else if (name == "hartmann6") {
    for (int j = 1; j <= 6; ++j) f.space.add_float(indexed("x", j), 0, 1);
    f.optimum = -3.32236801141551;
    f.evaluate = [](const TrialParams& p) {
      std::vector<double> x;
      for (int j = 1; j <= 6; ++j) x.push_back(std::get<double>(p.at(indexed("x", j))));
      return hartmann6(x);
    };
  } else if (name == "branin_mixed") {
    f.space.add_float("x1", -5, 10).add_float("x2", 0, 15);
    f.space.add_categorical("op", {std::string("conv"), std::string("dw"), std::string("skip"), std::string("pool")});
    f.space.add_int("k", 1, 8).add_float("lr", 1e-4, 1, true);
    f.optimum = 0.397887357729738;
    f.evaluate = [](const TrialParams& p) {
      const std::string& op = std::get<std::string>(p.at("op"));
      double offset = op == "conv" ? 1.0 : op == "dw" ? 0.0 : op == "skip" ? 2.0 : 0.5;
      double k = static_cast<double>(std::get<int64_t>(p.at("k")));
      double lr = std::log10(std::get<double>(p.at("lr"))) + 2;
      return branin(std::get<double>(p.at("x1")), std::get<double>(p.at("x2"))) + offset + 0.1 * (k - 3) * (k - 3) +
             0.5 * lr * lr;
    };
  } else if (name == "nas_tabular") {
    auto table = make_table();
    for (int i = 0; i < kDecisions; ++i) {
      std::vector<ParamValue> ops;
      for (const char* op : kOpNames) ops.emplace_back(std::string(op));
      f.space.add_categorical(indexed("op", i), ops);
    }
    f.optimum = table_optimum(*table);
    f.evaluate = [table](const TrialParams& p) {
      int c[kDecisions];
      for (int i = 0; i < kDecisions; ++i) {
        const std::string& op = std::get<std::string>(p.at(indexed("op", i)));
        c[i] = static_cast<int>(std::find(kOpNames, kOpNames + kOps, op) - kOpNames);
      }
      return table->error(c);
    };
  } else {
    std::string known;
    for (const auto& n : bench_function_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown benchmark function '" + name + "' (expected one of: " + known + ")");
  }
  return f;
}

}  // namespace xnn::nas::bench
