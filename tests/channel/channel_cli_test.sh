#!/usr/bin/env bash
# End-to-end tests of `xnn-lab prune --method channel` on the quickstart Fashion-MNIST CNN: the
# FLOPs and parameter targets met on the saved (physically smaller) model, per-group kept/total in
# the JSON, top-1 of the pruned model equal to what `xnn-lab eval` measures on the saved file,
# importance l2/bn/taylor, ranking by predicted latency, a short fine-tune that recovers accuracy, and bad inputs failing with
# messages that name the problem.
# Usage: channel_cli_test.sh XNN_LAB_BINARY REPO_ROOT
XNN=$1
ROOT=$2
# shellcheck source=tests/cli/lib.sh
source "$ROOT/tests/cli/lib.sh"
model=$ROOT/configs/models/fmnist_cnn.onnx
pre="--mean 0.2860 --std 0.3530"   # configs/quickstart.yaml's preprocessing (scale 1/255)
fast="--calib-images 128 --round-to 4"
cd "$work" || exit 1

# --- 50% FLOPs, L1, top-1 on 300 test images ---------------------------------------------------
if "$XNN" prune "$model" -o $work/p.xnn --method channel --target-flops 0.5 $fast --eval-dataset fashion-mnist $pre \
    --eval-limit 300 --json >$work/p.json 2>$work/out.txt; then
  ok "prune --method channel --target-flops 0.5"
  /usr/bin/python3 - $work/p.json <<'EOF' >$work/out.txt 2>&1 && ok "FLOPs <= 50%, params smaller, kept <= total, fixed groups whole" || bad "JSON checks"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["target_met"], d
assert d["macs_after"] <= 0.5 * d["macs_before"] + 1e-6, (d["macs_after"], d["macs_before"])
assert d["params_after"] < d["params_before"]
assert d["prunable_groups"] >= 1
pruned = 0
for g in d["groups"]:
    assert 1 <= g["kept"] <= g["total"], g
    if not g["prunable"]:
        assert g["kept"] == g["total"] and g["reasons"], g
    pruned += g["kept"] < g["total"]
    assert g["prunable"] or g["kept"] % 4 == 0 or g["kept"] == g["total"]
assert pruned >= 1
print("ok")
EOF
  "$XNN" eval $work/p.xnn --dataset fashion-mnist --limit 300 $pre --json >$work/e.json 2>$work/out.txt &&
    /usr/bin/python3 -c "
import json,sys
p=json.load(open('$work/p.json')); e=json.load(open('$work/e.json'))
assert abs(p['top1_pruned']-e['top1'])<1e-9, (p['top1_pruned'], e['top1'])" 2>$work/out.txt &&
    ok "the saved model is smaller and evaluates to the reported top-1 ($(jf $work/p.json top1_pruned))" ||
    bad "eval of the pruned model"
  "$XNN" inspect $work/p.xnn >$work/i.txt 2>$work/out.txt && ok "inspect reads the pruned model" || bad "inspect"
else bad "prune --method channel"; fi

# --- parameter target, other importances -------------------------------------------------------
if "$XNN" prune "$model" -o $work/q.xnn --method channel --target-params 0.5 $fast --importance l2 --json \
    >$work/q.json 2>$work/out.txt &&
   /usr/bin/python3 -c "
import json; d=json.load(open('$work/q.json'))
assert d['target']=='params' and d['params_after'] <= 0.5*d['params_before'], d" 2>$work/out.txt; then
  ok "--target-params 0.5 --importance l2"
else bad "--target-params"; fi
for imp in bn taylor; do
  if "$XNN" prune "$model" -o $work/$imp.xnn --method channel --target-flops 0.6 $fast --importance $imp $pre \
      >$work/$imp.txt 2>$work/out.txt && grep -q "target flops: met" $work/$imp.txt; then
    ok "--importance $imp"
  else bad "--importance $imp"; fi
done

if "$XNN" prune "$model" -o $work/lat.xnn --method channel --target-flops 0.5 $fast --rank-by latency --json \
    >$work/lat.json 2>$work/out.txt && grep -q "ranking by predicted latency" $work/out.txt &&
   /usr/bin/python3 -c "
import json; d=json.load(open('$work/lat.json'))
assert d['target_met'] and d['macs_after'] <= 0.5*d['macs_before'], d" 2>>$work/out.txt; then
  ok "--rank-by latency meets the FLOPs target"
else bad "--rank-by latency"; fi

# --- short fine-tune: accuracy recovers ------------------------------------------------------------
if "$XNN" prune "$model" -o $work/f.xnn --method channel --target-flops 0.5 $fast --eval-dataset fashion-mnist $pre \
    --eval-limit 500 --json --finetune $ROOT/configs/train/fmnist_small_cnn.yaml epochs=1 data.train_limit=2048 \
    optimizer.lr=0.02 >$work/f.json 2>$work/out.txt; then
  b=$(jf $work/f.json top1_pruned) a=$(jf $work/f.json top1_finetuned)
  echo "      top-1 before $(jf $work/f.json top1_before), pruned $b, fine-tuned $a (500 test images)"
  awk "BEGIN{exit !($a > $b)}" && ok "fine-tuning raises top-1 ($b -> $a)" || bad "fine-tuned $a vs pruned $b"
  [ -f $work/f.xnn ] && ok "fine-tuned model saved" || bad "no fine-tuned model"
else bad "prune with --finetune"; fi

# --- bad inputs ------------------------------------------------------------------------------------
expect_error() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  if "$XNN" prune "$model" -o $work/x.xnn --method channel "$@" >$work/out.txt 2>&1; then
    bad "$name: should fail"
  elif grep -q -- "$pattern" $work/out.txt; then ok "$name: $(grep -m1 -- "$pattern" $work/out.txt | cut -c1-110)"
  else bad "$name: message lacks '$pattern'"; fi
}
expect_error "unknown importance" "unknown channel importance 'l3'" --target-flops 0.5 --importance l3
expect_error "sparsity target" "not --target-sparsity" --target-sparsity 0.5
expect_error "no target" "give --target-flops X or --target-params X"
expect_error "round-to 0" "--round-to" --target-flops 0.5 --round-to 0
expect_error "unknown rank" "--rank-by 'speed': expected flops or latency" --target-flops 0.5 --rank-by speed
expect_error "ratio out of range" "expected a share in (0, 1]" --target-flops 1.5

finish
