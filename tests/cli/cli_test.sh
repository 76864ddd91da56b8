#!/usr/bin/env bash
# End-to-end tests of the xnn-lab CLI: convert / inspect / infer on a real torchvision export,
# and the bad-input contract (clear message naming the thing at fault, non-zero exit, no crash).
# Usage: cli_test.sh XNN_LAB_BINARY FIXTURE_DIR
XNN=$1
FIX=$2
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

model=$FIX/squeezenet1_1.onnx
[ -f "$model" ] || { echo "FAIL  fixture $model missing"; echo "0 passed, 1 failed"; exit 1; }

# --- the happy path --------------------------------------------------------------------------
run_expect "convert" 0 "converted .* -> .*squeeze.xnn" "$XNN" convert "$model" -o "$work/squeeze.xnn"
run_expect "inspect text" 0 "MACs:" "$XNN" inspect "$work/squeeze.xnn"
"$XNN" inspect "$work/squeeze.xnn" --json >"$work/inspect.json" 2>&1
check "inspect --json parses and has the fields" $PY -c "
import json,sys; d=json.load(open('$work/inspect.json'))
assert d['format']=='xnn' and d['inputs'][0]['shape']==[1,3,224,224], d
assert d['parameters']==1235496 and d['macs']>3e8 and d['ops']['Conv']==26, d"
run_expect "infer .xnn" 0 "output: f32 \[1,1000\]" "$XNN" infer "$work/squeeze.xnn" --input "$FIX/squeezenet1_1.input.npy" --output-dir "$work/out"
check "infer output equals PyTorch's" $PY -c "
import numpy as np; a=np.load('$work/out/output.npy'); b=np.load('$FIX/squeezenet1_1.output.npy')
assert np.abs(a-b).max() <= 1e-4*np.abs(b).max(), np.abs(a-b).max()"
run_expect "infer .onnx with NAME=" 0 "output" "$XNN" infer "$model" --input "input=$FIX/squeezenet1_1.input.npy" --output-dir "$work/out2"

# bench: the JSON contract (fields the peer script and the latency predictor read)
"$XNN" bench "$work/squeeze.xnn" --threads 2 --warmup 1 --runs 3 --profile --json >"$work/bench.json" 2>&1
check "bench --json --profile has the fields" $PY -c "
import json; d=json.load(open('$work/bench.json'))
for k in ['min','median','mean','p90','p99','stddev']: assert d['latency_ms'][k] > 0, k
assert d['runs']==3 and d['threads']==2 and len(d['samples_ms'])==3, d
assert d['init_ms']>0 and d['first_run_ms']>0 and d['peak_rss_bytes']>0, d
assert d['memory_planned'] and 0 < d['arena_bytes'] <= 1.1*d['arena_lower_bound_bytes'], d
ops=d['ops']; assert len(ops)>20 and all(k in ops[0] for k in ['name','type','kernel','input_shapes','output_shapes','macs','bytes','time_ms'])
assert any(o['kernel'].endswith('avx2') or 'scalar' in o['kernel'] or 'avx2' in o['kernel'] for o in ops), ops
assert abs(sum(o['macs'] for o in ops) - d['total_macs']) < 1, d"
run_expect "bench text --profile" 0 "cum %" "$XNN" bench "$model" --runs 2 --warmup 1 --profile
run_expect "bench --reference --opt-level 0" 0 "kernels reference" "$XNN" bench "$model" --runs 1 --warmup 1 --reference --opt-level 0
run_expect "bench --tune" 0 "tuned" "$XNN" bench "$model" --runs 1 --warmup 1 --tune
run_expect "bench: bad --shape" 1 "--shape input=1,x" "$XNN" bench "$model" --shape input=1,x
run_expect "bench: wrong --shape rank" 1 "input" "$XNN" bench "$model" --shape input=1,3,224
run_expect "inspect reports the memory plan" 0 "memory plan: arena .* liveness lower bound" "$XNN" inspect "$model"

cnn=$(cd "$(dirname "$0")/../.." && pwd)/configs/models/fmnist_cnn.onnx
"$XNN" eval "$cnn" --dataset fashion-mnist --limit 300 --scale 0.00392156862745098 --mean 0.2860 --std 0.3530 --json \
  >"$work/eval.json" 2>&1
check "eval --json on Fashion-MNIST" $PY -c "
import json; d=json.load(open('$work/eval.json')); assert d['samples']==300 and d['top1']>0.8 and d['top5']>=d['top1'], d"
run_expect "eval: unknown dataset" 1 "unknown dataset 'mnist'" "$XNN" eval "$cnn" --dataset mnist

# --- bad input ---------------------------------------------------------------------------------
run_expect "missing model file" 2 "nonexistent.onnx" "$XNN" inspect "$work/nonexistent.onnx"
head -c 3000 "$work/squeeze.xnn" >"$work/trunc.xnn"
run_expect "truncated .xnn" 1 "trunc.xnn" "$XNN" inspect "$work/trunc.xnn"
head -c 100000 "$model" >"$work/trunc.onnx"
run_expect "truncated .onnx" 1 "trunc.onnx" "$XNN" convert "$work/trunc.onnx" -o "$work/x.xnn"
head -c 4096 /dev/urandom >"$work/random.onnx"
run_expect "random bytes .onnx" 1 "random.onnx" "$XNN" inspect "$work/random.onnx"
$PY -c "import numpy as np; np.save('$work/small.npy', np.zeros((1,3,32,32), np.float32)); np.save('$work/int.npy', np.zeros((1,3,224,224), np.int64))"
run_expect "wrong input shape" 1 "input 'input' has shape \[1,3,32,32\], expected \[1,3,224,224\]" \
  "$XNN" infer "$work/squeeze.xnn" --input "$work/small.npy" --output-dir "$work/o"
run_expect "wrong input dtype" 1 "input 'input' has dtype i64, expected f32" \
  "$XNN" infer "$work/squeeze.xnn" --input "$work/int.npy" --output-dir "$work/o"
run_expect "unknown input name" 1 "unknown input 'inptu' \(did you mean 'input'\?\)" \
  "$XNN" infer "$work/squeeze.xnn" --input "inptu=$work/int.npy" --output-dir "$work/o"
run_expect "missing .npy" 1 "nope.npy" "$XNN" infer "$work/squeeze.xnn" --input "$work/nope.npy" --output-dir "$work/o"
echo "not numpy" >"$work/bad.npy"
run_expect "corrupt .npy" 1 "bad.npy: not a .npy file" "$XNN" infer "$work/squeeze.xnn" --input "$work/bad.npy" --output-dir "$work/o"
$PY - "$work/unsup.onnx" <<'PYEOF'
import sys, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu0"),
         helper.make_node("Hardmax", ["a"], ["b"], name="hm1"),
         helper.make_node("Hardmax", ["b"], ["c"], name="hm2"),
         helper.make_node("Shrink", ["c"], ["y"], name="shrink")]
m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, sys.argv[1])
PYEOF
run_expect "unsupported ops listed all at once" 1 "Hardmax: nodes 'hm1', 'hm2'" "$XNN" convert "$work/unsup.onnx" -o "$work/u.xnn"
run_expect "unsupported ops: second type too" 1 "Shrink: node 'shrink'" "$XNN" convert "$work/unsup.onnx" -o "$work/u.xnn"
run_expect "usage error" 2 "required" "$XNN" infer
run_expect "--help" 0 "Usage" "$XNN" convert --help

finish
