#!/usr/bin/python3
"""Trains the quickstart Fashion-MNIST CNN and exports it as a small ONNX model.

Run with Debian's Python (torch 1.13, numpy):

    /usr/bin/python3 scripts/train_fmnist_quickstart.py [--data-dir DIR] [--out-dir configs/models]

Reads the Fashion-MNIST IDX .gz files directly (gzip + numpy; nothing is downloaded), trains a
small CNN (~24k parameters, BatchNorm after every conv so that graph optimisation has something
to fold), prints the test accuracy and writes:

  configs/models/fmnist_cnn.onnx  opset 13; input "input" [batch,1,28,28] f32 (symbolic batch),
                                  output "logits" [batch,10]
  configs/models/fmnist_cnn.json  accuracy, parameter count, preprocessing, seed, epochs, versions

Preprocessing (what the model expects; the same for `xnn-lab eval`):
    x = (pixel * (1/255) - 0.2860) / 0.3530     pixel in [0, 255], NCHW, one grey channel
i.e. `xnn-lab eval configs/models/fmnist_cnn.onnx --dataset fashion-mnist
       --scale 0.00392156862745098 --mean 0.2860 --std 0.3530`
(0.2860 / 0.3530 are the mean / standard deviation of the training images scaled to [0, 1].)
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE = 1.0 / 255.0
MEAN = 0.2860
STD = 0.3530
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def open_maybe_gz(path):
    if os.path.exists(path):
        with open(path, "rb") as f:
            head = f.read(2)
        return gzip.open(path, "rb") if head == b"\x1f\x8b" else open(path, "rb")
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rb")
    raise FileNotFoundError(f"{path}(.gz) not found")


def read_idx(path, magic, ndim):
    with open_maybe_gz(path) as f:
        data = f.read()
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated header")
    m = struct.unpack(">I", data[:4])[0]
    if m != magic:
        raise ValueError(f"{path}: magic 0x{m:08x}, expected 0x{magic:08x}")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {body.size} bytes of data, expected {int(np.prod(dims))}")
    return body.reshape(dims)


def load_split(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"), 0x00000803, 3)
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"), 0x00000801, 1)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{split}: {images.shape[0]} images but {labels.shape[0]} labels")
    return images, labels


def preprocess(images):
    x = images.astype(np.float32) * np.float32(SCALE)
    x = (x - np.float32(MEAN)) / np.float32(STD)
    return torch.from_numpy(x).unsqueeze(1)  # N x 1 x 28 x 28


class QuickstartCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(64)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)  # 16 x 14 x 14
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)  # 32 x 7 x 7
        x = F.relu(self.bn3(self.conv3(x)))                   # 64 x 7 x 7
        x = F.adaptive_avg_pool2d(x, 1)                       # 64 x 1 x 1 (GlobalAveragePool)
        x = torch.flatten(x, 1)
        return self.fc(x)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return correct / x.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "models"))
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-state", help="also save the trained state_dict (torch.save) here")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)

    t0 = time.time()
    c0 = time.process_time()
    train_images, train_labels = load_split(args.data_dir, "train")
    test_images, test_labels = load_split(args.data_dir, "test")
    x_train, y_train = preprocess(train_images), torch.from_numpy(train_labels.astype(np.int64))
    x_test, y_test = preprocess(test_images), torch.from_numpy(test_labels.astype(np.int64))
    print(f"data: train {tuple(x_train.shape)}, test {tuple(x_test.shape)}", flush=True)

    model = QuickstartCNN()
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params} parameters", flush=True)

    steps_per_epoch = (x_train.shape[0] + args.batch_size - 1) // args.batch_size
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr * 10, epochs=args.epochs,
                                                steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(x_train.shape[0], generator=gen)
        total_loss = 0.0
        te = time.time()
        for i in range(steps_per_epoch):
            idx = perm[i * args.batch_size:(i + 1) * args.batch_size]
            xb, yb = x_train[idx], y_train[idx]
            # Light augmentation: random horizontal flip (Fashion-MNIST items are left/right symmetric).
            flip = torch.rand(xb.shape[0], generator=gen) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total_loss += loss.item() * xb.shape[0]
        acc = evaluate(model, x_test, y_test)
        print(f"epoch {epoch + 1}/{args.epochs}: loss {total_loss / x_train.shape[0]:.4f}, "
              f"test accuracy {acc * 100:.2f}% ({time.time() - te:.0f}s)", flush=True)

    model.eval()
    test_acc = evaluate(model, x_test, y_test)
    # Top-5 too, for comparison with `xnn-lab eval`.
    with torch.no_grad():
        logits = torch.cat([model(x_test[i:i + 1000]) for i in range(0, x_test.shape[0], 1000)])
    top5 = (logits.topk(5, 1).indices == y_test[:, None]).any(1).float().mean().item()
    train_seconds = time.time() - t0
    cpu_seconds = time.process_time() - c0
    if args.save_state:
        torch.save(model.state_dict(), args.save_state)
    print(f"test accuracy: top1 {test_acc * 100:.2f}%  top5 {top5 * 100:.2f}%  ({train_seconds:.0f}s total)")

    os.makedirs(args.out_dir, exist_ok=True)
    onnx_path = os.path.join(args.out_dir, "fmnist_cnn.onnx")
    json_path = os.path.join(args.out_dir, "fmnist_cnn.json")
    dummy = torch.zeros(1, 1, 28, 28)
    # TrainingMode.PRESERVE on a model in eval mode keeps BatchNormalization as its own
    # (inference-form) node: the default EVAL export would fold it into the convolutions, and
    # folding is our graph optimiser's job, measured separately.
    torch.onnx.export(model, dummy, onnx_path, opset_version=13, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    try:
        import onnx
        ops = [n.op_type for n in onnx.load(onnx_path).graph.node]
        if ops.count("BatchNormalization") != 3:
            sys.exit(f"{onnx_path}: expected 3 BatchNormalization nodes, got ops {ops}")
    except ImportError:
        pass
    size = os.path.getsize(onnx_path)
    if size >= 1 << 20:
        sys.exit(f"{onnx_path} is {size} bytes; expected < 1 MB")

    meta = {
        "model": "fmnist_cnn.onnx",
        "dataset": "fashion-mnist",
        "architecture": "conv3x3(1->16)-BN-ReLU-maxpool2, conv3x3(16->32)-BN-ReLU-maxpool2, "
                        "conv3x3(32->64)-BN-ReLU-GAP, fc(64->10)",
        "parameters": params,
        "input": {"name": "input", "shape": ["batch", 1, 28, 28], "dtype": "float32", "layout": "NCHW"},
        "output": {"name": "logits", "shape": ["batch", 10], "dtype": "float32"},
        "classes": CLASSES,
        "preprocessing": {"scale": SCALE, "mean": [MEAN], "std": [STD], "layout": "NCHW",
                          "formula": "x = (pixel * scale - mean) / std"},
        "test_accuracy_top1": round(test_acc, 6),
        "test_accuracy_top5": round(top5, 6),
        "test_samples": int(x_test.shape[0]),
        "seed": args.seed,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "optimizer": f"SGD nesterov momentum 0.9, weight decay 5e-4, OneCycle max lr {args.lr * 10}",
        "augmentation": "random horizontal flip",
        "opset": 13,
        "onnx_bytes": size,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(cpu_seconds, 1),
        "threads": args.threads,
        "command": "/usr/bin/python3 scripts/train_fmnist_quickstart.py",
    }
    with open(json_path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"wrote {onnx_path} ({size} bytes) and {json_path}")


if __name__ == "__main__":
    main()
