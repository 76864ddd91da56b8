#!/usr/bin/env bash
# End-to-end tests of `xnn-lab prune` on the quickstart Fashion-MNIST CNN: one-shot unstructured
# pruning to 90% with top-1 before/after on 500 test images, the per-layer table and --json
# fields, the pruned model running (`infer`) with the sparse kernel in the plan (`bench
# --profile`), --target-flops, a short gradual fine-tune through the trainer's step hook (the
# pruned weights must be exactly the target share of zeros afterwards), bad inputs; and --method
# pattern (one-shot with its JSON fields, the pattern kernel in the plan, gradual + fine-tune).
# Usage: prune_test.sh XNN_LAB_BINARY REPO_ROOT
XNN=$1
ROOT=$2
# shellcheck source=tests/cli/lib.sh
source "$ROOT/tests/cli/lib.sh"
model=$ROOT/configs/models/fmnist_cnn.onnx
pre="--mean 0.2860 --std 0.3530"   # configs/quickstart.yaml's preprocessing (scale 1/255)
cd "$work" || exit 1

# --- one-shot to 90% with top-1 before/after ---------------------------------------------------
if "$XNN" prune "$model" -o $work/p.xnn --method unstructured --target-sparsity 0.9 --eval-dataset fashion-mnist \
    --eval-limit 500 $pre --json >$work/p.json 2>$work/out.txt; then
  ok "prune fmnist_cnn one-shot to 90%"
  awk "BEGIN{exit !($(jf $work/p.json sparsity) > 0.8999 && $(jf $work/p.json sparsity) < 0.9001)}" &&
    ok "sparsity $(jf $work/p.json sparsity) of the prunable weights" || bad "sparsity $(jf $work/p.json sparsity)"
  /usr/bin/python3 - "$work/p.json" <<'EOF' && ok "per-layer sparsity 90% and effective MACs below dense" || bad "layers in --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["layers"], d
for l in d["layers"]:
    assert abs(l["zeros"] - round(0.9 * l["weights"])) == 0, l
    assert l["effective_macs"] < l["macs"], l
assert d["effective_macs"] < d["model_macs"]
assert d["eval_samples"] == 500 and 0 < d["top1_before"] <= 1 and 0 <= d["top1_after"] <= 1
EOF
else bad "prune fmnist_cnn one-shot"; fi

if "$XNN" prune "$model" -o $work/p2.xnn --target-sparsity 0.9 >$work/out.txt 2>&1 &&
   grep -q "sparsity" $work/out.txt && grep -q "total: .* prunable weights zero (90.00%)" $work/out.txt; then
  ok "text output: per-layer table and total"
else bad "text output"; fi

# --- the pruned model runs; its sparse layers take the sparse kernel ----------------------------
/usr/bin/python3 -c "import numpy as np; np.save('$work/x.npy', np.random.RandomState(0).rand(1,1,28,28).astype(np.float32))"
if "$XNN" infer $work/p.xnn --input $work/x.npy --output-dir $work/out >$work/out.txt 2>&1; then
  ok "infer on the pruned model"
else bad "infer on the pruned model"; fi
if "$XNN" bench $work/p.xnn --runs 2 --warmup 1 --profile >$work/out.txt 2>&1 && grep -q "_sparse+f32_sp" $work/out.txt; then
  ok "bench --profile shows a sparse kernel"
else bad "sparse kernel in the plan"; fi

# --- --target-flops: the share of MACs left ----------------------------------------------------
if "$XNN" prune "$model" -o $work/f.xnn --target-flops 0.8 --json >$work/f.json 2>$work/out.txt; then
  r=$(/usr/bin/python3 -c "import json; d=json.load(open('$work/f.json')); print(d['effective_macs']/d['model_macs'])")
  awk "BEGIN{exit !($r > 0.79 && $r < 0.81)}" && ok "--target-flops 0.8 leaves $r of the MACs" || bad "MAC share $r"
else bad "--target-flops"; fi

# --- gradual pruning during a short fine-tune (4 steps) ----------------------------------------
if "$XNN" prune "$model" -o $work/g.xnn --target-sparsity 0.75 --schedule gradual --json \
    --finetune $ROOT/configs/train/lenet_300_100.yaml epochs=1 data.train_limit=512 data.test_limit=200 \
    >$work/g.json 2>$work/out.txt; then
  s=$(jf $work/g.json sparsity)
  awk "BEGIN{exit !($s > 0.7499 && $s < 0.7501)}" && ok "gradual + fine-tune reaches 75% exactly ($s)" || bad "gradual sparsity $s"
  [ "$(jf $work/g.json eval_samples)" = 200 ] && ok "top-1 before/after on the config's test split" || bad "eval samples"
  [ -f $work/g.xnn.finetune/model.xnn ] && ok "fine-tune outputs in OUT.finetune/" || bad "fine-tune outputs"
else bad "gradual prune with --finetune"; fi

# --- bad inputs ----------------------------------------------------------------------------------
expect_fail() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  if "$XNN" "$@" >$work/out.txt 2>&1; then bad "$name (succeeded)"; return; fi
  grep -q -- "$pattern" $work/out.txt && ok "$name" || bad "$name: no '$pattern'"
}
expect_fail "unknown method" "unknown" prune "$model" -o $work/x.xnn --method magic --target-sparsity 0.5
expect_fail "no target" "target-sparsity" prune "$model" -o $work/x.xnn
expect_fail "sparsity out of range" "\[0, 1)" prune "$model" -o $work/x.xnn --target-sparsity 1.5
expect_fail "gradual needs --finetune" "finetune" prune "$model" -o $work/x.xnn --target-sparsity 0.5 --schedule gradual
expect_fail "unknown schedule" "oneshot or gradual" prune "$model" -o $work/x.xnn --target-sparsity 0.5 --schedule fast
expect_fail "missing fine-tune config" "nonexistent.yaml" prune "$model" -o $work/x.xnn --target-sparsity 0.5 --finetune $work/nonexistent.yaml

# --- --method pattern: 4-of-9 patterns + connectivity on the 3x3 convs (16->32, 32->64) ----------
# 0.9 zeros with 4 taps: connectivity 1 - 9 * 0.1 / 4 = 0.775 of the kernels removed; the kept
# work (0.1 of dense) is small enough for the pattern kernel.
if "$XNN" prune "$model" -o $work/pat.xnn --method pattern --target-sparsity 0.9 --eval-dataset fashion-mnist \
    --eval-limit 200 $pre --json >$work/pat.json 2>$work/out.txt; then
  ok "prune --method pattern one-shot to 90%"
  /usr/bin/python3 - "$work/pat.json" <<'EOF2' && ok "pattern: sparsity, connectivity, library, top-1 in --json" || bad "pattern --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["method"] == "pattern" and d["pattern_taps"] == 4, d
assert abs(d["sparsity"] - 0.9) < 0.005, d["sparsity"]
assert abs(d["connectivity"] - 0.775) < 1e-9 and abs(d["removed_kernels"] / d["kernels"] - 0.775) < 0.002, d
assert 1 <= len(d["patterns"]) <= 8 and all(p.count("x") == 4 for p in d["patterns"]), d["patterns"]
assert [l["node"] for l in d["layers"]] and len(d["layers"]) == 2, d["layers"]
assert d["eval_samples"] == 200 and 0 <= d["top1_after"] <= 1
EOF2
else bad "prune --method pattern one-shot"; fi
if "$XNN" bench $work/pat.xnn --runs 2 --warmup 1 --profile >$work/out.txt 2>&1 && grep -q "f32_patconv3x3_" $work/out.txt; then
  ok "bench --profile shows the pattern kernel"
else bad "pattern kernel in the plan"; fi
if "$XNN" prune "$model" -o $work/pat2.xnn --method pattern --target-sparsity 0.7 >$work/out.txt 2>&1 &&
   grep -q "patterns (" $work/out.txt && grep -q "connectivity: .* 3x3 kernels removed" $work/out.txt; then
  ok "pattern text output: library and connectivity"
else bad "pattern text output"; fi
if "$XNN" prune "$model" -o $work/patg.xnn --method pattern --target-sparsity 0.8 --schedule gradual --json \
    --finetune $ROOT/configs/train/lenet_300_100.yaml epochs=1 data.train_limit=512 data.test_limit=100 \
    >$work/patg.json 2>$work/out.txt; then
  s=$(jf $work/patg.json sparsity)
  awk "BEGIN{exit !($s > 0.795 && $s < 0.805)}" && ok "pattern gradual + fine-tune reaches 80% ($s)" || bad "pattern gradual sparsity $s"
  [ -f $work/patg.xnn.finetune/model.xnn ] && ok "pattern fine-tune outputs in OUT.finetune/" || bad "pattern fine-tune outputs"
else bad "pattern gradual prune with --finetune"; fi
expect_fail "pattern: sparsity below 1 - 4/9" "not reachable with 4-of-9" prune "$model" -o $work/x.xnn --method pattern --target-sparsity 0.3
expect_fail "pattern: global scope" "scope must be layer" prune "$model" -o $work/x.xnn --method pattern --target-sparsity 0.8 --scope global
expect_fail "pattern: bad taps" "pattern-taps" prune "$model" -o $work/x.xnn --method pattern --target-sparsity 0.95 --pattern-taps 9

finish
