#!/usr/bin/python3
"""PyTorch reference for the training cross-check (tests/engine/train_torch_crosscheck_test.cpp).

    /usr/bin/python3 scripts/torch_grad_reference.py OUT_DIR

Builds a small fixed network that exercises the trainable op set (Conv with padding, stride,
groups and depthwise; BatchNorm in training mode; ReLU, ReLU6, LeakyReLU, HardSwish, SiLU;
MaxPool, AveragePool, global average pooling; a residual Add; Concat; Flatten; Linear), runs one
training-mode forward and backward on a seeded batch, and writes into OUT_DIR:

    model.onnx        the network with its initial weights (see below for BatchNorm)
    x.npy, labels.npy the batch (float32 [8,1,12,12], int64 [8])
    loss.npy          the mean cross-entropy (float32 scalar)
    grad_<init>.npy   d(loss)/d(initialiser) for every trainable ONNX initialiser
    grads.txt         the initialiser names, one per line

Exported with TrainingMode.TRAINING so that BatchNormalization is not folded into the
preceding Conv (the eval-mode exporter fuses them); the extra running-statistics outputs that
mode adds to each BatchNormalization are then removed, leaving the standard one-output node.
Exit status 77 when PyTorch is not installed (the test then reports a skip).
"""
import os
import sys

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn as nn
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: {e}")
    sys.exit(77)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.dw = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU6())
        self.pw = nn.Conv2d(8, 8, 1)
        self.pool = nn.MaxPool2d(2)
        self.grouped = nn.Sequential(nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), nn.LeakyReLU(0.1))
        self.avg = nn.AvgPool2d(3, stride=1, padding=1)
        self.branch = nn.Sequential(nn.Conv2d(8, 4, 1), nn.Hardswish())
        self.head = nn.Sequential(nn.Conv2d(12, 16, 3, padding=1), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(16, 10))

    def forward(self, x):
        x = self.stem(x)
        x = x + self.pw(self.dw(x))          # residual Add
        x = self.grouped(self.pool(x))
        x = torch.cat([self.avg(x), self.branch(x)], dim=1)
        return self.head(x)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    net = Net()
    # Non-trivial affine BatchNorm parameters, so their gradients are checked meaningfully.
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    x = torch.randn(8, 1, 12, 12)
    labels = torch.arange(8) % 10
    net.train()
    model_path = os.path.join(out, "model.onnx")
    torch.onnx.export(net, x, model_path, opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, input_names=["x"], output_names=["logits"])
    # The export traced a forward pass in training mode, which updated the running statistics;
    # the weights in the file are what the C++ side starts from, so take gradients from the same
    # state (running statistics do not affect a training-mode forward anyway).
    model = onnx.load(model_path)
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            del node.output[1:]
            for a in list(node.attribute):
                if a.name == "training_mode":
                    node.attribute.remove(a)
    onnx.checker.check_model(model)
    onnx.save(model, model_path)

    net.zero_grad()
    logits = net(x)
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()

    params = dict(net.named_parameters())
    names = []
    for init in model.graph.initializer:
        if init.name in params and params[init.name].grad is not None:
            np.save(os.path.join(out, f"grad_{init.name}.npy"), params[init.name].grad.numpy().astype(np.float32))
            names.append(init.name)
    missing = set(params) - set(names)
    if missing:
        print(f"error: parameters not found as ONNX initialisers: {sorted(missing)}", file=sys.stderr)
        sys.exit(1)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "labels.npy"), labels.numpy().astype(np.int64))
    np.save(os.path.join(out, "loss.npy"), np.array(loss.item(), dtype=np.float32))
    with open(os.path.join(out, "grads.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    print(f"loss {loss.item():.6f}, {len(names)} parameter gradients in {out}")


if __name__ == "__main__":
    main()
