#!/usr/bin/env bash
# End-to-end tests of `xnn-lab train`: a short run that learns (JSON fields, store record,
# exported .xnn and .onnx), resume after kill -9 ending bit-identical to an uninterrupted run,
# the trained model evaluated by the inference engine and by OpenCV DNN, config errors, and the
# `train` experiment step.
# Usage: train_test.sh XNN_LAB_BINARY REPO_ROOT
set -uo pipefail
XNN=$1
ROOT=$2
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() { failed=$((failed + 1)); echo "FAIL  $1"; [ -f "$work/out.txt" ] && sed 's/^/      /' "$work/out.txt" | tail -25; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
jf() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
cfg=$ROOT/configs/train/fmnist_small_cnn.yaml
small="data.train_limit=1024 data.test_limit=500 data.batch_size=64 optimizer.lr=0.02 log_every=0 threads=2"
cd "$work" || exit 1

# --- a short run learns, is recorded and exported --------------------------------------------
if "$XNN" train "$cfg" $small epochs=2 output.dir=$work/a --db $work/t.db --json >$work/a.json 2>$work/out.txt; then
  acc=$(jf $work/a.json test_accuracy)
  if awk "BEGIN{exit !($acc > 0.55)}"; then ok "2 epochs on 1024 images learn (test accuracy $acc)"; else bad "test accuracy $acc"; fi
  for k in train_seconds xnn_path onnx_path history; do
    if grep -q "\"$k\"" $work/a.json; then ok "--json has $k"; else bad "--json has $k"; fi
  done
  if [ -s $work/a/model.xnn ] && [ -s $work/a/model.onnx ]; then ok "model.xnn and model.onnx written"; else bad "exports"; fi
  rec=$(q $work/t.db "select value from metrics where name='test_accuracy'")
  if awk "BEGIN{exit !(($rec - $acc) < 1e-9 && ($acc - $rec) < 1e-9)}"; then ok "test accuracy recorded in SQLite"; else bad "recorded '$rec' vs $acc"; fi
  if [ "$(q $work/t.db "select count(*) from samples where name='epoch_test_accuracy'")" = 2 ]; then ok "per-epoch history recorded"; else bad "per-epoch history"; fi
else
  bad "short training run"
fi

# --- the inference engine agrees with the trainer's own evaluation ----------------------------
if "$XNN" eval $work/a/model.xnn --dataset fashion-mnist --limit 500 --mean 0.2860 --std 0.3530 --json >$work/eval.json 2>$work/out.txt; then
  top1=$(jf $work/eval.json top1)
  if awk "BEGIN{d=$top1-$acc; exit !(d < 0.005 && d > -0.005)}"; then ok "xnn-lab eval of the trained .xnn: top-1 $top1 (trainer: $acc)"; else bad "eval $top1 vs trainer $acc"; fi
else bad "eval of the trained model"; fi

# --- OpenCV DNN runs the exported ONNX and reproduces our outputs -----------------------------
if /usr/bin/python3 -c "import cv2" 2>/dev/null; then
  /usr/bin/python3 -c "import numpy as np; np.save('$work/x.npy', np.random.default_rng(0).standard_normal((4,1,28,28)).astype(np.float32))"
  "$XNN" infer $work/a/model.xnn --input $work/x.npy --output-dir $work/inf >$work/out.txt 2>&1
  if /usr/bin/python3 - "$work" >$work/out.txt 2>&1 <<'PY'
import sys, cv2, numpy as np
w = sys.argv[1]
net = cv2.dnn.readNetFromONNX(f"{w}/a/model.onnx")
x = np.load(f"{w}/x.npy")
net.setInput(x)
ours = np.load(f"{w}/inf/logits.npy")
theirs = net.forward()
d = float(np.abs(ours - theirs).max())
print("max abs diff", d)
sys.exit(0 if d <= 1e-4 else 1)
PY
  then ok "OpenCV DNN reproduces the exported model's outputs ($(cat $work/out.txt))"; else bad "OpenCV DNN comparison"; fi
else
  echo "skip  OpenCV DNN comparison: python3-opencv is not installed (scripts/install-deps.sh installs it)"
fi

# --- kill -9 after the first epoch, resume: bit-identical to an uninterrupted run -------------
"$XNN" train "$cfg" $small epochs=3 output.dir=$work/full --no-record >/dev/null 2>&1
"$XNN" train "$cfg" $small epochs=3 output.dir=$work/res --no-record >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -f $work/res/checkpoint/state.txt ] && break; sleep 0.02; done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
if [ -f $work/res/checkpoint/state.txt ] && [ ! -f $work/res/model.xnn ]; then ok "killed mid-run with a checkpoint on disk"; else bad "kill mid-run (the run finished or wrote no checkpoint)"; fi
if "$XNN" train "$cfg" $small epochs=3 output.dir=$work/res --no-record --json >$work/res.json 2>$work/out.txt; then
  from=$(jf $work/res.json resumed_from_epoch)
  if [ "$from" -ge 1 ]; then ok "resumed after epoch $from"; else bad "did not resume ($from)"; fi
  if cmp -s $work/full/model.xnn $work/res/model.xnn; then ok "resumed run ends bit-identical to the uninterrupted one"; else bad "resumed model differs"; fi
else bad "resume"; fi
if "$XNN" train "$cfg" $small epochs=4 output.dir=$work/res --no-record >$work/out.txt 2>&1; then bad "a changed config resumed a foreign checkpoint"
elif grep -q "different config" $work/out.txt; then ok "a checkpoint from another config is refused"; else bad "foreign checkpoint message"; fi

# --- config errors name the file, line and key ------------------------------------------------
cat >$work/bad.yaml <<'YAML'
name: bad
epochs: 1
model:
  builder:
    input: [1, 28, 28]
    blocks:
      - {type: conv, out: 8}
optimiser:
  lr: 0.1
YAML
if "$XNN" train $work/bad.yaml --no-record >$work/out.txt 2>&1; then bad "unknown key accepted"
elif grep -q "bad.yaml:8:1: unknown key 'optimiser' (did you mean 'optimizer'?)" $work/out.txt; then ok "unknown key: file:line and did-you-mean"; else bad "unknown key message"; fi
sed -i 's/optimiser:/optimizer:/; s/type: conv, out: 8/type: convv, out: 8/' $work/bad.yaml
if "$XNN" train $work/bad.yaml --no-record >$work/out.txt 2>&1; then bad "unknown block accepted"
elif grep -q "bad.yaml:7:16: unknown block type 'convv'" $work/out.txt; then ok "unknown block type named with its line"; else bad "unknown block message"; fi
if "$XNN" train "$cfg" epochs=0 --no-record >$work/out.txt 2>&1; then bad "epochs=0 accepted"
elif grep -q "'epochs' must be >= 1" $work/out.txt; then ok "bad override value rejected"; else bad "epochs=0 message"; fi

# --- the train step in an experiment ----------------------------------------------------------
cat >$work/exp.yaml <<YAML
name: train_step_test
models:
  - name: fmnist_cnn
    path: $ROOT/configs/models/fmnist_cnn.onnx
    preprocess: {scale: 1/255, mean: 0.2860, std: 0.3530, layout: NCHW}
variants:
  - name: finetuned
    steps:
      - {type: train, config: $cfg, epochs: 1, train_limit: 512, test_limit: 200, lr: 0.01}
targets: [{kind: cpu}]
metrics:
  latency: {runs: 3, min_time: 0.01, warmup: 1}
  accuracy: {dataset: fashion-mnist, split: test, limit: 200}
YAML
if "$XNN" run $work/exp.yaml --db $work/e.db >$work/out.txt 2>&1 && grep -qE "finetuned .*DONE" $work/out.txt; then
  ok "the train step runs inside an experiment"
else bad "train step in an experiment"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
