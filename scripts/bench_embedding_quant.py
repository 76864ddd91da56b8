#!/usr/bin/python3
"""Weight-only quantisation of embedding tables (row-wise and k-means codebook), measured on a
downstream metric.

A synthetic recommendation task (no download needed): users and items have hidden 8-d taste
vectors; a user clicks an item with probability sigmoid(5 u . v - 0.5). A two-tower model
(user and item embedding tables of width 64, an MLP on their product) is trained with Debian's
PyTorch, exported to ONNX (the tables become Gather ops), and quantised with
`xnn-lab quantize --weight-only 8|4` (row-wise scale/offset) and `--weight-only 4|2 --codebook`
(k-means indices into 2^bits shared centroids per table). Every variant runs on the same held-out pairs through
`xnn-lab infer`; the script prints file size, table bytes and ROC AUC / log loss per variant.

Usage: scripts/bench_embedding_quant.py [--xnn-lab build/harness/cli/xnn-lab] [--work DIR] [--seed S]
Runs in about a minute on 2 cores (training dominates).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

USERS, ITEMS, DIM, HIDDEN_DIM = 4000, 1000, 64, 8


def make_data(rng, n):
    users = rng.integers(0, USERS, n)
    items = rng.integers(0, ITEMS, n)
    return users, items


class TwoTower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = torch.nn.Embedding(USERS, DIM)
        self.item = torch.nn.Embedding(ITEMS, DIM)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(DIM, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        # Small initial vectors: with PyTorch's N(0, 1) default the towers memorise the pairs.
        torch.nn.init.normal_(self.user.weight, std=0.1)
        torch.nn.init.normal_(self.item.weight, std=0.1)

    def forward(self, user, item):
        return self.mlp(self.user(user) * self.item(item)).squeeze(-1)


def roc_auc(labels, scores):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def log_loss(labels, logits):
    p = 1 / (1 + np.exp(-logits))
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xnn-lab", default="build/harness/cli/xnn-lab")
    ap.add_argument("--work", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-pairs", type=int, default=400000)
    ap.add_argument("--test-pairs", type=int, default=50000)
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="xnn-embq-")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(a.seed)
    torch.set_num_threads(2)
    rng = np.random.default_rng(a.seed)
    taste_u = rng.normal(0, 1 / np.sqrt(HIDDEN_DIM) * 1.2, (USERS, HIDDEN_DIM))
    taste_i = rng.normal(0, 1 / np.sqrt(HIDDEN_DIM) * 1.2, (ITEMS, HIDDEN_DIM))

    def labelled(n):
        u, i = make_data(rng, n)
        p = 1 / (1 + np.exp(-(np.sum(taste_u[u] * taste_i[i], 1) * 5 - 0.5)))
        return u, i, (rng.random(n) < p).astype(np.float32)

    tu, ti, ty = labelled(a.train_pairs)
    vu, vi, vy = labelled(a.test_pairs)
    model = TwoTower()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    batch = 2048
    for epoch in range(a.epochs):
        perm = rng.permutation(a.train_pairs)
        for s in range(0, a.train_pairs, batch):
            idx = perm[s:s + batch]
            opt.zero_grad()
            loss = loss_fn(model(torch.from_numpy(tu[idx]), torch.from_numpy(ti[idx])), torch.from_numpy(ty[idx]))
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}: train loss {loss.item():.4f}", file=sys.stderr)
    model.eval()
    onnx_path = os.path.join(work, "two_tower.onnx")
    torch.onnx.export(model, (torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)), onnx_path,
                      input_names=["user", "item"], output_names=["logit"], opset_version=13,
                      dynamic_axes={"user": {0: "n"}, "item": {0: "n"}, "logit": {0: "n"}})
    with torch.no_grad():
        torch_logits = model(torch.from_numpy(vu), torch.from_numpy(vi)).numpy()
    np.save(os.path.join(work, "user.npy"), vu.astype(np.int64))
    np.save(os.path.join(work, "item.npy"), vi.astype(np.int64))

    table_fp32 = (USERS + ITEMS) * DIM * 4
    variants = [("fp32 (onnx)", onnx_path, table_fp32)]
    for bits, codebook in ((8, False), (4, False), (4, True), (2, True)):
        out = os.path.join(work, f"two_tower_{'cb' if codebook else 'w'}{bits}.xnn")
        r = subprocess.run([a.xnn_lab, "quantize", onnx_path, "-o", out, "--weight-only", str(bits),
                            "--weight-only-layers", "embeddings"] + (["--codebook"] if codebook else []),
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(r.stderr)
        print(r.stdout, end="")
        if codebook:  # packed indices + a float32 centroid table per embedding table
            table = (USERS + ITEMS) * DIM * bits // 8 + 2 * (1 << bits) * 4
        else:  # codes + float16 scale and offset per row
            table = (USERS + ITEMS) * (DIM * bits // 8 + 4)
        variants.append((f"int{bits} {'codebook' if codebook else 'row-wise'} tables", out, table))
    print(f"\n{'variant':<26} {'file bytes':>11} {'table bytes':>12} {'ratio':>6} {'AUC':>7} {'log loss':>9} {'max|dlogit|':>11}")
    print(f"{'PyTorch fp32':<26} {'':>11} {table_fp32:>12} {'1.00':>6} {roc_auc(vy, torch_logits):7.4f} "
          f"{log_loss(vy, torch_logits):9.4f} {0.0:11.4f}")
    for name, path, table in variants:
        out_dir = os.path.join(work, "out_" + os.path.basename(path))
        r = subprocess.run([a.xnn_lab, "infer", path, "-i", "user=" + os.path.join(work, "user.npy"),
                            "-i", "item=" + os.path.join(work, "item.npy"), "-d", out_dir], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(r.stderr)
        logits = np.load(os.path.join(out_dir, "logit.npy"))
        print(f"{name:<26} {os.path.getsize(path):>11} {table:>12} {table_fp32 / table:6.2f} {roc_auc(vy, logits):7.4f} "
              f"{log_loss(vy, logits):9.4f} {np.max(np.abs(logits - torch_logits)):11.4f}")


if __name__ == "__main__":
    main()
