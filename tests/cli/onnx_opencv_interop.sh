#!/usr/bin/env bash
# ONNX export interop: a model converted to .xnn and exported back to ONNX with
# `xnn-lab convert x.xnn -o back.onnx` must load in OpenCV DNN (an ONNX reader that shares no
# code with ours) and give our outputs. Checked for the model as converted, and for the model
# after graph optimisation (FusedConv/FusedGemm, which the exporter writes as standard ops).
# Exits 77 (skipped) when OpenCV's Python module is not installed.
# Usage: onnx_opencv_interop.sh XNN_LAB_BINARY SOURCE_DIR
set -euo pipefail
XNN=$1
ROOT=$2
PY=/usr/bin/python3
TOL=1e-4

if ! "$PY" -c "import cv2" 2>/dev/null; then
  echo "SKIP: OpenCV's Python module (python3-opencv) is not installed for $PY: 'import cv2' fails"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

model=$ROOT/configs/models/fmnist_cnn.onnx
[ -f "$model" ] || { echo "FAIL: $model is missing"; exit 1; }

# A deterministic input of the model's declared shape (the symbolic batch set to 4).
"$XNN" convert "$model" -o "$work/model.xnn"
"$PY" - "$ROOT/configs/models/fmnist_cnn.json" "$work/input.npy" <<'PY'
import json, sys
import numpy as np
spec = json.load(open(sys.argv[1]))["input"]
shape = [4 if isinstance(d, str) else int(d) for d in spec["shape"]]
rng = np.random.default_rng(20240601)
np.save(sys.argv[2], rng.standard_normal(shape).astype(np.float32))
PY

# compare NAME MODEL.xnn: our output on the .xnn vs OpenCV's on its ONNX export.
compare() {
  local name=$1 xnn_model=$2
  "$XNN" convert "$xnn_model" -o "$work/$name.onnx"
  "$XNN" infer "$xnn_model" --input "$work/input.npy" --output-dir "$work/$name.out" >/dev/null
  "$PY" - "$work/$name.onnx" "$work/input.npy" "$work/$name.out" "$name" "$TOL" <<'PY'
import glob, os, sys
import cv2
import numpy as np
onnx_path, input_path, out_dir, name, tol = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
outputs = sorted(glob.glob(os.path.join(out_dir, "*.npy")))
if len(outputs) != 1:
    sys.exit(f"FAIL {name}: expected one output from xnn-lab infer, got {outputs}")
ours = np.load(outputs[0])
net = cv2.dnn.readNetFromONNX(onnx_path)
net.setInput(np.load(input_path))
theirs = net.forward()
if theirs.shape != ours.shape:
    sys.exit(f"FAIL {name}: OpenCV output shape {theirs.shape}, xnn-lab {ours.shape}")
diff = float(np.max(np.abs(theirs.astype(np.float64) - ours.astype(np.float64))))
print(f"{name}: OpenCV {cv2.__version__} vs xnn-lab, {ours.shape} outputs: max abs diff {diff:.3g} (tolerance {tol:g})")
if not diff <= tol:
    sys.exit(f"FAIL {name}: max abs diff {diff} > {tol}")
PY
}

compare converted "$work/model.xnn"

# The optimised model: the CLI writes one through `xnn-lab run` with the optimize step
# (artifacts/<job>/optimized_o2.xnn next to the results database).
cat >"$work/optimize.yaml" <<YAML
name: onnx-interop
models: [{name: fmnist_cnn, path: $model}]
variants: [{name: optimized, steps: [convert, {type: optimize, level: 2}]}]
targets: [cpu]
metrics: {latency: {warmup: 0, runs: 1, min_time: 0}, accuracy: false}
YAML
"$XNN" run "$work/optimize.yaml" --db "$work/run.db" >"$work/run.txt" 2>&1 || { cat "$work/run.txt"; exit 1; }
optimized=$(find "$work/artifacts" -name 'optimized_o2.xnn' | head -n 1)
[ -n "$optimized" ] || { echo "FAIL: xnn-lab run wrote no optimized_o2.xnn"; cat "$work/run.txt"; exit 1; }
compare optimized "$optimized"
echo "onnx_opencv_interop: ok"
