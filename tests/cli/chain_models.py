#!/usr/bin/env python3
"""Tiny models and inputs for `xnn-lab chain` (tests/cli/chain_test.sh, configs/chain/README.md).

gate.onnx:       input [1,3,32,32] -> score [1,1], a sigmoid that follows the image's brightness
                 (bright images score near 1, dark ones near 0) plus a small learned-looking part.
classifier.onnx: input [1,3,32,32] -> logits [1,10]: conv+batchnorm+relu, maxpool, conv+relu,
                 global average pool, linear.
Inputs (.npy):   bright.npy and dark.npy [1,3,32,32], crops.npy [4,3,32,32] and crop_<i>.npy
                 (each crop alone, [1,3,32,32]).
Deterministic (seeded). Usage: chain_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 1)
        with torch.no_grad():
            self.fc.weight.mul_(0.1)

    def forward(self, x):
        feat = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return torch.sigmoid(self.fc(feat) + 6.0 * x.mean(dim=(1, 2, 3)).unsqueeze(1))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, 10)
        with torch.no_grad():
            self.bn1.running_mean.uniform_(-0.2, 0.2)
            self.bn1.running_var.uniform_(0.5, 1.5)
            self.bn1.weight.uniform_(0.5, 1.5)
            self.bn1.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.conv2(x)).mean(dim=(2, 3))
        return self.fc(x)


def export(model, name, out_name, out_dir):
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 3, 32, 32), os.path.join(out_dir, name), input_names=["input"],
                      output_names=[out_name], opset_version=13)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    export(Gate(), "gate.onnx", "score", out_dir)
    export(Classifier(), "classifier.onnx", "logits", out_dir)
    rng = np.random.default_rng(0)
    noise = lambda *shape: rng.normal(0.0, 0.3, size=shape).astype(np.float32)
    np.save(os.path.join(out_dir, "bright.npy"), 0.8 + noise(1, 3, 32, 32))
    np.save(os.path.join(out_dir, "dark.npy"), -0.8 + noise(1, 3, 32, 32))
    crops = noise(4, 3, 32, 32) * 3
    np.save(os.path.join(out_dir, "crops.npy"), crops)
    for i in range(crops.shape[0]):
        np.save(os.path.join(out_dir, "crop_%d.npy" % i), crops[i:i + 1])


if __name__ == "__main__":
    main()
