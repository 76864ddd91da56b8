#!/usr/bin/python3
"""Training step time: xnn-lab against PyTorch on the same model, batch size and thread count.

    /usr/bin/python3 scripts/bench_train.py --xnn-lab build/harness/cli/xnn-lab \
        [--config configs/train/fmnist_small_cnn.yaml] [--threads 2] [--batch 128] [--steps 60]

The model is the training config's `model.builder` description, built in PyTorch with the same
blocks (xnn-lab's builder semantics: "same" padding, BatchNorm without conv bias, the
activations, dropout, flatten/gap, fc layers and a final classifier). One optimiser step =
forward + cross-entropy + backward + SGD/AdamW update, on batches of Fashion-MNIST-shaped data
held in memory (data loading is excluded on both sides). PyTorch runs with
torch.set_num_threads(threads); xnn-lab runs `xnn-lab train CONFIG epochs=1
data.train_limit=steps*batch threads=T --json --no-record` and reports its median step time.
Prints both medians and the ratio xnn-lab / PyTorch (lower is better for xnn-lab).

PyTorch's CPU BLAS matters: Debian's torch uses whatever libblas.so.3 points to. Install
libopenblas0-pthread (scripts/install-deps.sh does) or PyTorch runs on the slow reference BLAS.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml


def torch_model(builder, nn):
    c, h, w = builder["input"]
    layers, flat, features = [], False, 0
    acts = {"none": None, "relu": nn.ReLU, "relu6": nn.ReLU6, "leakyrelu": lambda: nn.LeakyReLU(0.01),
            "hardswish": nn.Hardswish, "sigmoid": nn.Sigmoid, "silu": nn.SiLU}
    for b in builder["blocks"]:
        t = b["type"]
        k = b.get("kernel", 2 if t in ("maxpool", "avgpool") else (1 if t == "pointwise" else 3))
        s = b.get("stride", k if t in ("maxpool", "avgpool") else 1)
        act = acts[b.get("act", "none")]
        if t in ("conv", "depthwise", "pointwise"):
            out = c if t == "depthwise" else b["out"]
            groups = c if t == "depthwise" else 1
            bn = b.get("bn", False)
            layers.append(nn.Conv2d(c, out, k, stride=s, padding=k // 2, groups=groups, bias=not bn))
            if bn:
                layers.append(nn.BatchNorm2d(out))
            if act:
                layers.append(act())
            c, h, w = out, (h + 2 * (k // 2) - k) // s + 1, (w + 2 * (k // 2) - k) // s + 1
        elif t in ("maxpool", "avgpool"):
            layers.append((nn.MaxPool2d if t == "maxpool" else nn.AvgPool2d)(k, stride=s))
            h, w = (h - k) // s + 1, (w - k) // s + 1
        elif t == "dropout":
            layers.append(nn.Dropout(b.get("p", 0.5)))
        elif t in ("gap", "flatten"):
            if t == "gap":
                layers.append(nn.AdaptiveAvgPool2d(1))
                h = w = 1
            layers.append(nn.Flatten())
            flat, features = True, c * h * w
        elif t == "fc":
            layers.append(nn.Linear(features, b["out"]))
            if act:
                layers.append(act())
            features = b["out"]
    if not flat:
        layers.append(nn.Flatten())
        features = c * h * w
    layers.append(nn.Linear(features, builder.get("classes", 10)))
    return nn.Sequential(*layers)


def bench_torch(cfg, threads, batch, steps, warmup):
    import torch
    import torch.nn as nn
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch_model(cfg["model"]["builder"], nn)
    o = cfg.get("optimizer", {})
    if o.get("type", "sgd") == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=o.get("lr", 1e-3), weight_decay=o.get("weight_decay", 0.01))
    else:
        opt = torch.optim.SGD(model.parameters(), lr=o.get("lr", 0.1), momentum=o.get("momentum", 0.9),
                              nesterov=o.get("nesterov", False), weight_decay=o.get("weight_decay", 0.0))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=o.get("label_smoothing", 0.0))
    c, h, w = cfg["model"]["builder"]["input"]
    xs = [torch.randn(batch, c, h, w) for _ in range(8)]
    ys = [torch.randint(0, cfg["model"]["builder"].get("classes", 10), (batch,)) for _ in range(8)]
    model.train()
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xs[i % 8]), ys[i % 8])
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), torch.__version__, sum(p.numel() for p in model.parameters())


def bench_xnn(xnn_lab, config, threads, batch, steps):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [xnn_lab, "train", config, "epochs=1", f"data.train_limit={steps * batch}", "data.test_limit=1000",
               f"data.batch_size={batch}", f"threads={threads}", "log_every=0", f"output.dir={tmp}/out",
               "output.onnx=false", "checkpoint.resume=false", "--json", "--no-record"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"xnn-lab train failed ({r.returncode}):\n{r.stderr}")
        out = json.loads(r.stdout)
        return out["train_step_ms_median"], out["parameters"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xnn-lab", required=True)
    ap.add_argument("--config", default=os.path.join(here, "..", "configs", "train", "fmnist_small_cnn.yaml"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with open(a.config) as f:
        cfg = yaml.safe_load(f)
    if "builder" not in cfg.get("model", {}):
        sys.exit("bench_train.py needs a config with model.builder (it rebuilds the model in PyTorch)")
    # Alternate the two so that machine noise hits both alike; report the best of the medians.
    torch_ms, xnn_ms = [], []
    for _ in range(2):
        x, xparams = bench_xnn(a.xnn_lab, a.config, a.threads, a.batch, a.steps)
        t, version, tparams = bench_torch(cfg, a.threads, a.batch, a.steps, a.warmup)
        xnn_ms.append(x)
        torch_ms.append(t)
    if xparams != tparams:
        sys.exit(f"parameter counts differ: xnn-lab {xparams}, PyTorch {tparams}: the models are not the same")
    x, t = min(xnn_ms), min(torch_ms)
    result = {"model": os.path.basename(a.config), "parameters": xparams, "batch": a.batch, "threads": a.threads,
              "xnn_lab_step_ms": x, "pytorch_step_ms": t, "pytorch": version, "ratio_xnn_over_pytorch": x / t}
    if a.json:
        print(json.dumps(result))
    else:
        print(f"{result['model']}: {xparams} parameters, batch {a.batch}, {a.threads} thread(s)")
        print(f"  xnn-lab  median step {x:8.2f} ms")
        print(f"  PyTorch  median step {t:8.2f} ms  (torch {version})")
        print(f"  ratio xnn-lab / PyTorch = {x / t:.2f}  (target <= 0.5)")


if __name__ == "__main__":
    main()
