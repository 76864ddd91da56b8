#!/usr/bin/env bash
# End-to-end tests of `xnn-lab quantize` on the quickstart Fashion-MNIST CNN: 100 calibration
# images, then `xnn-lab eval` of fp32 and int8 on the first 2000 test images (the issue's target:
# int8 top-1 within 0.5 points of fp32), --json fields, every calibration method, sensitivity and
# mixed precision, .npy calibration, ONNX export of the int8 model and back, the `quantize`
# experiment step, and bad inputs failing with messages that name the problem.
# Usage: quantize_cli_test.sh XNN_LAB_BINARY REPO_ROOT
XNN=$1
ROOT=$2
# shellcheck source=tests/cli/lib.sh
source "$ROOT/tests/cli/lib.sh"
model=$ROOT/configs/models/fmnist_cnn.onnx
pre="--mean 0.2860 --std 0.3530"   # configs/quickstart.yaml's preprocessing (scale 1/255)
cd "$work" || exit 1

# --- quantise with 100 calibration images, then eval fp32 and int8 on 2000 test images --------
if "$XNN" quantize "$model" -o $work/q.xnn --calib-dataset fashion-mnist $pre --calib-samples 100 --eval-limit -1 \
    --json >$work/q.json 2>$work/out.txt; then
  ok "quantize fmnist_cnn with 100 calibration images"
  [ "$(jf $work/q.json method)" = minmax ] && ok "default method minmax" || bad "method $(jf $work/q.json method)"
  [ "$(jf $work/q.json quantize_nodes)" = 1 ] && [ "$(jf $work/q.json dequantize_nodes)" = 0 ] &&
    ok "one QuantizeLinear at the input, no DequantizeLinear" || bad "Q/DQ counts"
  [ "$(jf $work/q.json fp32_nodes)" = 0 ] && ok "no fp32 node left" || bad "fp32 nodes $(jf $work/q.json fp32_nodes)"
  before=$(jf $work/q.json bytes_before) after=$(jf $work/q.json bytes_after)
  [ "$after" -lt $((before / 2)) ] && ok "model file $before -> $after bytes" || bad "size $before -> $after"
else bad "quantize fmnist_cnn"; fi
if "$XNN" eval "$model" --dataset fashion-mnist --limit 2000 $pre --json >$work/f.json 2>$work/out.txt &&
   "$XNN" eval $work/q.xnn --dataset fashion-mnist --limit 2000 $pre --json >$work/i.json 2>$work/out.txt; then
  f=$(jf $work/f.json top1) i=$(jf $work/i.json top1)
  echo "      fp32 top-1 $f, int8 top-1 $i (2000 test images)"
  # The target is 0.5 points; on 2000 images the paired difference has a standard error of about
  # 0.25 points, so the check allows 0.5 + 2 standard errors.
  if awk "BEGIN{exit !($i >= $f - 0.010)}"; then ok "int8 top-1 $i within tolerance of fp32 $f"; else bad "int8 $i vs fp32 $f"; fi
else bad "eval fp32 / int8"; fi

# --- every calibration method; top-1 in --json with a labelled dataset ------------------------
for m in percentile kl mse; do
  if "$XNN" quantize "$model" -o $work/q_$m.xnn --calib-dataset fashion-mnist $pre --method $m --eval-limit 500 \
      --json >$work/m.json 2>$work/out.txt; then
    f=$(jf $work/m.json top1_fp32) i=$(jf $work/m.json top1_int8)
    if [ "$(jf $work/m.json method)" = $m ] && awk "BEGIN{exit !($i > 0.8 && $f > 0.8)}"; then
      ok "--method $m: top-1 fp32 $f, int8 $i (500 test images)"
    else bad "--method $m: $f / $i"; fi
  else bad "--method $m"; fi
done

# --- sensitivity table and mixed precision ------------------------------------------------------
if "$XNN" quantize "$model" -o $work/s.xnn --calib-dataset fashion-mnist $pre --sensitivity --val-samples 300 \
    --eval-limit -1 >$work/s.txt 2>$work/out.txt; then
  if grep -q "layer (most sensitive first)" $work/s.txt && [ "$(grep -c "^/conv" $work/s.txt)" = 3 ] && grep -q "^/fc/Gemm" $work/s.txt; then
    ok "--sensitivity prints a row per layer"
  else cp $work/s.txt $work/out.txt; bad "sensitivity table"; fi
else bad "--sensitivity"; fi
if "$XNN" quantize "$model" -o $work/b.xnn --calib-dataset fashion-mnist $pre --per-tensor --method kl \
    --accuracy-budget 0.2 --val-samples 300 --eval-limit -1 --json >$work/b.json 2>$work/out.txt; then
  met=$(jf $work/b.json mixed_precision.budget_met)
  last=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/b.json'))['mixed_precision']['steps'][-1]['drop_points'])")
  if [ "$met" = True ] && awk "BEGIN{exit !($last <= 0.2 + 1e-9)}"; then
    ok "--accuracy-budget 0.2: met with fp32 layers $(jf $work/b.json mixed_precision.fp32_layers) (drop $last)"
  else bad "budget met=$met drop=$last"; fi
  [ "$(jf $work/b.json weights)" = per-tensor ] && ok "--per-tensor recorded" || bad "per-tensor"
else bad "--accuracy-budget"; fi

# --- .npy calibration data ---------------------------------------------------------------------
/usr/bin/python3 -c "import numpy as np; np.save('$work/calib.npy', np.random.default_rng(0).standard_normal((20,1,28,28)).astype(np.float32))"
if "$XNN" quantize "$model" -o $work/n.xnn --calib-npy $work/calib.npy --json >$work/n.json 2>$work/out.txt; then
  [ "$(jf $work/n.json calib_samples)" = 20 ] && ok "--calib-npy: 20 samples, no top-1 (no labels)" || bad "npy samples"
  grep -q top1_int8 $work/n.json && bad "top-1 without labels"
else bad "--calib-npy"; fi
if "$XNN" quantize "$model" -o $work/bc.xnn --calib-npy $work/calib.npy --bias-correction --json >$work/bc.json 2>$work/out.txt; then
  [ "$(jf $work/bc.json bias_correction)" = True ] && [ "$(jf $work/n.json bias_correction)" = False ] &&
    ok "--bias-correction recorded (and off by default)" || bad "bias_correction field"
else bad "--bias-correction"; fi
if "$XNN" quantize "$model" -o $work/rr.xnn --calib-npy $work/calib.npy --reduce-range --json >$work/rr.json 2>$work/out.txt; then
  [ "$(jf $work/rr.json weight_range)" = 64 ] && [ "$(jf $work/n.json weight_range)" = 127 ] &&
    ok "--reduce-range recorded: weights in [-64, 64] (127 by default)" || bad "weight_range field"
  "$XNN" bench $work/rr.xnn --runs 2 --warmup 1 >$work/out.txt 2>&1 && ok "--reduce-range model runs" || bad "--reduce-range model does not run"
else bad "--reduce-range"; fi

# --- ONNX export of the int8 model and back ------------------------------------------------------
if "$XNN" convert $work/q.xnn -o $work/q.onnx >$work/out.txt 2>&1 && "$XNN" convert $work/q.onnx -o $work/q2.xnn >$work/out.txt 2>&1; then
  ok "int8 model exported to ONNX (checker passed) and imported back"
  if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    if /usr/bin/python3 -c "
import onnx, sys
m = onnx.load('$work/q.onnx'); onnx.checker.check_model(m)
ops = {(n.domain, n.op_type) for n in m.graph.node}
imports = {o.domain: o.version for o in m.opset_import}
assert ('', 'QLinearConv') in ops and ('com.microsoft', 'QGemm') in ops, ops
assert imports.get('com.microsoft') == 1, imports
" >$work/out.txt 2>&1; then ok "python onnx checker: QLinearConv + com.microsoft QGemm, opset import declared"; else bad "python onnx check"; fi
  fi
  "$XNN" eval $work/q2.xnn --dataset fashion-mnist --limit 2000 $pre --json >$work/r.json 2>$work/out.txt
  [ "$(jf $work/r.json top1)" = "$(jf $work/i.json top1)" ] && ok "round-tripped int8 model: same top-1" || bad "round trip top-1"
else bad "convert int8 model to ONNX and back"; fi

# --- QDQ form: DequantizeLinear -> float op -> QuantizeLinear, standard ONNX only ---------------
if "$XNN" convert $work/q.xnn -o $work/qdq.onnx --qdq >$work/out.txt 2>&1 && grep -q "QDQ form: 5 quantised operators" $work/out.txt; then
  ok "convert --qdq rewrites the 5 quantised operators"
  if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    if /usr/bin/python3 -c "
import onnx
m = onnx.load('$work/qdq.onnx'); onnx.checker.check_model(m)
ops = {(n.domain, n.op_type) for n in m.graph.node}
assert all(d == '' for d, _ in ops), ops
assert not any(t.startswith('QLinear') or t == 'QGemm' for _, t in ops), ops
assert ('', 'DequantizeLinear') in ops and ('', 'QuantizeLinear') in ops and ('', 'Conv') in ops, ops
" >$work/out.txt 2>&1; then ok "python onnx checker: QDQ file has only default-domain ops"; else bad "QDQ onnx check"; fi
  fi
  "$XNN" eval $work/qdq.onnx --dataset fashion-mnist --limit 2000 $pre --json >$work/qdq.json 2>$work/out.txt
  [ "$(jf $work/qdq.json top1)" = "$(jf $work/i.json top1)" ] && ok "QDQ form: same top-1 as the int8 model" || bad "QDQ top-1"
else bad "convert --qdq"; fi
if "$XNN" convert "$model" -o $work/fq.onnx --qdq >$work/out.txt 2>&1; then bad "--qdq on a float model accepted"
elif grep -q "no quantised operator" $work/out.txt; then ok "--qdq on a float model: clear error"; else bad "--qdq float message"; fi

# --- the quantize step in an experiment ----------------------------------------------------------
cat >$work/exp.yaml <<YAML
name: quantize_step_test
models:
  - name: fmnist_cnn
    path: $model
    preprocess: {scale: 1/255, mean: 0.2860, std: 0.3530, layout: NCHW}
variants:
  - fp32
  - name: int8
    steps:
      - {type: quantize, calib_dataset: fashion-mnist, scale: 1/255, mean: 0.2860, std: 0.3530, calib_samples: 100}
  - name: int8_reduced
    steps:
      - {type: quantize, calib_dataset: fashion-mnist, scale: 1/255, mean: 0.2860, std: 0.3530, calib_samples: 50, reduce_range: true}
targets: [{kind: cpu}]
metrics:
  latency: {runs: 3, min_time: 0.01, warmup: 1}
  accuracy: {dataset: fashion-mnist, split: test, limit: 500}
YAML
if "$XNN" run $work/exp.yaml --db $work/e.db >$work/out.txt 2>&1 && grep -qE "int8 .*DONE" $work/out.txt; then
  ok "the quantize step runs inside an experiment"
else bad "quantize step in an experiment"; fi
grep -qE "int8_reduced .*DONE" $work/out.txt && ok "the quantize step takes reduce_range" || bad "reduce_range step"
sed 's/reduce_range: true}/reduce_range: maybe}/' $work/exp.yaml >$work/bad_rr.yaml
if "$XNN" run $work/bad_rr.yaml --db $work/e3.db >$work/out.txt 2>&1; then bad "reduce_range: maybe accepted"
elif grep -q "bad_rr.yaml:13:.*reduce_range.*true or false" $work/out.txt; then ok "reduce_range: maybe: error names the config location"
else bad "reduce_range error message: $(head -c 300 $work/out.txt)"; fi
sed 's/calib_samples: 100}/calib_samples: 100, method: entropy}/' $work/exp.yaml >$work/bad_step.yaml
if "$XNN" run $work/bad_step.yaml --db $work/e2.db >$work/out.txt 2>&1; then bad "unknown method in a step accepted"
elif grep -q "bad_step.yaml:10:.*unknown calibration method 'entropy'" $work/out.txt; then ok "step error names the config location"
else bad "step error message"; fi

# --- bad inputs fail clearly ----------------------------------------------------------------------
expect_error() {  # description, expected message (grep -E), command...
  local what=$1 msg=$2
  shift 2
  if "$@" >$work/out.txt 2>&1; then bad "$what accepted"
  elif grep -qE -e "$msg" $work/out.txt; then ok "$what: $(grep -E -e "$msg" $work/out.txt | head -1 | cut -c1-110)"
  else bad "$what message"; fi
}
expect_error "missing dataset" "nowhere.*(train-images|No such|cannot)" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-dataset fashion-mnist --data-dir $work/nowhere
expect_error "unknown dataset" "unknown dataset; supported: fashion-mnist" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-dataset cifar10
expect_error "unknown node in --exclude" "--exclude '/conv9/Conv': no node of that name.*/conv1/Conv" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-dataset fashion-mnist $pre --exclude /conv9/Conv
expect_error "unknown method" "unknown calibration method 'entropy'; expected one of: minmax, percentile, kl, mse" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-dataset fashion-mnist --method entropy
expect_error "no calibration data" "no calibration data" "$XNN" quantize "$model" -o $work/x.xnn
expect_error "budget without labels" "--accuracy-budget needs a labelled dataset" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-npy $work/calib.npy --accuracy-budget 1
expect_error "wrongly shaped .npy" "do not fit model input 'input'" \
  bash -c "/usr/bin/python3 -c \"import numpy as np; np.save('$work/bad.npy', np.zeros((4,3,28,28), np.float32))\" && \
           '$XNN' quantize '$model' -o $work/x.xnn --calib-npy $work/bad.npy"

# --- weight-only: row-wise 4/8-bit weights, no calibration data ----------------------------------
if "$XNN" quantize "$model" -o $work/w4.xnn --weight-only 4 --min-elements 100 --json >$work/w4.json 2>$work/out.txt &&
   [ "$(jf $work/w4.json bits)" = 4 ] &&
   /usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['tensors']; sys.exit(0 if [x['op'] for x in t] == ['Gemm'] else 1)" $work/w4.json; then
  ok "--weight-only 4: the classifier's weights become 4-bit rows ($(jf $work/w4.json bytes_before) -> $(jf $work/w4.json bytes_after) bytes)"
  "$XNN" eval $work/w4.xnn --dataset fashion-mnist --limit 2000 $pre --json >$work/w4e.json 2>$work/out.txt
  w=$(jf $work/w4e.json top1)
  if awk "BEGIN{exit !($w >= 0.88)}"; then ok "--weight-only 4 model evaluates: top-1 $w"; else bad "weight-only top-1 $w"; fi
else bad "--weight-only 4"; fi
# --codebook: 3-bit k-means indices (8 shared centroids per tensor), looked up on the fly
if "$XNN" quantize "$model" -o $work/cb3.xnn --weight-only 3 --codebook --min-elements 100 --json >$work/cb3.json 2>$work/out.txt &&
   [ "$(jf $work/cb3.json scheme)" = codebook ] &&
   /usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['tensors']; sys.exit(0 if [x['centroids'] for x in t] == [8] else 1)" $work/cb3.json; then
  ok "--weight-only 3 --codebook: 8 centroids, $(jf $work/cb3.json bytes_before) -> $(jf $work/cb3.json bytes_after) bytes"
  "$XNN" eval $work/cb3.xnn --dataset fashion-mnist --limit 2000 $pre --json >$work/cb3e.json 2>$work/out.txt
  w=$(jf $work/cb3e.json top1)
  if awk "BEGIN{exit !($w >= 0.88)}"; then ok "--codebook model evaluates: top-1 $w"; else bad "codebook top-1 $w"; fi
  if "$XNN" inspect $work/cb3.xnn 2>&1 | grep -q "CodebookGemm"; then ok "inspect shows the CodebookGemm node"; else bad "inspect: no CodebookGemm"; fi
else bad "--weight-only 3 --codebook: $(tail -2 $work/out.txt)"; fi
expect_error "weight-only: bad bits" "expected 4 or 8" "$XNN" quantize "$model" -o $work/x.xnn --weight-only 3
expect_error "codebook: bad bits" "expected 1..8 with --codebook" "$XNN" quantize "$model" -o $work/x.xnn --weight-only 9 --codebook
expect_error "codebook without --weight-only" "--codebook needs --weight-only" \
  "$XNN" quantize "$model" -o $work/x.xnn --codebook --calib-dataset fashion-mnist
expect_error "weight-only: nothing qualifies" "no weight qualifies" "$XNN" quantize "$model" -o $work/x.xnn --weight-only 8
expect_error "weight-only with calibration data" "needs no calibration data" \
  "$XNN" quantize "$model" -o $work/x.xnn --weight-only 8 --calib-dataset fashion-mnist

# --- quantisation-aware training: a few fine-tuning steps through fake quantisation ---------------
# (per-tensor weights + KL calibration: the setting where PTQ loses most on this model; figures on
# the full test set in compress/quantize/README.md)
if "$XNN" quantize "$model" -o $work/qat.xnn --calib-dataset fashion-mnist $pre --per-tensor --method kl --eval-limit 300 \
    --qat "$ROOT/configs/train/qat_finetune.yaml" data.train_limit=256 data.test_limit=100 output.dir=$work/qat-train \
    --json >$work/qat.json 2>$work/out.txt; then
  ok "--qat fine-tunes and writes the int8 model"
  [ "$(jf $work/qat.json qat.weight_fake_quants)" = 4 ] && [ "$(jf $work/qat.json qat.epochs)" = 1 ] &&
    ok "--qat: 4 weight fake quantisations, 1 epoch" || bad "--qat fields"
  [ "$(jf $work/qat.json fp32_nodes)" = 0 ] && ok "--qat model fully int8" || bad "--qat fp32 nodes"
  p=$(jf $work/qat.json top1_ptq_int8) q=$(jf $work/qat.json top1_int8)
  echo "      PTQ int8 top-1 $p, QAT int8 top-1 $q (300 test images, 2 fine-tuning steps)"
  if awk "BEGIN{exit !($q >= 0.80)}"; then ok "--qat int8 model evaluates: top-1 $q"; else bad "--qat top-1 $q"; fi
  "$XNN" eval $work/qat.xnn --dataset fashion-mnist --limit 300 $pre --json >$work/qe.json 2>$work/out.txt &&
    [ "$(jf $work/qe.json top1)" = "$q" ] && ok "--qat written model reproduces its top-1 in xnn-lab eval" || bad "eval of qat.xnn"
else bad "--qat"; fi
expect_error "--qat with .npy calibration" "--qat needs a labelled dataset" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-npy $work/calib.npy --qat "$ROOT/configs/train/qat_finetune.yaml"
expect_error "--qat: preprocessing differs" "QAT trains with data.mean 0.286" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-dataset fashion-mnist --qat "$ROOT/configs/train/qat_finetune.yaml"
expect_error "--qat: bad override" "qat_finetune.yaml" \
  "$XNN" quantize "$model" -o $work/x.xnn --calib-dataset fashion-mnist $pre --qat "$ROOT/configs/train/qat_finetune.yaml" epochs=zero

finish
