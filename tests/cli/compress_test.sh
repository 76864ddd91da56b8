#!/usr/bin/env bash
# End-to-end tests of `xnn-lab compress` on the quickstart Fashion-MNIST CNN, kept small (a few
# hundred images, one short fine-tuning each): a prune -> finetune -> cluster (centroid
# fine-tuning) -> encode recipe with --json (stages in order, sizes not growing and the coded
# file far smaller, top-1 per stage, the output file's size = the last stage's), the run and its
# per-stage metrics in the SQLite store, the saved model evaluating like the last stage, the
# `compress` and `prune` experiment steps, an int8 recipe, and bad recipes failing with
# FILE:LINE:COL messages.
# Usage: compress_test.sh XNN_LAB_BINARY SOURCE_DIR
set -uo pipefail
XNN=$1
SRC=$2
PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() { failed=$((failed + 1)); echo "FAIL  $1"; [ -f "$work/out.txt" ] && sed 's/^/      /' "$work/out.txt" | tail -25; }
json_check() {
  if $PY -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>"$work/out.txt"; then
    ok "$1"
  else bad "$1 ($3)"; head -c 2000 "$2"; echo; fi
}
model=$SRC/configs/models/fmnist_cnn.onnx
train=$SRC/configs/train/fmnist_small_cnn.yaml
[ -f "$model" ] && [ -f "$train" ] || { echo "FAIL  $model or $train missing"; echo "0 passed, 1 failed"; exit 1; }
cd "$work" || exit 1
small="data.train_limit: 256, data.test_limit: 100, epochs: 1, log_every: 0"

cat >recipe.yaml <<YAML
name: tiny_dc
stages:
  - prune: {target_sparsity: 0.6, min_elements: 256, finetune: {config: $train, $small, optimizer.lr: 0.001}}
  - finetune: {config: $train, $small, optimizer.lr: 0.001}
  - cluster: {bits: 4, finetune: {config: $train, $small, optimizer.lr: 0.001}}
  - encode: {coder: rans}
YAML

# --- the pipeline, --json ---------------------------------------------------------------------
if "$XNN" compress "$model" --recipe recipe.yaml -o out.xnn --eval-limit 300 --db db.sqlite --json >out.json 2>$work/out.txt; then
  ok "compress --json"
  json_check "stages in order" out.json "[s['stage'] for s in d['stages']] == ['baseline','prune','finetune','cluster','encode']"
  json_check "every stage has size_bytes and top1" out.json "all(s['size_bytes'] > 0 and 0 <= s['top1'] <= 1 for s in d['stages'])"
  json_check "sizes never grow" out.json "all(a['size_bytes'] >= b['size_bytes'] for a, b in zip(d['stages'], d['stages'][1:]))"
  json_check "coded model >= 5x smaller than fp32" out.json "d['ratio'] >= 5 and d['fp32_bytes'] == d['stages'][0]['size_bytes']"
  json_check "pruned 60% zeros (prunable weights)" out.json "d['stages'][1]['sparsity'] > 0.5"
  json_check "zeros survive fine-tuning and clustering" out.json "d['stages'][3]['sparsity'] >= d['stages'][1]['sparsity'] - 1e-9"
  json_check "clustering (4 bits, centroid fine-tuning) costs < 5 points" out.json "d['stages'][3]['top1'] > d['stages'][2]['top1'] - 0.05"
  json_check "model path and weights ratio" out.json "d['model'] == 'out.xnn' and d['weights_ratio'] > d['ratio'] and d['eval_samples'] == 300"
  size=$(stat -c %s out.xnn)
  json_check "output file is the last stage's size" out.json "d['final_bytes'] == $size"
else bad "compress --json"; fi

# --- the store: one run, one job with per-stage metrics ----------------------------------------
if $PY - db.sqlite >$work/out.txt 2>&1 <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
runs = c.execute("select id, status from runs where experiment_id = (select id from experiments where name='compress')").fetchall()
assert len(runs) == 1 and runs[0][1] == 'FINISHED', runs
names = {r[0]: r[1] for r in c.execute("select name, value from metrics")}
for n in ['stage.0.baseline.size_bytes', 'stage.1.prune.top1', 'stage.3.cluster.size_bytes', 'stage.4.encode.size_bytes',
          'compression_ratio', 'size_bytes', 'top1']:
    assert n in names, (n, sorted(names))
assert names['stage.4.encode.size_bytes'] < names['stage.0.baseline.size_bytes']
PYEOF
then ok "store: run FINISHED, stage.<i>.<name>.size_bytes / top1 metrics"; else bad "store rows"; fi

# --- the saved model evaluates like the last stage --------------------------------------------
if "$XNN" eval out.xnn --dataset fashion-mnist --limit 300 --mean 0.2860 --std 0.3530 --json >eval.json 2>$work/out.txt; then
  $PY -c "import json; a=json.load(open('eval.json')); b=json.load(open('out.json')); exit(0 if abs(a['top1'] - b['stages'][-1]['top1']) < 1e-9 else 1)" \
    && ok "eval of the saved coded model = the encode stage's top-1" || bad "eval top-1 differs"
else bad "eval out.xnn"; fi

# --- int8 recipe, text output -------------------------------------------------------------------
printf 'stages:\n  - prune: {target_sparsity: 0.5}\n  - quantize: {calib_samples: 32}\n' >int8.yaml
if "$XNN" compress "$model" --recipe int8.yaml -o int8.xnn --eval-limit 200 --no-db >$work/out.txt 2>&1; then
  grep -q "quantize" $work/out.txt && grep -q "smaller" $work/out.txt && ok "prune + int8 recipe (text)" || bad "int8 text"
  [ ! -e xnn-lab.db ] && ok "--no-db records nothing" || bad "--no-db wrote a store"
else bad "prune + int8 recipe"; fi

# --- experiment steps: compress and prune --------------------------------------------------------
cat >exp.yaml <<YAML
name: compress_steps
models:
  - name: cnn
    path: $model
    preprocess: {scale: 1/255, mean: 0.2860, std: 0.3530, layout: NCHW}
variants:
  - name: dc
    steps:
      - {type: compress, recipe: recipe.yaml, eval_limit: 100}
  - name: pruned
    steps:
      - {type: prune, target_sparsity: 0.7, eval_limit: 100}
targets:
  - {name: cpu-1t, kind: cpu, threads: 1}
metrics:
  latency: {warmup: 1, runs: 3, min_time: 0}
  size: true
  accuracy: {dataset: fashion-mnist, split: test, limit: 100}
YAML
if "$XNN" run exp.yaml --db db.sqlite >$work/out.txt 2>&1; then
  ok "experiment with compress and prune steps"
  n=$(find . -name compress_report.json | wc -l)
  [ "$n" -ge 2 ] && ok "steps wrote compress_report.json ($n)" || bad "compress_report.json missing ($n)"
else bad "experiment with compress and prune steps"; fi

# --- bad recipes ---------------------------------------------------------------------------------
expect_error() {  # NAME PATTERN RECIPE_TEXT
  printf '%s' "$3" >bad.yaml
  if "$XNN" compress "$model" --recipe bad.yaml -o bad.xnn --no-db >$work/out.txt 2>&1; then bad "$1: accepted"
  elif grep -qE "$2" $work/out.txt; then ok "$1"; else bad "$1: message lacks /$2/"; fi
}
expect_error "unknown stage key" "bad.yaml:2:35: stages\[0\].prune: unknown key 'sparsity'" $'stages:\n  - prune: {target_sparsity: 0.5, sparsity: 1}\n'
expect_error "bits out of range" "bad.yaml:2:21: stages\[0\].cluster: 'bits' must be 1..8" $'stages:\n  - cluster: {bits: 9}\n'
expect_error "unknown per_layer name" "per_layer: no prunable weight or node named 'fc9'; candidates" $'stages:\n  - prune: {target_sparsity: 0.5, per_layer: {fc9: 0.9}}\n'
expect_error "unknown stage" "unknown stage 'shrink'" $'stages:\n  - shrink: {}\n'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
