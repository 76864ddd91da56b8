#!/usr/bin/env python3
"""Our int8 models in ONNX Runtime: quantise the quickstart CNN with `xnn-lab quantize`, export it
in the QOperator form (QLinearConv + com.microsoft ops) and in the QDQ form (`convert --qdq`),
then score all of them on the 10,000 Fashion-MNIST test images with xnn-lab and with ONNX Runtime.

ONNX Runtime is not a project dependency; run this with an interpreter that has it, e.g.
  python3 -m venv /tmp/ort-venv && /tmp/ort-venv/bin/pip install onnxruntime numpy
  /tmp/ort-venv/bin/python scripts/ort_int8_interop.py --xnn-lab build/harness/cli/xnn-lab
"""
import argparse
import glob
import gzip
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

MEAN, STD = 0.2860, 0.3530
DATA = "/usr/share/datasets/fashion-mnist"


def idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(data[3])]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * data[3]).reshape(dims)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(" ".join(cmd) + "\n" + r.stderr)
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xnn-lab", default="build/harness/cli/xnn-lab")
    ap.add_argument("--model", default="configs/models/fmnist_cnn.onnx")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("onnxruntime is not importable by " + sys.executable + "; see this script's docstring")
    work = a.work or tempfile.mkdtemp(prefix="xnn-ort-")
    q8 = os.path.join(work, "int8.xnn")
    run([a.xnn_lab, "quantize", a.model, "-o", q8, "--calib-dataset", "fashion-mnist", "--calib-samples", "100",
         "--mean", str(MEAN), "--std", str(STD), "--eval-limit", "-1"])
    qop, qdq = os.path.join(work, "int8_qoperator.onnx"), os.path.join(work, "int8_qdq.onnx")
    run([a.xnn_lab, "convert", q8, "-o", qop])
    run([a.xnn_lab, "convert", q8, "-o", qdq, "--qdq"])
    images = idx(glob.glob(DATA + "/t10k-images*")[0])
    labels = idx(glob.glob(DATA + "/t10k-labels*")[0])
    x = ((images.astype(np.float32) / 255 - MEAN) / STD)[:, None]
    print(f"{'model':<28} {'xnn-lab top-1':>14} {'onnxruntime top-1':>18}")
    for name, path in [("fp32", a.model), ("int8 QOperator", qop), ("int8 QDQ", qdq)]:
        out = run([a.xnn_lab, "eval", path, "--dataset", "fashion-mnist", "--mean", str(MEAN), "--std", str(STD)])
        ours = re.search(r"top-1 ([0-9.]+)%", out).group(1)
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feed = s.get_inputs()[0].name
        pred = np.concatenate([s.run(None, {feed: x[i:i + 500]})[0].argmax(1) for i in range(0, len(x), 500)])
        print(f"{name:<28} {ours + '%':>14} {100 * (pred == labels).mean():17.2f}%")
    print(f"(onnxruntime {ort.__version__}; files in {work})")


if __name__ == "__main__":
    main()
