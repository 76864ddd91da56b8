#!/usr/bin/env python3
"""Our black-box strategies against Optuna's on the same objectives, seeds and budgets.

Runs build/nas/nas_strategy_bench (random, aging evolution, TPE) and, in the Python
interpreter given by --python (one with Optuna installed), Optuna's TPESampler and
RandomSampler with their defaults on the same benchmark functions (their Python twins below
are identical to nas/bench/bench_functions.cpp; the script checks that on probe points and on
the known optima). Prints, per function and budget, the median best-found value over the seeds
for every strategy, and the ratio of our best strategy's median regret (best - optimum) to
Optuna TPE's: <= 1 means we match or beat it.

Optuna is not a dependency of the project; create an interpreter for it once with
    python3 -m venv /tmp/optuna-venv && /tmp/optuna-venv/bin/pip install optuna
and pass --python /tmp/optuna-venv/bin/python.

    scripts/bench_search_vs_optuna.py --python /tmp/optuna-venv/bin/python \
        [--bench build/nas/nas_strategy_bench] [--seeds 5] [--budgets 20,50,100] [--json out.json]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

# ---------------------------------------------------------------- benchmark functions (twins)

TABLE_SEED = 2026
DECISIONS = 8
OPS = ["conv3x3", "conv5x5", "dwconv3x3", "skip"]
MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def uniform(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        return (z >> 11) * 2.0**-53


def make_table():
    g = SplitMix64(TABLE_SEED)
    unary = [[g.uniform() for _ in OPS] for _ in range(DECISIONS)]
    pair = [[[g.uniform() for _ in OPS] for _ in OPS] for _ in range(DECISIONS - 1)]
    return unary, pair


TABLE = make_table()


def tabular_error(choices):
    unary, pair = TABLE
    s = 0.0
    for i in range(DECISIONS):
        s += unary[i][choices[i]]
    p = 0.0
    for i in range(DECISIONS - 1):
        p += pair[i][choices[i]][choices[i + 1]]
    return 0.05 + 0.9 * (s + 0.5 * p) / 11.5


def tabular_optimum():
    unary, pair = TABLE
    best = list(unary[0])
    for i in range(1, DECISIONS):
        best = [min(best[a] + 0.5 * pair[i - 1][a][b] for a in range(len(OPS))) + unary[i][b] for b in range(len(OPS))]
    return 0.05 + 0.9 * min(best) / 11.5


def branin(x1, x2):
    b, c, t = 5.1 / (4 * math.pi * math.pi), 5 / math.pi, 1 / (8 * math.pi)
    u = x2 - b * x1 * x1 + c * x1 - 6
    return u * u + 10 * (1 - t) * math.cos(x1) + 10


H_ALPHA = [1.0, 1.2, 3.0, 3.2]
H_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
H_P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
       [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]


def hartmann6(x):
    f = 0.0
    for i in range(4):
        inner = 0.0
        for j in range(6):
            d = x[j] - H_P[i][j] * 1e-4
            inner += H_A[i][j] * d * d
        f -= H_ALPHA[i] * math.exp(-inner)
    return f


OP_OFFSET = {"conv": 1.0, "dw": 0.0, "skip": 2.0, "pool": 0.5}


def evaluate(name, p):
    """Value of benchmark `name` at params `p` (a dict as both sides name them)."""
    if name == "branin":
        return branin(p["x1"], p["x2"])
    if name == "hartmann6":
        return hartmann6([p["x%d" % j] for j in range(1, 7)])
    if name == "branin_mixed":
        lr = math.log10(p["lr"]) + 2
        return branin(p["x1"], p["x2"]) + OP_OFFSET[p["op"]] + 0.1 * (p["k"] - 3) ** 2 + 0.5 * lr * lr
    if name == "nas_tabular":
        return tabular_error([OPS.index(p["op%d" % i]) for i in range(DECISIONS)])
    raise SystemExit("unknown benchmark function '%s'" % name)


OPTIMA = {"branin": 0.397887357729738, "hartmann6": -3.32236801141551, "branin_mixed": 0.397887357729738,
          "nas_tabular": None}


def optimum(name):
    return tabular_optimum() if name == "nas_tabular" else OPTIMA[name]


def suggest(trial, name):
    """The same search space as the C++ side, through Optuna's suggest API."""
    if name == "branin":
        return {"x1": trial.suggest_float("x1", -5, 10), "x2": trial.suggest_float("x2", 0, 15)}
    if name == "hartmann6":
        return {"x%d" % j: trial.suggest_float("x%d" % j, 0, 1) for j in range(1, 7)}
    if name == "branin_mixed":
        return {"x1": trial.suggest_float("x1", -5, 10), "x2": trial.suggest_float("x2", 0, 15),
                "op": trial.suggest_categorical("op", ["conv", "dw", "skip", "pool"]),
                "k": trial.suggest_int("k", 1, 8), "lr": trial.suggest_float("lr", 1e-4, 1, log=True)}
    if name == "nas_tabular":
        return {"op%d" % i: trial.suggest_categorical("op%d" % i, OPS) for i in range(DECISIONS)}
    raise SystemExit("unknown benchmark function '%s'" % name)


# ---------------------------------------------------------------- Optuna side (run in --python)

def optuna_worker(functions, seeds, budget):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    out = {"optuna_version": optuna.__version__, "functions": {}}
    for name in functions:
        runs = []
        for sampler_name in ("optuna_tpe", "optuna_random"):
            for seed in range(seeds):
                sampler = (optuna.samplers.TPESampler(seed=seed) if sampler_name == "optuna_tpe"
                           else optuna.samplers.RandomSampler(seed=seed))
                study = optuna.create_study(direction="minimize", sampler=sampler)
                study.optimize(lambda t: evaluate(name, suggest(t, name)), n_trials=budget)
                best, cur = [], math.inf
                for t in study.trials:
                    cur = min(cur, t.value)
                    best.append(cur)
                runs.append({"strategy": sampler_name, "seed": seed, "best": best})
        out["functions"][name] = {"runs": runs}
    json.dump(out, sys.stdout)


# ---------------------------------------------------------------- driver

def mann_whitney_p(xs, ys):
    """Two-sided Mann-Whitney U test p-value (normal approximation with tie correction)."""
    n1, n2 = len(xs), len(ys)
    pooled = sorted([(v, 0) for v in xs] + [(v, 1) for v in ys])
    ranks, i, ties = {}, 0, 0.0
    rank_sum = 0.0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        r = (i + j) / 2.0 + 1
        t = j - i + 1
        ties += t ** 3 - t
        rank_sum += r * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    u = rank_sum - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2.0) - 0.5) / math.sqrt(var)
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def at_budget(runs, strategy, b):
    return [r["best"][b - 1] for r in runs if r["strategy"] == strategy]


def medians(runs, strategy, budgets):
    series = [r["best"] for r in runs if r["strategy"] == strategy]
    return [statistics.median(s[b - 1] for s in series) for b in budgets]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="interpreter with Optuna installed (e.g. /tmp/optuna-venv/bin/python)")
    ap.add_argument("--bench", default="build/nas/nas_strategy_bench", help="path to nas_strategy_bench")
    ap.add_argument("--functions", default="branin,hartmann6,branin_mixed,nas_tabular")
    ap.add_argument("--strategies", default="random,evolution,tpe", help="ours, as nas_strategy_bench takes them")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budgets", default="20,50,100")
    ap.add_argument("--json", help="also write every best-so-far curve and the table here")
    ap.add_argument("--optuna-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    functions = args.functions.split(",")
    budgets = [int(b) for b in args.budgets.split(",")]
    budget = max(budgets)
    if args.seeds < 1 or min(budgets) < 1:
        raise SystemExit("--seeds and --budgets must be >= 1")

    if args.optuna_worker:
        optuna_worker(functions, args.seeds, budget)
        return

    if not args.python:
        raise SystemExit("bench_search_vs_optuna: --python INTERPRETER is required: an interpreter with Optuna.\n"
                         "Create one with:\n"
                         "  python3 -m venv /tmp/optuna-venv && /tmp/optuna-venv/bin/pip install optuna\n"
                         "then pass --python /tmp/optuna-venv/bin/python")
    probe = subprocess.run([args.python, "-c", "import optuna"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit("bench_search_vs_optuna: '%s' cannot import optuna (%s).\nCreate an interpreter with:\n"
                         "  python3 -m venv /tmp/optuna-venv && /tmp/optuna-venv/bin/pip install optuna\n"
                         "then pass --python /tmp/optuna-venv/bin/python"
                         % (args.python, probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "error"))
    if not os.access(args.bench, os.X_OK):
        raise SystemExit("bench_search_vs_optuna: no executable '%s' (build it: cmake --build BUILD --target "
                         "nas_strategy_bench, then pass --bench BUILD/nas/nas_strategy_bench)" % args.bench)

    ours = json.loads(subprocess.run([args.bench, "--functions", args.functions, "--strategies", args.strategies,
                                      "--budget", str(budget), "--seeds", str(args.seeds)],
                                     check=True, capture_output=True, text=True).stdout)
    # The two implementations must agree: optima and the values at probe points.
    for name in functions:
        f = ours["functions"][name]
        if abs(f["optimum"] - optimum(name)) > 1e-9 * max(1.0, abs(optimum(name))):
            raise SystemExit("%s: C++ optimum %r differs from Python's %r" % (name, f["optimum"], optimum(name)))
        for p in f["probes"]:
            py = evaluate(name, p["params"])
            if abs(py - p["value"]) > 1e-6 * max(1.0, abs(py)):
                raise SystemExit("%s: C++ value %r differs from Python's %r at %r" % (name, p["value"], py, p["params"]))

    theirs = json.loads(subprocess.run([args.python, os.path.abspath(__file__), "--optuna-worker", "--functions",
                                        args.functions, "--seeds", str(args.seeds), "--budgets", str(budget)],
                                       check=True, capture_output=True, text=True).stdout)

    ours_names = args.strategies.split(",")
    cols = ours_names + ["optuna_random", "optuna_tpe"]
    table = []
    print("Median best-found value over %d seeds (minimised; Optuna %s). ratio = our best strategy's median regret"
          " / Optuna TPE's (<= 1: match or beat); p = two-sided Mann-Whitney U p-value of that strategy's"
          " best values against Optuna TPE's; verdict: beats / matches (better or equal median, or worse but"
          " p >= 0.05) / worse." % (args.seeds, theirs["optuna_version"]))
    header = "%-13s %6s %10s " % ("function", "trials", "optimum") + " ".join("%13s" % c for c in cols) + \
        " %14s %6s %6s %8s"
    print(header % ("our best", "ratio", "p", "verdict"))
    for name in functions:
        opt = optimum(name)
        runs = ours["functions"][name]["runs"] + theirs["functions"][name]["runs"]
        med = {c: medians(runs, c, budgets) for c in cols}
        for i, b in enumerate(budgets):
            best_ours = min(ours_names, key=lambda c: med[c][i])
            regret_ours = med[best_ours][i] - opt
            regret_tpe = med["optuna_tpe"][i] - opt
            ratio = regret_ours / regret_tpe if regret_tpe > 0 else (1.0 if regret_ours <= 0 else math.inf)
            p = mann_whitney_p(at_budget(runs, best_ours, b), at_budget(runs, "optuna_tpe", b))
            if ratio < 1 and p < 0.05:
                verdict = "beats"
            elif ratio <= 1 or p >= 0.05:
                verdict = "matches"
            else:
                verdict = "worse"
            print("%-13s %6d %10.4f " % (name, b, opt) + " ".join("%13.4f" % med[c][i] for c in cols) +
                  " %14s %6.2f %6.3f %8s" % (best_ours, ratio, p, verdict))
            table.append({"function": name, "trials": b, "optimum": opt, "median_best": {c: med[c][i] for c in cols},
                          "our_best": best_ours, "regret_ratio_vs_optuna_tpe": ratio, "p_value": p,
                          "verdict": verdict})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seeds": args.seeds, "budgets": budgets, "table": table, "ours": ours, "optuna": theirs}, f)


if __name__ == "__main__":
    main()
