#!/usr/bin/python3
"""Train torchvision architectures on Fashion-MNIST at 1x3x224x224 and export them as ONNX: fixtures
with *trained* weights for the INT8 benchmarks (scripts/bench_int8.py, scripts/bench_int8_vs_ort.py).

    /usr/bin/python3 scripts/train_torchvision_fmnist.py --out DIR [--models mobilenet_v2,resnet18]
        [--steps 300] [--batch 32] [--train-size 112] [--calib 100] [--eval 200] [--seed 0] [--threads 2]

Why: the seeded random-weight fixtures (scripts/export_torchvision.py) are fine for checking that
two engines compute the same function, but a randomly initialised MobileNetV2 whose BatchNorm
statistics were recomputed is chaotic: input noise 40 dB below the signal already moves its output
to cosine 0.991 of the clean one, and 8-bit-step noise on every layer to 0.966 (measured with
Debian's PyTorch, see compress/quantize/README.md). No 8-bit scheme can keep such a network at
cosine >= 0.99, and a trained network is what users quantise.

Recipe (Debian's PyTorch 1.13, CPU): torchvision's architecture with num_classes=10 and its default
init; Fashion-MNIST images (28x28 grey) resized bilinearly, replicated to 3 channels, normalised
with the dataset's mean/std (0.2860, 0.3530); SGD (momentum 0.9, Nesterov, weight decay 5e-5),
one-cycle LR peaking at 0.05, label smoothing 0.1, random horizontal flips; --steps steps of
--batch images at --train-size pixels (smaller than 224 to fit a few minutes on 2 cores; the
networks are fully convolutional with global pooling). Then the BatchNorm statistics are recomputed
at 224 pixels from 256 training images (cumulative average, like export_torchvision.py does), and
the model is exported at 1x3x224x224, opset 13.

Writes, per model NAME, into DIR:
  NAME_fmnist.onnx          the trained model, input "input" [1,3,224,224], output "output" [1,10]
  NAME_fmnist.calib.npy     the first --calib training images, preprocessed [N,3,224,224] float32
  NAME_fmnist.eval.npy      the first --eval test images, preprocessed
  NAME_fmnist.labels.npy    their labels (int64)
and DIR/trained_manifest.json: per model the files, the recipe and PyTorch's top-1 on the first
--eval test images and on the whole test set.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

FMNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
SIZE = 224


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(data[3])]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * data[3]).reshape(dims)


def load(split):
    prefix = "train" if split == "train" else "t10k"
    images = idx(os.path.join(FMNIST, prefix + "-images-idx3-ubyte.gz"))
    labels = idx(os.path.join(FMNIST, prefix + "-labels-idx1-ubyte.gz")).astype(np.int64)
    return images, labels


def preprocess(images_u8, size):
    """uint8 [N,28,28] -> float32 [N,3,size,size]: resized, replicated, normalised."""
    x = torch.from_numpy(images_u8.astype(np.float32) / 255.0).unsqueeze(1)
    if size != x.shape[-1]:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = (x - MEAN) / STD
    return x.expand(-1, 3, -1, -1).contiguous()


def recalibrate_bn(model, images_u8, size):
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the batches below
    model.train()
    with torch.no_grad():
        for i in range(0, len(images_u8), 32):
            model(preprocess(images_u8[i:i + 32], size))
    model.eval()


def top1(model, images_u8, labels, size, batch=64):
    correct = 0
    with torch.no_grad():
        for i in range(0, len(images_u8), batch):
            logits = model(preprocess(images_u8[i:i + batch], size))
            correct += int((logits.argmax(1).numpy() == labels[i:i + batch]).sum())
    return correct / len(images_u8)


def train_one(name, args, train, test):
    torch.manual_seed(args.seed)
    model = torchvision.models.get_model_builder(name)(weights=None, num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-5)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=args.steps, pct_start=0.25)
    rng = np.random.default_rng(args.seed)
    images, labels = train
    model.train()
    t0 = time.monotonic()
    for step in range(args.steps):
        pick = rng.integers(0, len(images), args.batch)
        x = preprocess(images[pick], args.train_size)
        flip = torch.from_numpy(rng.random(args.batch) < 0.5)
        x[flip] = x[flip].flip(-1)
        loss = F.cross_entropy(model(x), torch.from_numpy(labels[pick]), label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if (step + 1) % 50 == 0 or step + 1 == args.steps:
            print("  %s step %d/%d loss %.3f (%.0f s)" % (name, step + 1, args.steps, float(loss),
                                                        time.monotonic() - t0), flush=True)
    train_seconds = time.monotonic() - t0
    # 256 training images the calibration files do not hold.
    recalibrate_bn(model, images[-256:], SIZE)
    return model, train_seconds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="mobilenet_v2,resnet18")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--train-size", type=int, default=112)
    p.add_argument("--calib", type=int, default=100, help="calibration images written (training split)")
    p.add_argument("--eval", type=int, default=200, help="evaluation images written (test split)")
    p.add_argument("--full-test", action="store_true", help="also PyTorch's top-1 on all 10,000 test images")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    if args.steps < 1 or args.batch < 1 or args.calib < 1 or args.eval < 1:
        p.error("--steps, --batch, --calib and --eval must be positive")
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    train, test = load("train"), load("test")
    manifest_path = os.path.join(args.out, "trained_manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    for name in [m for m in args.models.split(",") if m]:
        tag = name + "_fmnist"
        model, seconds = train_one(name, args, train, test)
        eval_x, eval_y = test[0][:args.eval], test[1][:args.eval]
        entry = {
            "onnx": tag + ".onnx", "calib": tag + ".calib.npy", "eval": tag + ".eval.npy",
            "labels": tag + ".labels.npy", "input_shape": [1, 3, SIZE, SIZE],
            "recipe": {"steps": args.steps, "batch": args.batch, "train_size": args.train_size, "seed": args.seed,
                       "threads": args.threads, "train_seconds": round(seconds, 1)},
            "torch_top1_eval": top1(model, eval_x, eval_y, SIZE),
        }
        if args.full_test:
            entry["torch_top1_test"] = top1(model, test[0], test[1], SIZE)
        np.save(os.path.join(args.out, entry["calib"]), preprocess(train[0][:args.calib], SIZE).numpy())
        np.save(os.path.join(args.out, entry["eval"]), preprocess(eval_x, SIZE).numpy())
        np.save(os.path.join(args.out, entry["labels"]), eval_y)
        tmp = os.path.join(args.out, entry["onnx"] + ".tmp")
        with torch.no_grad():
            torch.onnx.export(model, torch.zeros(1, 3, SIZE, SIZE), tmp, opset_version=13,
                              input_names=["input"], output_names=["output"], do_constant_folding=True)
        os.replace(tmp, os.path.join(args.out, entry["onnx"]))
        manifest[tag] = entry
        print("%s: trained %d steps in %.0f s, PyTorch top-1 %.4f on the first %d test images%s" % (
            tag, args.steps, seconds, entry["torch_top1_eval"], args.eval,
            ", %.4f on all" % entry["torch_top1_test"] if args.full_test else ""), flush=True)
        with open(manifest_path + ".tmp", "w") as f:
            json.dump(manifest, f, indent=2)
        os.replace(manifest_path + ".tmp", manifest_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
