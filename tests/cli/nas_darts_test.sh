#!/usr/bin/env bash
# `xnn-lab nas configs/nas/fmnist_darts_ci.yaml --json` end to end: the latency table, two
# DARTS searches (λ 0 and 20) with a progress line per epoch, derivation, retraining, export,
# harness measurement; the JSON front points carry top1, latency_ms, params and model files that
# exist; the derived architectures are trials of the study with their alpha history; a rerun
# re-uses the latency table and the finished trials.
# Usage: nas_darts_test.sh XNN_LAB SOURCE_DIR
XNN=$1
ROOT=$2
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
CONFIG="$ROOT/configs/nas/fmnist_darts_ci.yaml"
DB="$work/darts.db"

run_expect "darts search runs" 0 '"front"' \
  "$XNN" nas "$CONFIG" output.dir="$work/out" --db "$DB" --json
check "progress: latency table line" grep -qE '^latency table s0\.b1: k3e1=[0-9.e-]+ .* skip=0$' "$work/out.txt"
check "progress: search epoch line" grep -qE '^darts epoch 2/2: train acc [0-9.]+%, alpha acc [0-9.]+%, E\[latency\] [0-9.]+ ms; s0\.b0=' "$work/out.txt"
check "progress: derived architecture" grep -qE '^lambda 20: derived r28-w0\.5\|' "$work/out.txt"
check "progress: measured vs table latency" grep -qE '^lambda 0: trial_0 retrained: top1 [0-9.]+%, measured [0-9.]+ ms vs table sum [0-9.]+ ms' "$work/out.txt"
check "latency table cached" test -f "$work/out/latency_table/latency_table.json"

"$XNN" nas "$CONFIG" output.dir="$work/out" --db "$DB" --json >"$work/out.json" 2>"$work/log.txt" || bad "rerun"
check "rerun re-uses the latency table" grep -q '^latency table: re-using ' "$work/log.txt"
check "rerun re-uses both trials" test "$(grep -c '^lambda .*: re-using trial' "$work/log.txt")" -eq 2
check "rerun searches nothing" bash -c "! grep -q '^darts epoch' '$work/log.txt'"

check "JSON front and baselines" $PY - "$work/out.json" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["study"] == "fmnist_darts_ci", r
assert r["complete"] == 2, r
assert 1 <= len(r["front"]) <= 2, r
assert [b["name"] for b in r["baselines"]] == ["tiny_mobilenet"], r
for p in r["front"] + r["baselines"]:
    assert 0.0 < p["top1"] <= 1.0 and p["latency_ms"] > 0 and p["params"] > 0, p
    assert os.path.isfile(p["model"]) and p["model"].endswith(".xnn"), p
    assert os.path.isfile(p["onnx"]) and p["onnx"].endswith(".onnx"), p
for p in r["front"]:
    assert p["name"].startswith("trial_") and "/front/" in p["model"], p
    assert p["arch"].startswith("r28-w0.5|") and ".relu" in p["arch"], p  # darts.width/resolution/activation
PY

"$XNN" study show "$DB" fmnist_darts_ci --json >"$work/study.json" 2>&1
check "derived architectures are trials with their alpha history" $PY -c "
import json, sys
s = json.load(open(sys.argv[1]))
t = s['trial_list']
assert len(t) == 2, len(t)
for x in t:
    a = x['user_attrs']
    for k in ('arch', 'lambda', 'latency_ms', 'table_latency_ms', 'alpha_history', 'search_seconds'):
        assert k in a, (k, a.keys())
    h = a['alpha_history']
    h = json.loads(h) if isinstance(h, str) else h
    assert len(h) == 2 and len(h[0]) == 6, h  # 2 epochs x 6 positions
    assert all(abs(sum(row) - 1) < 1e-3 for row in h[-1]), h
" "$work/study.json"
run_expect "config error names the file and line" 1 'fmnist_darts_ci.yaml:[0-9]+:[0-9]+: .darts.relaxation. must be softmax or gumbel' \
  "$XNN" nas "$CONFIG" darts.relaxation=sparse output.dir="$work/bad" --db "$work/bad.db"
MODEL=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['front'][0]['model'])" "$work/out.json")
run_expect "eval of the exported model" 0 'top-1 [0-9.]+%' \
  "$XNN" eval "$MODEL" --dataset fashion-mnist --limit 100 --mean 0.2860 --std 0.3530
finish
