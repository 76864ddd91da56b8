#!/usr/bin/env bash
# End-to-end tests of simulated targets: `xnn-lab targets [--json]`, an experiment with
# targets [cpu, sim:adreno_660_gpu] (results stored, the sim target marked simulated, its
# accuracy computed with fp16 numerics), an fp32 model on an int8-only NPU, and config errors.
# Usage: sim_cli_test.sh XNN_LAB_BINARY REPO_ROOT
XNN=$1
ROOT=$2
# shellcheck source=tests/cli/lib.sh
source "$ROOT/tests/cli/lib.sh"
q() { sqlite3 -batch -noheader "$1" "$2"; }
model=$ROOT/configs/models/fmnist_cnn.onnx

# --- xnn-lab targets ---------------------------------------------------------------------------
if "$XNN" targets >"$work/out.txt" 2>&1 && grep -qE "^cpu +real" "$work/out.txt" &&
   grep -qE "^sim:adreno_660_gpu +gpu +3 +1.72 TFLOP/s +3.44 TFLOP/s +- +51.2 GB/s +fp16 +host cortex_a78_big" "$work/out.txt" &&
   grep -qE "^sim:hexagon_780_npu +npu .* int8 " "$work/out.txt"; then
  ok "targets lists the CPU and the simulated profiles with key figures"
else bad "targets"; fi
"$XNN" targets --json >"$work/targets.json" 2>"$work/out.txt"
if /usr/bin/python3 - "$work/targets.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
kinds = {x["kind"]: x for x in t}
assert kinds["cpu"]["simulated"] is False and kinds["cpu"]["cores"] >= 1
sims = [x for x in t if x["simulated"]]
assert len(sims) >= 7, len(sims)
gpu = kinds["sim:adreno_660_gpu"]["profile"]
assert gpu["numerics"] == "fp16" and gpu["host"] == "cortex_a78_big" and gpu["peak_fp32_gflops"] == 1720
assert kinds["sim:x86_xeon_host"]["profile"]["ops"] == "all"
PY
then ok "targets --json"; else bad "targets --json"; fi

# --- an experiment on the CPU and a simulated GPU -----------------------------------------------
cat >"$work/exp.yaml" <<YAML
name: sim_e2e
models:
  - name: fmnist_cnn
    path: $model
    preprocess: {scale: 1/255, mean: 0.2860, std: 0.3530, layout: NCHW}
variants: [fp32]
targets: [cpu, sim:adreno_660_gpu]
metrics:
  latency: {warmup: 1, runs: 3, min_time: 0.01, profile: true}
  memory: true
  accuracy: {dataset: fashion-mnist, split: test, limit: 300}
YAML
db=$work/sim.db
if "$XNN" run "$work/exp.yaml" --db "$db" >"$work/out.txt" 2>&1 &&
   grep -q "2 executed, 0 recorded earlier, 0 failed" "$work/out.txt"; then
  ok "run with targets [cpu, sim:adreno_660_gpu]"
else bad "run with targets [cpu, sim:adreno_660_gpu]"; fi
if [ "$(q "$db" "select simulated from targets where name='sim:adreno_660_gpu'")" = 1 ] &&
   [ "$(q "$db" "select simulated from targets where name='cpu'")" = 0 ] &&
   q "$db" "select spec_json from targets where name='sim:adreno_660_gpu'" | grep -q '"numerics":"fp16"'; then
  ok "targets table: the sim target is simulated=1 with its profile"
else bad "targets table simulated flag"; fi
lat() { q "$db" "select m.value from metrics m join jobs j on j.id=m.job_id join targets t on t.id=j.target_id where t.name='$1' and m.name='$2'"; }
sim_ms=$(lat sim:adreno_660_gpu latency_ms_median)
runs=$(lat sim:adreno_660_gpu latency_runs)
if awk "BEGIN{exit !($sim_ms > 0 && $runs == 1)}"; then ok "simulated latency stored ($sim_ms ms, one deterministic sample)"
else bad "simulated latency ($sim_ms ms, $runs runs)"; fi
if q "$db" "select kernel from op_profiles p join jobs j on j.id=p.job_id join targets t on t.id=j.target_id where t.name='sim:adreno_660_gpu'" |
   grep -q "^sim:adreno_660_gpu$"; then ok "per-op breakdown stored with sim: kernels"; else bad "sim per-op rows"; fi
cpu_top1=$(lat cpu top1)
gpu_top1=$(lat sim:adreno_660_gpu top1)
if awk "BEGIN{d=$cpu_top1-$gpu_top1; if (d<0) d=-d; exit !($gpu_top1 > 0.8 && d <= 0.01)}"; then
  ok "fp16 accuracy on the simulated GPU is real (top-1 $gpu_top1 vs fp32 CPU $cpu_top1 on 300 images)"
else bad "fp16 accuracy (sim $gpu_top1, cpu $cpu_top1)"; fi
"$XNN" show latest --db "$db" >"$work/out.txt" 2>&1
if grep -q "sim:adreno_660_gpu" "$work/out.txt"; then ok "show lists the simulated target"; else bad "show"; fi

# --- an fp32 model on an int8-only NPU: fallback by default, an error when configured ------------
cat >"$work/npu.yaml" <<YAML
name: sim_npu
models: [{name: cnn, path: $model}]
targets: [sim:hexagon_780_npu]
metrics: {latency: {profile: true}}
YAML
if "$XNN" run "$work/npu.yaml" --db "$work/npu.db" >"$work/out.txt" 2>&1 &&
   q "$work/npu.db" "select kernel from op_profiles" | grep -q "^fallback:cortex_a78_big$"; then
  ok "fp32 model on the int8-only NPU falls back to the host"
else bad "int8 NPU fallback"; fi
mkdir -p "$work/devices"
sed 's/^on_unsupported: fallback/on_unsupported: error/' "$ROOT/configs/devices/hexagon_780_npu.yaml" >"$work/devices/hexagon_780_npu.yaml"
XNN_DEVICES_DIR=$work/devices "$XNN" run "$work/npu.yaml" --db "$work/npu2.db" >"$work/out.txt" 2>&1
if grep -q "model cannot run on hexagon_780_npu (on_unsupported: error)" "$work/out.txt" &&
   grep -q "dtype fp32 unsupported: int8 only" "$work/out.txt"; then
  ok "on_unsupported: error names the unsupported ops"
else bad "on_unsupported: error"; fi

# --- config errors ------------------------------------------------------------------------------
sed 's/sim:adreno_660_gpu/sim:adreno_66_gpu/' "$work/exp.yaml" >"$work/typo.yaml"
if ! "$XNN" run "$work/typo.yaml" --db "$work/typo.db" >"$work/out.txt" 2>&1 &&
   grep -q "unknown device profile 'adreno_66_gpu' (did you mean 'adreno_660_gpu'?)" "$work/out.txt"; then
  ok "unknown profile: error with did-you-mean and the known profiles"
else bad "unknown profile error"; fi

finish
