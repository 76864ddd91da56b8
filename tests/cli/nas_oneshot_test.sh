#!/usr/bin/env bash
# `xnn-lab nas configs/nas/fmnist_oneshot_ci.yaml --json` end to end: supernet training, the
# subnet search with a progress line per generation, retraining, export, harness measurement;
# the JSON front points carry top1, latency_ms, params and model files that exist; the subnet
# study is in the store; a rerun resumes (supernet checkpoint, scored subnets).
# Usage: nas_oneshot_test.sh XNN_LAB SOURCE_DIR
XNN=$1
ROOT=$2
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
CONFIG="$ROOT/configs/nas/fmnist_oneshot_ci.yaml"
DB="$work/oneshot.db"

run_expect "one-shot search runs" 0 '"front"' \
  "$XNN" nas "$CONFIG" output.dir="$work/out" --db "$DB" --json
"$XNN" nas "$CONFIG" output.dir="$work/out" --db "$DB" --json >"$work/out.json" 2>"$work/log.txt" || bad "rerun (resume)"
check "progress: supernet epoch line" grep -q '^supernet epoch 1/1: train loss' "$work/out.txt"
check "progress: generation line with the front" grep -qE '^generation 2 \[6/6 subnets\]; front \(inherited weights\): subnet_' "$work/out.txt"
check "progress: retrained winner" grep -q '^retrained subnet_[0-9]*: test top1' "$work/out.txt"
check "rerun re-uses the supernet" grep -q '^supernet: resuming from .*supernet.tensors after epoch 1 of 1' "$work/log.txt"
check "rerun re-uses the scored subnets" grep -q "resuming subnet study 'fmnist_oneshot_ci.subnets': 6 subnet(s) scored" "$work/log.txt"
check "rerun scores no new subnet" bash -c "! grep -q '^subnet [0-9]* ' '$work/log.txt'"

check "JSON front and baselines" $PY - "$work/out.json" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["study"] == "fmnist_oneshot_ci.subnets", r
assert r["complete"] == 6, r
assert len(r["front"]) == 1, r  # oneshot.retrain: 1
assert [b["name"] for b in r["baselines"]] == ["tiny_mobilenet"], r
for p in r["front"] + r["baselines"]:
    assert 0.0 < p["top1"] <= 1.0 and p["latency_ms"] > 0 and p["params"] > 0, p
    assert os.path.isfile(p["model"]) and p["model"].endswith(".xnn"), p
    assert os.path.isfile(p["onnx"]) and p["onnx"].endswith(".onnx"), p
for p in r["front"]:
    assert p["name"].startswith("subnet_") and "/front/" in p["model"], p
    assert p["arch"].startswith(("r28-w0.5|", "r28-w0.5-s1|")), p  # the supernet's width; either stem stride
    assert p["params"] <= 200000, p
PY

"$XNN" study show "$DB" fmnist_oneshot_ci.subnets --json >"$work/study.json" 2>&1
check "subnet study in the store" $PY -c "
import json, sys
s = json.load(open(sys.argv[1]))
t = s['trial_list']
assert len(t) == 6, len(t)
assert all('arch' in x['user_attrs'] and 'latency_ms' in x['user_attrs'] for x in t), t
" "$work/study.json"
MODEL=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['front'][0]['model'])" "$work/out.json")
run_expect "eval of the exported winner" 0 'top-1 [0-9.]+%.*\(100 samples' \
  "$XNN" eval "$MODEL" --dataset fashion-mnist --limit 100 --mean 0.2860 --std 0.3530

# The objective server (what scripts/bench_oneshot_vs_optuna.py drives): the supernet comes from
# the checkpoint above; an evaluation, a repeat from the cache, a search of 2 trials, an error.
ZEROS=$($PY -c "print(' '.join(['0'] * int(__import__('sys').argv[1])))" 28)
printf 'evaluate %s\nevaluate %s\nsearch evolution 1 2\nevaluate 1\nquit\n' "$ZEROS" "$ZEROS" | \
  "$XNN" nas "$CONFIG" output.dir="$work/out" objectives=[top1] --objective-server >"$work/server.out" 2>"$work/server.err"
check "objective server answers evaluate/search/errors" $PY -c "
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]['ready'] and 'stem_stride' in lines[0]['params'], lines[0]
assert len(lines[0]['params']) == 28, lines[0]['params']
a, b = lines[1], lines[2]
assert not a['cached'] and b['cached'] and a['values'] == b['values'] and a['feasible'], (a, b)
assert [l.get('trial') for l in lines[3:5]] == [0, 1] and lines[5] == {'done': True}, lines[3:6]
assert 'error' in lines[6] and len(lines) == 7, lines[6:]
" "$work/server.out"
finish
