#!/usr/bin/env bash
# End-to-end test of `xnn-lab calibrate` and `xnn-lab predict` on the tiny architecture space:
# calibration into a temp store (recorded as jobs, not re-measured on a second call), a
# prediction as text and JSON, held-out evaluation as JSON, and bad inputs failing clearly.
# Measurement is kept short (a few runs per model): this checks the plumbing, not accuracy.
# Usage: predict_cli_test.sh XNN_LAB_BINARY REPO_ROOT
XNN=$1
ROOT=$2
# shellcheck source=tests/cli/lib.sh
source "$ROOT/tests/cli/lib.sh"
has_keys() {  # JSON file $1 parses and has every key in $2... (top level)
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
missing = [k for k in sys.argv[2:] if k not in d]
sys.exit(1 if missing else 0)' "$@"
}
space=$ROOT/configs/arch/mobilenet_space_tiny.yaml
db=$work/lab.db
quick=(--space "$space" --runs 5 --min-time 0.01 --warmup 1 --passes 2)

# --- calibrate -------------------------------------------------------------------------------
if "$XNN" calibrate --target cpu --db "$db" --models 8 "${quick[@]}" >"$work/out.txt" 2>&1 &&
   grep -q "8 models measured now, 0 recorded earlier" "$work/out.txt" &&
   grep -q "saved predictor: $work/predictors/cpu-t1.json" "$work/out.txt" && [ -f "$work/predictors/cpu-t1.json" ]; then
  ok "calibrate measures 8 models and saves the predictor beside the store"
else bad "calibrate measures 8 models and saves the predictor beside the store"; fi
if "$XNN" calibrate --target cpu --db "$db" --models 8 "${quick[@]}" --json >"$work/cal.json" 2>"$work/out.txt" &&
   has_keys "$work/cal.json" predictor measured_now reused models calibration &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["measured_now"]==0 and d["reused"]==8 and d["models"]==8 else 1)' "$work/cal.json"; then
  ok "a second calibrate re-measures nothing (--json)"
else cp "$work/cal.json" "$work/out.txt" 2>/dev/null; bad "a second calibrate re-measures nothing (--json)"; fi
if "$XNN" list runs --db "$db" >"$work/out.txt" 2>&1 && [ "$(grep -c 'calibration:cpu-t1' "$work/out.txt")" -eq 2 ]; then
  ok "calibration runs are visible to xnn-lab list"
else bad "calibration runs are visible to xnn-lab list"; fi

if "$XNN" calibrate --target cpu --db "$db" --models 8 "${quick[@]}" --refit-profile x86_xeon_host --json \
     >"$work/refit.json" 2>"$work/out.txt" &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["refit"]; sys.exit(0 if r["ops"] > 0 and r["rms_log_error_after"] <= r["rms_log_error_before"] else 1)' "$work/refit.json" &&
   [ -f "$work/devices/x86_xeon_host-cpu-t1.yaml" ]; then
  ok "calibrate --refit-profile refits and writes the simulated device profile"
else cp "$work/refit.json" "$work/out.txt" 2>/dev/null; bad "calibrate --refit-profile refits and writes the simulated device profile"; fi

# --- predict one model -----------------------------------------------------------------------
model=$work/calibration/cpu-t1/arch_0.xnn
if "$XNN" predict "$model" --target cpu --db "$db" >"$work/out.txt" 2>&1 &&
   grep -qE "predicted [0-9.]+ ms \+- [0-9.]+ ms" "$work/out.txt" && grep -q "FusedConv" "$work/out.txt"; then
  ok "predict prints latency +- uncertainty and a per-op table"
else bad "predict prints latency +- uncertainty and a per-op table"; fi
if "$XNN" predict "$model" --target cpu --predictor "$work/predictors/cpu-t1.json" --json >"$work/p.json" 2>"$work/out.txt" &&
   has_keys "$work/p.json" latency_ms uncertainty_ms ops &&
   python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["latency_ms"] > 0 and d["uncertainty_ms"] >= 0 and len(d["ops"]) > 3
for o in d["ops"]:
    assert set(["name", "type", "kernel", "time_ms"]) <= set(o), o' "$work/p.json"; then
  ok "predict --json has latency_ms, uncertainty_ms and ops [{name, type, kernel, time_ms}]"
else cp "$work/p.json" "$work/out.txt" 2>/dev/null; bad "predict --json has latency_ms, uncertainty_ms and ops"; fi

# --- held-out evaluation ---------------------------------------------------------------------
if "$XNN" predict --evaluate --target cpu --db "$db" --models 4 "${quick[@]}" --json >"$work/e.json" 2>"$work/out.txt" &&
   has_keys "$work/e.json" within_10 rmse_ms rmse_percent spearman mape_percent models count &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["count"]==4 and len(d["models"])==4 else 1)' "$work/e.json"; then
  ok "predict --evaluate --json reports within_10, RMSE, Spearman, MAPE and per-model rows"
else cp "$work/e.json" "$work/out.txt" 2>/dev/null; bad "predict --evaluate --json reports the metrics"; fi

# --- simulated targets: the device model is the predictor ----------------------------------
if "$XNN" predict "$model" --target sim:adreno_660_gpu >"$work/out.txt" 2>&1 &&
   grep -qE "on sim:adreno_660_gpu: simulated [0-9.]+ ms" "$work/out.txt" && grep -q "adreno_660_gpu" "$work/out.txt"; then
  ok "predict --target sim:<profile> prints the simulated latency and per-op placement"
else bad "predict --target sim:<profile> prints the simulated latency and per-op placement"; fi
# A float model on an int8-only NPU: every compute op falls back to the host, with the reason.
if "$XNN" predict "$model" --target sim:hexagon_780_npu --json >"$work/s.json" 2>"$work/out.txt" &&
   python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["simulated"] is True and d["target"] == "sim:hexagon_780_npu", d.keys()
r = d["result"]
assert r["device"] == "hexagon_780_npu" and r["host"] == "cortex_a78_big" and r["latency_ms"] > 0
assert r["fell_back"] > 0 and len(r["ops"]) > 3
back = [o for o in r["ops"] if o["fell_back"]]
assert back and all(o["device"] == "cortex_a78_big" and "int8 only" in o["reason"] for o in back), back[:2]
assert abs(sum(o["time_ms"] for o in r["ops"]) + r["device_ms"].get("transfer", 0) - r["latency_ms"]) < 1e-6 * max(1, r["latency_ms"])
for o in r["ops"]:
    assert {"name", "type", "device", "dtype", "time_ms", "bound", "fell_back", "reason"} <= set(o), o' "$work/s.json"; then
  ok "predict --target sim:hexagon_780_npu --json: fallbacks to the host with reasons; op times sum to the total"
else cp "$work/s.json" "$work/out.txt" 2>/dev/null; bad "predict --target sim:hexagon_780_npu --json: fallbacks with reasons"; fi

# --- bad inputs ------------------------------------------------------------------------------
expect_fail() {  # NAME PATTERN CMD...: exits non-zero and says PATTERN
  local name=$1 pattern=$2
  shift 2
  if "$@" >"$work/out.txt" 2>&1; then bad "$name (exit 0)"; return; fi
  if grep -q -- "$pattern" "$work/out.txt"; then ok "$name"; else bad "$name (message)"; fi
}
expect_fail "missing model file" "no such model file" "$XNN" predict "$work/nope.xnn" --target cpu --db "$db"
expect_fail "missing predictor" "xnn-lab calibrate" "$XNN" predict "$model" --target cpu --db "$work/elsewhere/x.db"
expect_fail "predictor of another thread count" "fitted for target cpu-t1, not cpu-t2" \
  "$XNN" predict "$model" --target cpu --threads 2 --predictor "$work/predictors/cpu-t1.json"
expect_fail "unknown predict target" "predict --target gpu0: no latency predictor" "$XNN" predict "$model" --target gpu0 --db "$db"
expect_fail "unknown calibrate target" "calibrate --target gpu0" "$XNN" calibrate --target gpu0 --db "$db"
echo '{"format": "other"}' >"$work/bad.json"
expect_fail "not a predictor file" "bad.json:1: \"format\"" "$XNN" predict "$model" --target cpu --predictor "$work/bad.json"
expect_fail "missing space file" "nope.yaml" "$XNN" calibrate --target cpu --db "$db" --space "$work/nope.yaml"
expect_fail "unknown device profile" "unknown device profile 'nope'" "$XNN" predict "$model" --target sim:nope
expect_fail "sim target with on_unsupported error names the nodes" "cannot run on hexagon_780_npu" \
  "$XNN" predict "$model" --target sim:hexagon_780_npu --on-unsupported error
expect_fail "--on-unsupported needs a sim target" "applies to simulated targets" \
  "$XNN" predict "$model" --target cpu --on-unsupported error --db "$db"
expect_fail "--evaluate on a sim target" "no measurements to evaluate" "$XNN" predict --evaluate --target sim:adreno_660_gpu
expect_fail "no model and no --evaluate" "give a MODEL" "$XNN" predict --target cpu --db "$db"

finish
