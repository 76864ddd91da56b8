#!/usr/bin/env bash
# `xnn-lab nas` end to end on configs/nas/fmnist_evolution_ci.yaml: a first run of 2 trials, a
# second run of the same study with 3 that re-uses the 2 finished trials; the JSON front and
# baselines carry top1, latency_ms, params, model and preprocess; the exported models exist and
# `xnn-lab eval` / `bench` run on them; the study and the measurement jobs are in the store.
# Usage: nas_test.sh XNN_LAB SOURCE_DIR
set -euo pipefail
XNN_LAB=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
CONFIG="$SRC/configs/nas/fmnist_evolution_ci.yaml"
DB="$WORK/nas.db"

"$XNN_LAB" nas "$CONFIG" trials=2 output.dir="$WORK/out" --db "$DB" --json > "$WORK/first.json" 2> "$WORK/first.log" \
  || { cat "$WORK/first.log"; fail "first nas run"; }
grep -q 'trial 1 .*\[2/2\]; front: ' "$WORK/first.log" || { cat "$WORK/first.log"; fail "progress line with the front"; }

"$XNN_LAB" nas "$CONFIG" output.dir="$WORK/out" --db "$DB" --json > "$WORK/out.json" 2> "$WORK/second.log" \
  || { cat "$WORK/second.log"; fail "resumed nas run"; }
cat "$WORK/second.log"
grep -q "resuming study 'fmnist_evolution_ci': 2 trial(s) already finished" "$WORK/second.log" || fail "resume message"
[ "$(grep -c '^trial [0-9]*: r' "$WORK/second.log")" -eq 1 ] || fail "the resumed run should train exactly one trial"

python3 - "$WORK/out.json" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["study"] == "fmnist_evolution_ci", r
assert r["complete"] + r["pruned"] + r["failed"] == 3, r
assert len(r["front"]) >= 1, r
assert [b["name"] for b in r["baselines"]] == ["lenet5", "tiny_mobilenet"], r
for p in r["front"] + r["baselines"]:
    for k in ("top1", "latency_ms", "params", "model", "preprocess"):
        assert k in p, (k, p)
    assert 0.0 < p["top1"] <= 1.0 and p["latency_ms"] > 0 and p["params"] > 0, p
    assert os.path.isfile(p["model"]) and p["model"].endswith(".xnn"), p
    assert os.path.isfile(p["onnx"]), p
    pp = p["preprocess"]
    assert abs(pp["scale"] - 1 / 255) < 1e-9 and abs(pp["mean"] - 0.286) < 1e-6 and abs(pp["std"] - 0.353) < 1e-6, pp
for p in r["front"]:
    assert p["params"] <= 200000, p  # the config's constraint
# the front is non-dominated
for a in r["front"]:
    for b in r["front"]:
        assert not (b["top1"] >= a["top1"] and b["latency_ms"] < a["latency_ms"]) or a is b, (a, b)
with open(os.path.join(os.path.dirname(sys.argv[1]), "front_model"), "w") as f:
    f.write(r["front"][0]["model"])
PY

# latency.confirm_rounds: a one-trial study (no searched hyper-parameters) whose trial_0 gets a
# twin baseline, the same architecture from the same seed and recipe, so the same accuracy: the
# pair is measured back to back for 3 rounds, and dominance follows the median ratio.
"$XNN_LAB" nas "$CONFIG" name=confirm_ci trials=1 'hyperparameters={}' output.dir="$WORK/confirm" --db "$DB" --json \
  > "$WORK/one.json" 2> "$WORK/one.log" || { cat "$WORK/one.log"; fail "one-trial study"; }
ARCH=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['front'][0]['arch'])" "$WORK/one.json")
"$XNN_LAB" nas "$CONFIG" name=confirm_ci trials=1 'hyperparameters={}' output.dir="$WORK/confirm" --db "$DB" \
  "baselines.1={name: twin, arch: '$ARCH'}" latency.confirm_rounds=3 --json > "$WORK/confirm.json" \
  2> "$WORK/confirm.log" || { cat "$WORK/confirm.log"; fail "nas run with confirm_rounds"; }
python3 - "$WORK/confirm.json" <<'PY' || { cat "$WORK/confirm.log"; fail "dominance checks in the JSON"; }
import json, sys
r = json.load(open(sys.argv[1]))
checks = r["dominance_checks"]
front = {p["name"]: p for p in r["front"]}
base = {b["name"]: b for b in r["baselines"]}
assert base["twin"]["top1"] == front["trial_0"]["top1"], (base["twin"], front["trial_0"])
expected = [(b, p) for b in base for p in front if front[p]["top1"] >= base[b]["top1"]]
assert ("twin", "trial_0") in expected, expected
assert sorted((c["baseline"], c["candidate"]) for c in checks) == sorted(expected), (checks, expected)
for c in checks:
    assert c["rounds"] == 3 and len(c["ratios"]) == 3 and len(c["candidate_ms"]) == 3, c
    for ratio, cm, bm in zip(c["ratios"], c["candidate_ms"], c["baseline_ms"]):
        assert cm > 0 and bm > 0 and abs(ratio - cm / bm) < 1e-9 * ratio, c
    med = sorted(c["ratios"])[1]
    assert abs(c["median_ratio"] - med) < 1e-12, c
    assert c["dominates"] == (med <= 1 and (front[c["candidate"]]["top1"] > base[c["baseline"]]["top1"] or med < 1)), c
assert r["dominated_baselines"] == [b for b in base if any(c["baseline"] == b and c["dominates"] for c in checks)], r
PY
grep -q "^dominance trial_0 vs twin: top1 .*, latency ratio per round .* median " "$WORK/confirm.log" \
  || { cat "$WORK/confirm.log"; fail "dominance lines in the log"; }

MODEL=$(cat "$WORK/front_model")
"$XNN_LAB" eval "$MODEL" --dataset fashion-mnist --limit 200 --mean 0.2860 --std 0.3530 --json > "$WORK/eval.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['samples']==200 and 0<r['top1']<=1, r" "$WORK/eval.json" \
  || { cat "$WORK/eval.json"; fail "eval of the front model"; }
"$XNN_LAB" bench "$MODEL" --runs 5 --min-time 0.01 > "$WORK/bench.txt" || fail "bench of the front model"

"$XNN_LAB" study show "$DB" fmnist_evolution_ci --json > "$WORK/study.json"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); t=s['trial_list']; assert s['trials']==3 and len(t)==3, len(t); assert all('arch' in x['user_attrs'] for x in t if x['state']=='COMPLETE')" \
  "$WORK/study.json" || fail "study in the store"
"$XNN_LAB" list --db "$DB" > "$WORK/list.txt"
grep -q 'nas:fmnist_evolution_ci' "$WORK/list.txt" || { cat "$WORK/list.txt"; fail "measurement run in the store"; }

# hardware feedback: a predictor calibrated on a few space models ranks the candidates; the top 2
# of the front are measured on the CPU, join the calibration set, and the predictor is refitted
"$XNN_LAB" calibrate --target cpu --db "$WORK/lab.db" --models 6 --space "$SRC/configs/arch/fmnist_space.yaml" \
  --passes 1 --warmup 1 --runs 3 --min-time 0.01 -o "$WORK/predictor.json" > "$WORK/calib.txt" 2>&1 \
  || { cat "$WORK/calib.txt"; fail "calibrate"; }
"$XNN_LAB" nas "$CONFIG" trials=3 latency.method=predicted latency.predictor="$WORK/predictor.json" latency.feedback=2 \
  output.dir="$WORK/fb" --db "$WORK/lab.db" --json > "$WORK/fb.json" 2> "$WORK/fb.log" \
  || { cat "$WORK/fb.log"; fail "nas with hardware feedback"; }
python3 - "$WORK/fb.json" <<'PY' || { cat "$WORK/fb.log"; fail "feedback in the JSON"; }
import json, os, sys
f = json.load(open(sys.argv[1]))["feedback"]
assert os.path.isfile(f["predictor"]) and f["experiment"] == "calibration:cpu-t1", f
assert 1 <= len(f["points"]) <= 2, f
assert f["calibration_models"] == 6 + len(f["points"]), f
for p in f["points"]:
    assert p["measured_ms"] > 0 and p["predicted_before_ms"] > 0 and p["predicted_after_ms"] > 0, p
PY
if "$XNN_LAB" nas "$CONFIG" latency.feedback=2 --db "$DB" 2> "$WORK/err.txt"; then fail "feedback without a predictor accepted"; fi
grep -q "feedback.*needs method: predicted" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "feedback error message"; }

# a config error names the file, line and key
if "$XNN_LAB" nas "$CONFIG" strategy.type=evolutoin --db "$DB" 2> "$WORK/err.txt"; then fail "bad strategy accepted"; fi
grep -q "fmnist_evolution_ci.yaml.*did you mean 'evolution'" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "error message"; }
echo "nas end to end: OK"
