#!/usr/bin/env bash
# `xnn-lab chain` end to end: two small models exported with Debian's PyTorch, composed into one
# bundle (a gate, an If on its score, a loop over crops); the bundle's outputs must equal, bit for
# bit, those of running the models one by one with `xnn-lab infer`. Bad pipelines must exit
# non-zero with a message naming FILE:LINE. Also checks the example configs/chain/gate_then_classify.yaml.
# Usage: chain_test.sh XNN_LAB_BINARY SOURCE_DIR
set -uo pipefail
XNN=$(realpath "$1")
SRC=$(realpath "$2")
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

check() {  # check NAME CMD...
  local name=$1
  shift
  if "$@" >"$work/check.txt" 2>&1; then
    passed=$((passed + 1)); echo "ok    $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name"; sed 's/^/      /' "$work/check.txt" | head -20
  fi
}
# run_expect NAME EXPECTED_EXIT PATTERN CMD... : exit code and an output pattern.
run_expect() {
  local name=$1 want=$2 pattern=$3
  shift 3
  "$@" >"$work/out.txt" 2>&1
  local got=$?
  if { [ "$want" = nonzero ] && [ "$got" -ne 0 ] || [ "$got" = "$want" ]; } && grep -qE -- "$pattern" "$work/out.txt"; then
    passed=$((passed + 1)); echo "ok    $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name (exit $got, want $want; pattern '$pattern')"; sed 's/^/      /' "$work/out.txt" | head -20
  fi
}
# same NPY_A NPY_B [ROW]: exactly equal arrays (ROW: compare B with row ROW of A, kept as [1,...]).
same() {
  $PY -c "
import sys, numpy as np
a = np.load(sys.argv[1]); b = np.load(sys.argv[2])
if len(sys.argv) > 3: a = a[int(sys.argv[3]):int(sys.argv[3]) + 1]
assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
assert np.array_equal(a, b), np.abs(a.astype(np.float64) - b).max()
" "$@"
}

if ! $PY -c "import torch, onnx" 2>/dev/null; then echo "FAIL  python3 with torch and onnx is needed"; exit 1; fi
$PY "$SRC/tests/cli/chain_models.py" "$work" >"$work/gen.txt" 2>&1 || { cat "$work/gen.txt"; echo "FAIL  model export"; exit 1; }
cd "$work"

cat >pipeline.yaml <<'YAML'
models:
  gate: gate.onnx
  big: classifier.onnx
inputs:
  - {name: image, from: gate.input}
  - {name: crops, from: big.input, shape: [4, 3, 32, 32]}
steps:
  - run: gate
    inputs: {input: image}
  - if: gate.score > 0.5
    then: {run: big, inputs: {input: image}}
    else: zeros
  - loop: big
    over: crops
    as: per_crop
outputs:
  - {name: score, from: gate.score}
  - {name: logits, from: big.logits}
  - {name: crop_logits, from: per_crop.logits}
YAML

# --- the bundle gives what the models give one by one -------------------------------------------
run_expect "chain writes the bundle" 0 "crop_logits +f32 \[4,10\]" "$XNN" chain pipeline.yaml -o bundle.xnn
run_expect "bundle runs (bright image)" 0 "logits: f32 \[1,10\]" "$XNN" infer bundle.xnn -i image=bright.npy -i crops=crops.npy -d out_bright
run_expect "gate alone" 0 "score" "$XNN" infer gate.onnx -i bright.npy -d gate_bright
run_expect "classifier alone" 0 "logits" "$XNN" infer classifier.onnx -i bright.npy -d big_bright
check "gate score equals the gate run alone" same out_bright/score.npy gate_bright/score.npy
check "the gate passes a bright image" $PY -c "import numpy as np; assert np.load('gate_bright/score.npy').item() > 0.5"
check "If ran the classifier: logits equal the classifier run alone" same out_bright/logits.npy big_bright/logits.npy
for i in 0 1 2 3; do
  "$XNN" infer classifier.onnx -i crop_$i.npy -d crop_$i >/dev/null 2>&1
  check "loop: crop $i equals the classifier on that crop alone" same out_bright/crop_logits.npy crop_$i/logits.npy $i
done
run_expect "bundle runs (dark image)" 0 "score" "$XNN" infer bundle.xnn -i image=dark.npy -i crops=crops.npy -d out_dark
"$XNN" infer gate.onnx -i dark.npy -d gate_dark >/dev/null 2>&1
check "gate score (dark) equals the gate run alone" same out_dark/score.npy gate_dark/score.npy
check "the gate stops a dark image: the else-branch gives zeros" $PY -c "
import numpy as np
assert np.load('gate_dark/score.npy').item() < 0.5
l = np.load('out_dark/logits.npy'); assert l.shape == (1, 10) and not l.any()"

# else: another model's outputs (the classifier again, on the crops' first slice is not the
# point here: any model with the same output types is accepted).
cat >else_values.yaml <<'YAML'
models: {gate: gate.onnx, big: classifier.onnx}
inputs: [{name: image, from: gate.input}]
steps:
  - run: gate
  - if: gate.score <= 0.5
    then: {run: big, inputs: {input: image}}
    else: {run: big, inputs: {input: image}}
    as: either
outputs: [either.logits]
YAML
sed -i 's/  - run: gate/  - run: gate\n    inputs: {input: image}/' else_values.yaml
run_expect "else: another model" 0 "either.logits" "$XNN" chain else_values.yaml -o either.xnn
"$XNN" infer either.xnn -i image=bright.npy -d out_either >/dev/null 2>&1
check "both branches running the classifier give its logits" same out_either/either.logits.npy big_bright/logits.npy

# the bundle is standard ONNX once exported (If, Scan, glue ops): the checker with shape
# inference accepts it, and it runs back to the same outputs
run_expect "export the bundle to ONNX" 0 "converted" "$XNN" convert bundle.xnn -o bundle.onnx
check "onnx.checker (full_check) accepts the exported bundle" $PY -c "import onnx; onnx.checker.check_model(onnx.load('bundle.onnx'), full_check=True)"
"$XNN" infer bundle.onnx -i image=bright.npy -i crops=crops.npy -d out_onnx >/dev/null 2>&1
check "the exported bundle gives the same crop logits" same out_onnx/crop_logits.npy out_bright/crop_logits.npy

# inspect and bench keep working on a bundle with control flow
run_expect "inspect the bundle" 0 "MACs" "$XNN" inspect bundle.xnn
run_expect "bench the bundle" 0 "median" "$XNN" bench bundle.xnn --runs 3 --warmup 1 --min-time 0

# --- bad pipelines: non-zero exit, FILE:LINE and what is wrong ----------------------------------
bad() {  # bad NAME FILE PATTERN: writes stdin to FILE, chains it, expects failure and PATTERN
  cat >"$2"
  run_expect "$1" nonzero "$3" "$XNN" chain "$2" -o bad.xnn
}
bad "unknown model" unknown_model.yaml "unknown_model.yaml:5:[0-9]+: step 1 \(run\): unknown model 'gatee' \(did you mean 'gate'\?\)" <<'YAML'
models: {gate: gate.onnx, big: classifier.onnx}
inputs:
  - {name: image, from: gate.input}
steps:
  - run: gatee
    inputs: {input: image}
outputs: [gate.score]
YAML
bad "shape mismatch at a seam" shape_mismatch.yaml "shape_mismatch.yaml:7:[0-9]+: step 1 \(run\): model 'big' input 'input' expects f32 \[1,3,32,32\], but 'crops' is f32 \[4,3,32,32\]" <<'YAML'
models: {gate: gate.onnx, big: classifier.onnx}
inputs:
  - {name: crops, from: big.input, shape: [4, 3, 32, 32]}
steps:
  - run: big
    inputs:
      input: crops
outputs: [big.logits]
YAML
bad "missing output" missing_output.yaml "missing_output.yaml:8:[0-9]+: output 'label': 'big.logitz' is not a value of the pipeline \(did you mean 'big.logits'\?\)" <<'YAML'
models: {big: classifier.onnx}
inputs:
  - {name: input, from: big.input}
steps:
  - run: big
outputs:
  - name: label
    from: big.logitz
YAML
bad "else-branch of another shape" else_shape.yaml "else_shape.yaml:8:[0-9]+: step 2 \(if\): else-branch output 0 'gate.score' is f32 \[1,1\], but the then-branch \(model 'big'\) gives f32 \[1,10\]" <<'YAML'
models: {gate: gate.onnx, big: classifier.onnx}
inputs: [{name: input, from: gate.input}]
steps:
  - run: gate
  - if: gate.score > 0.5
    then: big
    else:
      - gate.score
outputs: [big.logits]
YAML
bad "malformed condition" bad_cond.yaml "bad_cond.yaml:5:[0-9]+: step 2: if: expected 'VALUE OP NUMBER'" <<'YAML'
models: {gate: gate.onnx, big: classifier.onnx}
inputs: [{name: input, from: gate.input}]
steps:
  - run: gate
  - if: gate.score is big
    then: big
outputs: [big.logits]
YAML
bad "unknown key" unknown_key.yaml "unknown_key.yaml:6:[0-9]+: step 1 \(loop\): unknown key 'ovr' \(did you mean 'over'\?\)" <<'YAML'
models: {big: classifier.onnx}
inputs: [{name: crops, from: big.input, shape: [4, 3, 32, 32]}]
steps:
  - loop: big
    over: crops
    ovr: crops
outputs: [big.logits]
YAML
run_expect "the output must be .xnn" nonzero "written as .xnn" "$XNN" chain pipeline.yaml -o bundle.onnx

# --- the documented example ---------------------------------------------------------------------
sed 's#\.\./\.\./out/chain/##' "$SRC/configs/chain/gate_then_classify.yaml" >example.yaml
run_expect "configs/chain/gate_then_classify.yaml chains" 0 "crop_logits +f32 \[4,10\]" "$XNN" chain example.yaml -o example.xnn
"$XNN" infer example.xnn -i image=bright.npy -i crops=crops.npy -d out_example >/dev/null 2>&1
check "the example gives the classifier's logits" same out_example/logits.npy big_bright/logits.npy

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
