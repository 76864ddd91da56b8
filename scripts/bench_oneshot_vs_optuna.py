#!/usr/bin/env python3
"""Our black-box strategies against Optuna's on the real one-shot NAS objective.

The objective is the one `xnn-lab nas` searches with `method: oneshot`: a subnet of the trained
Fashion-MNIST supernet, scored with inherited weights (BatchNorm re-calibrated) on the held-out
validation images, with its latency measured on this CPU. `xnn-lab nas CONFIG --objective-server`
trains the supernet (or loads its checkpoint from the config's output folder) and serves that
objective over stdin/stdout (nas/oneshot/objective_server.h). This script asks it to run our
strategies (random, aging evolution, TPE) and drives Optuna's TPESampler and RandomSampler
through the same server, so every strategy sees the same scores (cached per architecture: one
latency measurement per subnet). The comparison is single-objective: maximise inherited top-1
subject to latency <= --latency-ms (Optuna: `Trial.set_constraint`, Optuna >= 5; ours: Deb's
rules).

Prints, per budget, the median over the seeds of the best feasible top-1 found by each
strategy, and a two-sided Mann-Whitney p-value of our best strategy against Optuna's TPE.

Run it with an interpreter that has Optuna (not a project dependency):
    python3 -m venv /tmp/optuna-venv && /tmp/optuna-venv/bin/pip install optuna
    /tmp/optuna-venv/bin/python scripts/bench_oneshot_vs_optuna.py \\
        --xnn-lab build/harness/cli/xnn-lab --config configs/nas/fmnist_oneshot_full.yaml \\
        [--workdir DIR] [--seeds 5] [--budgets 20,50] [--latency-ms 0.1] [--json out.json]
The supernet checkpoint lives under WORKDIR/nas-out/<name>/supernet: a second run re-uses it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_search_vs_optuna import mann_whitney_p  # noqa: E402


class ObjectiveServer:
    def __init__(self, xnn_lab, config, overrides, workdir, log):
        self.proc = subprocess.Popen([os.path.abspath(xnn_lab), "nas", os.path.abspath(config), *overrides, "--objective-server"],
                                     cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                     text=True, bufsize=1)
        self.ready = self.read()
        if not self.ready.get("ready"):
            raise SystemExit(f"objective server did not start: {self.ready}")
        space = json.loads(self.ready["space"]) if isinstance(self.ready["space"], str) else self.ready["space"]
        self.params = self.ready["params"]
        self.choices = []
        for name in self.params:
            d = space[name]
            if d.get("type") != "categorical":
                raise SystemExit(f"parameter {name}: only categorical decisions are driven here, got {d}")
            self.choices.append(len(d["choices"]))

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"objective server exited (code {self.proc.poll()}); see its log")
        return json.loads(line)

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def evaluate(self, indices):
        self.send("evaluate " + " ".join(str(i) for i in indices))
        r = self.read()
        if "error" in r:
            raise SystemExit(f"evaluate: {r['error']}")
        return r

    def search(self, strategy, seed, trials):
        self.send(f"search {strategy} {seed} {trials}")
        results = []
        while True:
            r = self.read()
            if r.get("done"):
                return results
            if "error" in r and "trial" not in r:
                raise SystemExit(f"search {strategy}: {r['error']}")
            results.append(r)

    def close(self):
        self.send("quit")
        self.proc.wait(timeout=60)


def best_so_far(results):
    """Best feasible top-1 after each trial (0 until a feasible one is found)."""
    best, out = 0.0, []
    for r in results:
        if "error" not in r and r["feasible"]:
            best = max(best, r["values"][0])
        out.append(best)
    return out


def optuna_run(server, sampler_name, seed, trials):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if sampler_name == "optuna_tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)  # honours Trial.set_constraint (Optuna >= 5)
    else:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    results = []
    for _ in range(trials):
        trial = study.ask()
        idx = [trial.suggest_categorical(name, list(range(n))) for name, n in zip(server.params, server.choices)]
        r = server.evaluate(idx)
        for i, c in enumerate(r["constraints"]):
            trial.set_constraint(str(i), c)
        study.tell(trial, r["values"][0])
        results.append(r)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xnn-lab", default="build/harness/cli/xnn-lab")
    ap.add_argument("--config", default="configs/nas/fmnist_oneshot_full.yaml")
    ap.add_argument("--workdir", default=".", help="folder the server runs in (its nas-out/ holds the supernet)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budgets", default="20,50")
    ap.add_argument("--latency-ms", type=float, default=0.1, help="the constraint: latency_ms <= this")
    ap.add_argument("--strategies", default="random,evolution,tpe", help="ours")
    ap.add_argument("--optuna", default="optuna_tpe,optuna_random")
    ap.add_argument("--override", action="append", default=[], help="extra KEY=VALUE config overrides")
    ap.add_argument("--log", default="objective_server.log", help="the server's progress (in --workdir)")
    ap.add_argument("--json", help="write every run's best-so-far series here")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    trials = max(budgets)
    overrides = ["objectives=[top1]", f"constraints.latency_ms={args.latency_ms}", *args.override]

    with open(os.path.join(args.workdir, args.log), "a") as log:
        server = ObjectiveServer(args.xnn_lab, args.config, overrides, args.workdir, log)
        runs = []
        for seed in range(args.seeds):
            for s in args.strategies.split(","):
                runs.append({"strategy": s, "seed": seed, "best": best_so_far(server.search(s, seed, trials))})
                print(f"seed {seed} {s:14s} best {runs[-1]['best'][-1]:.4f}", file=sys.stderr, flush=True)
            for s in args.optuna.split(","):
                if s:
                    runs.append({"strategy": s, "seed": seed, "best": best_so_far(optuna_run(server, s, seed, trials))})
                    print(f"seed {seed} {s:14s} best {runs[-1]['best'][-1]:.4f}", file=sys.stderr, flush=True)
        server.close()

    names = list(dict.fromkeys(r["strategy"] for r in runs))
    at = lambda s, b: [r["best"][b - 1] for r in runs if r["strategy"] == s]  # noqa: E731
    print(f"inherited top-1 (validation) subject to latency <= {args.latency_ms} ms, median of {args.seeds} seeds")
    print("budget  " + "  ".join(f"{n:>14s}" for n in names) + "   ours-best vs optuna_tpe")
    ours = args.strategies.split(",")
    for b in budgets:
        med = {n: statistics.median(at(n, b)) for n in names}
        best_ours = max(ours, key=lambda n: med[n])
        verdict = ""
        if "optuna_tpe" in med:
            p = mann_whitney_p(at(best_ours, b), at("optuna_tpe", b))
            verdict = f"{best_ours} {med[best_ours]:.4f} vs {med['optuna_tpe']:.4f} (p {p:.2f})"
        print(f"{b:6d}  " + "  ".join(f"{med[n]:14.4f}" for n in names) + "   " + verdict)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"latency_ms": args.latency_ms, "budgets": budgets, "runs": runs}, f)


if __name__ == "__main__":
    main()
