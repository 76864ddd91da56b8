#!/usr/bin/python3
"""Export seeded, randomly initialised torchvision models to ONNX fixtures.

Run with Debian's interpreter (it carries python3-torch / python3-torchvision):

    /usr/bin/python3 scripts/export_torchvision.py --out DIR \
        [--models m1,m2,...] [--opset 13] [--size 224] [--seed 0] [--calibrate-bn N] [--force]

For every model NAME this writes into DIR:

    NAME.onnx         torch.onnx.export, fixed 1x3xSIZExSIZE input named "input",
                      output named "output", do_constant_folding=True
    NAME.input.npy    float32 input, standard normal, drawn from numpy with --seed
    NAME.output.npy   PyTorch eager output (eval mode, torch.no_grad()) as float32

and DIR/manifest.json, a list of
{name, onnx, input, output, input_shape, output_shape, opset, seed,
bn_calibration} (file names relative to DIR; bn_calibration is --calibrate-bn).

Weights are random but reproducible: torch.manual_seed(seed) right before each
model is constructed, with weights=None, so nothing is ever downloaded.
Caveat on random weights: with torchvision's default init and untouched BatchNorm
running stats (mean 0, var 1), activations shrink or blow up through depth. With
--calibrate-bn 0 mobilenet_v2/v3_small and efficientnet_b0 give
outputs of ~1e-9..1e-14, and shufflenet_v2/googlenet outputs are essentially the
classifier bias (the input changes them by <1e-4 relative), so they check little of the
backbone. --calibrate-bn 8 (the default) recomputes BN stats from a seeded batch so every layer
is well scaled and the output depends on the input; still fully deterministic.

A model whose three files already exist and are newer than this script is
skipped (unless --force), so reruns are cheap; the previous manifest.json must
also record the same opset, seed and size for it. Exits non-zero if any model fails.
"""

import argparse
import json
import os
import sys
import time

DEFAULT_MODELS = [
    "mobilenet_v2",
    "mobilenet_v3_small",
    "resnet18",
    "shufflenet_v2_x1_0",
    "squeezenet1_1",
    "efficientnet_b0",
    "regnet_x_400mf",
    "googlenet",
]

# Extra constructor kwargs so no model tries to download anything and the
# exported graph has a single output.
MODEL_KWARGS = {
    "googlenet": {"aux_logits": False, "init_weights": True, "transform_input": False},
    "inception_v3": {"aux_logits": False, "init_weights": True, "transform_input": False},
}

NUM_THREADS = 2


def _die(msg, code=2):
    print("export_torchvision: error: " + msg, file=sys.stderr)
    sys.exit(code)


_missing = []
for _mod in ("numpy", "torch", "torchvision", "onnx"):
    try:
        __import__(_mod)
    except Exception as _e:  # ImportError, or a broken install raising something else
        _missing.append("%s (%s: %s)" % (_mod, type(_e).__name__, _e))
if _missing:
    _die("cannot import %s with interpreter %s.\n"
         "  Install python3-torch python3-torchvision (and python3-numpy python3-onnx) "
         "via scripts/install-deps.sh,\n"
         "  and run this script with Debian's interpreter: /usr/bin/python3 %s ..."
         % ("; ".join(_missing), sys.executable, os.path.relpath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Export seeded random-weight torchvision models to ONNX fixtures.")
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--models", default=",".join(DEFAULT_MODELS),
                   help="comma-separated torchvision model names (default: %(default)s)")
    p.add_argument("--opset", type=int, default=13, help="ONNX opset (default: %(default)s)")
    p.add_argument("--size", type=int, default=224,
                   help="input height/width (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="RNG seed (default: %(default)s)")
    p.add_argument("--calibrate-bn", type=int, default=8, metavar="N",
                   help="before eval(), recompute every BatchNorm's running stats from one "
                        "seeded batch of N random inputs (0 = off, the default). With "
                        "torchvision's default init several models otherwise produce "
                        "near-zero or input-independent outputs; see module docstring")
    p.add_argument("--force", action="store_true",
                   help="re-export even if up-to-date files exist")
    args = p.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not args.models:
        p.error("--models is empty")
    if args.calibrate_bn < 0 or args.calibrate_bn == 1:
        p.error("--calibrate-bn must be 0 (off) or >= 2")
    if args.size <= 0:
        p.error("--size must be positive")
    return args


def paths_for(out_dir, name):
    return {
        "onnx": os.path.join(out_dir, name + ".onnx"),
        "input": os.path.join(out_dir, name + ".input.npy"),
        "output": os.path.join(out_dir, name + ".output.npy"),
    }


def load_previous_manifest(out_dir):
    """Previous manifest entries as an ordered {name: entry} dict ({} if none/invalid)."""
    try:
        with open(os.path.join(out_dir, "manifest.json")) as f:
            return {e["name"]: e for e in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def up_to_date(paths, script_mtime, prev_entry, args):
    """True if all files exist, are newer than this script, and were made with
    the same opset/seed/size according to the previous manifest."""
    if not prev_entry:
        return False
    if (prev_entry.get("opset") != args.opset or prev_entry.get("seed") != args.seed
            or prev_entry.get("input_shape") != [1, 3, args.size, args.size]
            or prev_entry.get("bn_calibration", 0) != args.calibrate_bn):
        return False
    for p in paths.values():
        try:
            if os.stat(p).st_mtime <= script_mtime:
                return False
        except FileNotFoundError:
            return False
    return True


def calibrate_bn(model, batch, size, seed):
    """Reset every BatchNorm's running stats and recompute them (cumulative average)
    from one forward pass in train mode over `batch` seeded random-normal images."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    saved = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative moving average: exact stats of this batch
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, 3, size, size, generator=gen)
    model.train()
    with torch.no_grad():
        model(x)
    for bn, m in zip(bns, saved):
        bn.momentum = m


def build_model(name, seed, calibrate=0, size=224):
    try:
        ctor = torchvision.models.get_model_builder(name)
    except (AttributeError, ValueError):
        ctor = getattr(torchvision.models, name, None)
        if ctor is None or not callable(ctor):
            raise ValueError("unknown torchvision model %r" % name)
    kwargs = {"weights": None}
    kwargs.update(MODEL_KWARGS.get(name, {}))
    torch.manual_seed(seed)
    model = ctor(**kwargs)
    if calibrate:
        calibrate_bn(model, calibrate, size, seed)
    model.eval()
    return model


def _save_npy_atomic(path, arr):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, arr)
    os.replace(tmp, path)


def export_one(name, args, paths):
    model = build_model(name, args.seed, args.calibrate_bn, args.size)

    rng = np.random.RandomState(args.seed)
    x_np = rng.standard_normal((1, 3, args.size, args.size)).astype(np.float32)
    x = torch.from_numpy(x_np)

    with torch.no_grad():
        y = model(x)
    if not isinstance(y, torch.Tensor):
        raise TypeError("model returned %s, expected a single tensor" % type(y).__name__)
    y_np = y.detach().cpu().numpy().astype(np.float32)

    tmp_onnx = paths["onnx"] + ".tmp"
    with torch.no_grad():
        torch.onnx.export(
            model, x, tmp_onnx,
            export_params=True,
            opset_version=args.opset,
            input_names=["input"],
            output_names=["output"],
            do_constant_folding=True,
        )
    onnx.checker.check_model(onnx.load(tmp_onnx))
    os.replace(tmp_onnx, paths["onnx"])

    _save_npy_atomic(paths["input"], x_np)
    # The output is written last: its presence marks a complete set of files.
    _save_npy_atomic(paths["output"], y_np)
    return list(x_np.shape), list(y_np.shape)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(NUM_THREADS)
    os.makedirs(args.out, exist_ok=True)
    script_mtime = os.stat(os.path.abspath(__file__)).st_mtime

    previous = load_previous_manifest(args.out)
    # Entries from earlier runs for models not requested now are kept (if their
    # files are still there), so exporting a subset doesn't shrink the manifest.
    entries = {n: e for n, e in previous.items()
               if all(e.get(k) and os.path.exists(os.path.join(args.out, e[k]))
                      for k in ("onnx", "input", "output"))}
    failures = []
    for name in args.models:
        paths = paths_for(args.out, name)
        t0 = time.monotonic()
        try:
            if not args.force and up_to_date(paths, script_mtime, previous.get(name), args):
                # Header-only reads (mmap) to recover the shapes for the manifest.
                in_shape = list(np.load(paths["input"], mmap_mode="r").shape)
                out_shape = list(np.load(paths["output"], mmap_mode="r").shape)
                status = "skipped (up to date)"
            else:
                in_shape, out_shape = export_one(name, args, paths)
                status = "exported"
        except Exception as e:  # report and carry on with the other models
            dt = time.monotonic() - t0
            print("%-22s FAILED after %.1fs: %s: %s" % (name, dt, type(e).__name__, e),
                  flush=True)
            failures.append(name)
            entries.pop(name, None)
            continue
        dt = time.monotonic() - t0
        size = os.path.getsize(paths["onnx"])
        print("%-22s %7.2fs  onnx %10d bytes (%6.2f MiB)  output %-14s %s"
              % (name, dt, size, size / 2.0**20, "x".join(map(str, out_shape)), status),
              flush=True)
        entries[name] = {
            "name": name,
            "onnx": os.path.basename(paths["onnx"]),
            "input": os.path.basename(paths["input"]),
            "output": os.path.basename(paths["output"]),
            "input_shape": in_shape,
            "output_shape": out_shape,
            "opset": args.opset,
            "seed": args.seed,
            "bn_calibration": args.calibrate_bn,
        }

    manifest_path = os.path.join(args.out, "manifest.json")
    tmp = manifest_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(list(entries.values()), f, indent=2)
        f.write("\n")
    os.replace(tmp, manifest_path)

    if failures:
        print("export_torchvision: %d model(s) failed: %s" % (len(failures), ", ".join(failures)),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
