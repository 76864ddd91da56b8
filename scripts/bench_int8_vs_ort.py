#!/usr/bin/env python3
"""Our INT8 against ONNX Runtime's static INT8 quantisation, side by side in one run.

    python3 -m venv /tmp/ort-venv && /tmp/ort-venv/bin/pip install onnxruntime onnx numpy   # once
    /tmp/ort-venv/bin/python scripts/bench_int8_vs_ort.py --xnn-lab build/harness/cli/xnn-lab \\
        [--models resnet18,mobilenet_v2] [--fmnist-model configs/models/fmnist_cnn.onnx] \\
        [--trained DIR] [--threads 1] [--rounds 5] [--runs 15] [--calib-samples 8] [--method minmax]

A benchmark, not a test (ONNX Runtime is not a project dependency). Issue 8's target: with the
same calibration data, our accuracy at least as good as ONNX Runtime's and our INT8 latency lower.

Both quantisers get the same FP32 model and the same calibration tensors, and use the same
scheme: per-output-channel symmetric int8 weights, asymmetric uint8 activations, min-max ranges
(`--method` picks ours; ONNX Runtime's calibrate_method follows: minmax -> MinMax, percentile ->
Percentile, kl -> Entropy; --reduce-range gives both 7-bit weights in [-64, 64], ONNX Runtime's
reduce_range=True). ONNX Runtime's model is QDQ (its recommended format; its CPU provider
fuses the QDQ groups into its int8 kernels), after its own quant_pre_process.

  * torchvision models (DIR/NAME.onnx from scripts/export_torchvision.py: seeded random weights,
    calibrated BN statistics; 1x3x224x224): --calib-samples seeded standard-normal images (the
    fixtures' input distribution); agreement = cosine similarity of each INT8 output to its own
    engine's FP32 output over --eval-samples inputs, and top-1 agreement.
  * the Fashion-MNIST CNN: the first 100 training images calibrate both; top-1 on the 10,000 test
    images (ours with `xnn-lab eval`, ONNX Runtime's in this process).
  * --trained DIR: the trained torchvision models of scripts/train_torchvision_fmnist.py (DIR/
    trained_manifest.json; Fashion-MNIST at 1x3x224x224): their first --calib-samples calibration
    images calibrate both; cosine to each engine's FP32 output and top-1 against the labels on the
    first --eval-samples evaluation images. (A random-weight MobileNetV2 is chaotic: any 8-bit
    scheme leaves it near cosine 0.975, ONNX Runtime's too; see compress/quantize/README.md.)

Calibration draws (--calib-draws K): the accuracy is measured again with K - 1 more calibration
sets of the same size and source, drawn with seeds 1..K-1, and "at least as good" compares the
means over the K sets (a single set of 100 images moves Fashion-MNIST top-1 by about as much as
the two quantisers differ). For the Fashion-MNIST CNN the script also reports fidelity: how often
each INT8 model's top-1 matches its own FP32 model's on the test split, and the mean cosine of
their logits.

Latency: --rounds rounds; in each the four models (ours FP32/INT8 via `xnn-lab bench --json`, ONNX
Runtime FP32/INT8 in-process with intra_op_num_threads = --threads) run in a rotating order, so
drift hits all alike; reported per model: the median of the per-round medians, and the ratio of
our INT8 to ONNX Runtime's INT8 as the median of the per-round ratios.
"""
import argparse
import glob
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FMNIST = "/usr/share/datasets/fashion-mnist"
FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(data[3])]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * data[3]).reshape(dims)


def fmnist(split):
    prefix = "train" if split == "train" else "t10k"
    images = idx(glob.glob(os.path.join(FMNIST, prefix + "-images*"))[0])
    labels = idx(glob.glob(os.path.join(FMNIST, prefix + "-labels*"))[0])
    return ((images.astype(np.float32) / 255 - FMNIST_MEAN) / FMNIST_STD)[:, None], labels


def normal_images(seed, n):
    return np.random.default_rng(seed).standard_normal((n, 3, 224, 224), dtype=np.float32)


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


class OrtModel:
    def __init__(self, ort, path, threads):
        opt = ort.SessionOptions()
        opt.intra_op_num_threads = threads
        opt.inter_op_num_threads = 1
        opt.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opt.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(path, opt, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def run(self, x):
        return self.session.run(None, {self.input: x})[0]

    def median_ms(self, x, warmup, runs):
        for _ in range(warmup):
            self.run(x)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            self.run(x)
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)


def ort_quantize(fp32, out, calib, method, work, reduce_range=False):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self, name):
            self.items = iter([{name: calib[i:i + 1]} for i in range(calib.shape[0])])

        def get_next(self):
            return next(self.items, None)

    import onnx
    name = onnx.load(fp32, load_external_data=False).graph.input[0].name
    pre = os.path.join(work, "ort_pre.onnx")
    quant_pre_process(fp32, pre, skip_symbolic_shape=True)
    methods = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
               "kl": CalibrationMethod.Entropy}
    if method not in methods:
        sys.exit("--method %s has no ONNX Runtime counterpart (minmax, percentile, kl)" % method)
    quantize_static(pre, out, Reader(name), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, calibrate_method=methods[method],
                    reduce_range=reduce_range)


def xnn_infer(xnn_lab, model, x, work, tag):
    d = os.path.join(work, tag)
    os.makedirs(d, exist_ok=True)
    inp = os.path.join(d, "input.npy")
    np.save(inp, x)
    run([xnn_lab, "infer", model, "-i", "input=" + inp, "-d", d])
    outs = sorted(f for f in os.listdir(d) if f.endswith(".npy") and f != "input.npy")
    return np.load(os.path.join(d, outs[0]))


def xnn_bench_ms(xnn_lab, model, args):
    out = run([xnn_lab, "bench", model, "--json", "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--runs", str(args.runs)])
    return json.loads(out.strip().splitlines()[-1])["latency_ms"]["median"]


def measure_latency(xnn_lab, ours, theirs, x, args):
    """ours/theirs: {"fp32": path or OrtModel, "int8": ...}; returns per-model round medians."""
    entries = [("xnn fp32", lambda: xnn_bench_ms(xnn_lab, ours["fp32"], args)),
               ("xnn int8", lambda: xnn_bench_ms(xnn_lab, ours["int8"], args)),
               ("ort fp32", lambda: theirs["fp32"].median_ms(x, args.warmup, args.runs)),
               ("ort int8", lambda: theirs["int8"].median_ms(x, args.warmup, args.runs))]
    got = {name: [] for name, _ in entries}
    for r in range(args.rounds):
        k = r % len(entries)
        for name, fn in entries[k:] + entries[:k]:
            got[name].append(fn())
        print("   round %d: %s" % (r + 1, "  ".join("%s %.2f ms" % (n, got[n][-1]) for n, _ in entries)), flush=True)
    return got


def summarise(name, got, extra):
    res = {"model": name}
    for k, v in got.items():
        res[k.replace(" ", "_") + "_ms"] = statistics.median(v)
    res["xnn_int8_over_ort_int8"] = statistics.median(a / b for a, b in zip(got["xnn int8"], got["ort int8"]))
    res["xnn_int8_over_xnn_fp32"] = statistics.median(a / b for a, b in zip(got["xnn int8"], got["xnn fp32"]))
    res["ort_int8_over_ort_fp32"] = statistics.median(a / b for a, b in zip(got["ort int8"], got["ort fp32"]))
    res.update(extra)
    return res


def accuracy(xnn_lab, ours, theirs, x, work, is_fmnist, entry, eval_x, eval_y, args):
    """Both engines' INT8 accuracy: Fashion-MNIST top-1 on the test split, or cosine (and top-1 with
    labels) of each INT8 output to its own engine's FP32 output."""
    extra = {}
    if is_fmnist:
        test_x, test_y = fmnist("test")
        for tag, model in (("xnn_fp32", ours["fp32"]), ("xnn_int8", ours["int8"])):
            o = run([xnn_lab, "eval", model, "--dataset", "fashion-mnist", "--mean", str(FMNIST_MEAN), "--std",
                     str(FMNIST_STD)])
            extra[tag + "_top1"] = float(re.search(r"top-1 ([0-9.]+)%", o).group(1))
        logits = {}
        for tag in ("fp32", "int8"):
            logits["ort_" + tag] = np.concatenate([theirs[tag].run(test_x[i:i + 500]) for i in range(0, len(test_x), 500)])
            extra["ort_%s_top1" % tag] = float(100 * (logits["ort_" + tag].argmax(1) == test_y).mean())
            logits["xnn_" + tag] = xnn_infer(xnn_lab, ours[tag], np.ascontiguousarray(test_x), work, "test_" + tag)
        # Fidelity to each engine's own FP32 model on the same images: top-1 above FP32 (both
        # quantisers land there) shows that label accuracy also measures luck.
        for k in ("xnn", "ort"):
            a, b = logits[k + "_fp32"].astype(np.float64), logits[k + "_int8"].astype(np.float64)
            extra[k + "_agree_fp32"] = float(100 * (a.argmax(1) == b.argmax(1)).mean())
            extra[k + "_logit_cosine_mean"] = float(np.mean(np.sum(a * b, 1) /
                                                            (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))))
    else:
        if entry:
            inputs = [np.ascontiguousarray(eval_x[i:i + 1]) for i in range(eval_x.shape[0])]
        else:
            inputs = [x] + [normal_images(2000 + i, 1) for i in range(max(args.eval_samples - 1, 0))]
        hits = {"xnn_fp32": 0, "xnn_int8": 0, "ort_fp32": 0, "ort_int8": 0}
        cos = {"xnn": [], "ort": []}
        same = {"xnn": 0, "ort": 0}
        for i, xi in enumerate(inputs):
            a = xnn_infer(xnn_lab, ours["fp32"], xi, work, "fp32_%d" % i)
            b = xnn_infer(xnn_lab, ours["int8"], xi, work, "int8_%d" % i)
            c, d = theirs["fp32"].run(xi), theirs["int8"].run(xi)
            cos["xnn"].append(cosine(a, b))
            cos["ort"].append(cosine(c, d))
            same["xnn"] += int(np.argmax(a) == np.argmax(b))
            same["ort"] += int(np.argmax(c) == np.argmax(d))
            if entry:
                for tag, out_i in (("xnn_fp32", a), ("xnn_int8", b), ("ort_fp32", c), ("ort_int8", d)):
                    hits[tag] += int(np.argmax(out_i) == eval_y[i])
        for k in ("xnn", "ort"):
            extra[k + "_cosine_min"] = min(cos[k])
            extra[k + "_cosine_mean"] = statistics.fmean(cos[k])
            extra[k + "_top1_agreement"] = "%d/%d" % (same[k], len(inputs))
        if entry:
            for tag, h in hits.items():
                extra[tag + "_top1"] = 100.0 * h / len(inputs)
            extra["top1_images"] = len(inputs)
    return extra


def quantize_both(xnn_lab, ort, fp32, calib, work, tag, args):
    calib_npy = os.path.join(work, "calib%s.npy" % tag)
    np.save(calib_npy, calib)
    ours = {"fp32": fp32, "int8": os.path.join(work, "xnn_int8%s.xnn" % tag)}
    run([xnn_lab, "quantize", fp32, "-o", ours["int8"], "--calib-npy", calib_npy, "--calib-samples",
         str(calib.shape[0]), "--method", args.method, "--eval-limit", "-1"] +
        (["--bias-correction"] if args.bias_correction else []) + (["--reduce-range"] if args.reduce_range else []))
    ort_int8 = os.path.join(work, "ort_int8%s.onnx" % tag)
    ort_quantize(fp32, ort_int8, calib, args.method, work, args.reduce_range)
    return ours, {"fp32": OrtModel(ort, fp32, args.threads), "int8": OrtModel(ort, ort_int8, args.threads)}


def calibration_draw(d, is_fmnist, entry, calib, args):
    """Draw d > 0 of the calibration set: as many samples as draw 0, drawn with seed d from the same
    source (Fashion-MNIST: the training split; trained models: their calibration file; otherwise
    fresh standard-normal images)."""
    rng = np.random.default_rng(d)
    if is_fmnist:
        train_x, _ = fmnist("train")
        return np.ascontiguousarray(train_x[np.sort(rng.choice(len(train_x), calib.shape[0], replace=False))])
    if entry:
        pool = np.load(os.path.join(args.trained, entry["calib"]), mmap_mode="r")
        return np.ascontiguousarray(pool[np.sort(rng.choice(len(pool), min(calib.shape[0], len(pool)), replace=False))])
    return normal_images(1000 + 7919 * d, calib.shape[0])


def calibration_draws(xnn_lab, ort, fp32, work, is_fmnist, entry, calib, x, eval_x, eval_y, first, args):
    """Accuracy over --calib-draws calibration sets (draw 0 is the one above): a single set of 100
    images (or 8) moves top-1 and cosine by as much as the two quantisers differ, so "at least as
    good" is judged on the mean over draws, with the per-draw values kept."""
    key = "int8_top1" if "xnn_int8_top1" in first else "cosine_min"
    per = {"xnn": [first["xnn_" + key]], "ort": [first["ort_" + key]]}
    agree = {k: [first[k + "_agree_fp32"]] for k in ("xnn", "ort") if k + "_agree_fp32" in first}
    for d in range(1, args.calib_draws):
        ours, theirs = quantize_both(xnn_lab, ort, fp32, calibration_draw(d, is_fmnist, entry, calib, args), work,
                                     "_draw%d" % d, args)
        acc = accuracy(xnn_lab, ours, theirs, x, work, is_fmnist, entry, eval_x, eval_y, args)
        per["xnn"].append(acc["xnn_" + key])
        per["ort"].append(acc["ort_" + key])
        for k in agree:
            agree[k].append(acc[k + "_agree_fp32"])
        print("   calibration draw %d: %s xnn %.5f  ort %.5f%s" % (
            d, key, per["xnn"][-1], per["ort"][-1],
            "  (agree with own fp32 %.2f|%.2f%%)" % (agree["xnn"][-1], agree["ort"][-1]) if agree else ""), flush=True)
    fidelity = {"draws_%s_agree_fp32" % k: v for k, v in agree.items()}
    return {**fidelity, "draws_metric": key, "draws_xnn": per["xnn"], "draws_ort": per["ort"],
            "draws_xnn_mean": statistics.fmean(per["xnn"]), "draws_ort_mean": statistics.fmean(per["ort"]),
            "draws_xnn_at_least_ort": sum(a >= b for a, b in zip(per["xnn"], per["ort"]))}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--xnn-lab", default=os.path.join(REPO, "build", "harness", "cli", "xnn-lab"))
    p.add_argument("--fixtures", default=os.path.join(REPO, "build", "fixtures", "torchvision"))
    p.add_argument("--models", default="resnet18,mobilenet_v2", help="torchvision fixtures ('' for none)")
    p.add_argument("--fmnist-model", default=os.path.join(REPO, "configs", "models", "fmnist_cnn.onnx"),
                   help="Fashion-MNIST CNN scored on the test split ('' to skip)")
    p.add_argument("--trained", default="", help="folder of scripts/train_torchvision_fmnist.py (trained models)")
    p.add_argument("--out", default=None, help="folder for the models and bench_int8_vs_ort.json")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--calib-samples", type=int, default=8, help="for the torchvision models (Fashion-MNIST: 100)")
    p.add_argument("--eval-samples", type=int, default=4)
    p.add_argument("--method", default="minmax", help="minmax, percentile or kl (both quantisers)")
    p.add_argument("--calib-draws", type=int, default=1,
                   help="accuracy over this many calibration sets (seeded draws of the same size and source); "
                        "'at least as good' then compares the means")
    p.add_argument("--bias-correction", action="store_true",
                   help="ours with --bias-correction (same calibration data; ONNX Runtime has no such option)")
    p.add_argument("--reduce-range", action="store_true",
                   help="weights in [-64, 64] for both: ours with --reduce-range, ONNX Runtime's reduce_range=True "
                        "(the vpmaddubsw int8 GEMM of AVX2 CPUs without VNNI)")
    args = p.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("onnxruntime is not importable by %s; see this script's docstring" % sys.executable)

    xnn_lab = os.path.abspath(args.xnn_lab)
    out = args.out or tempfile.mkdtemp(prefix="xnn-int8-vs-ort-")
    os.makedirs(out, exist_ok=True)
    results = []
    cases = [(m, os.path.join(args.fixtures, m + ".onnx")) for m in args.models.split(",") if m]
    trained = {}
    if args.trained:
        with open(os.path.join(args.trained, "trained_manifest.json")) as f:
            trained = json.load(f)
        cases += [(name, os.path.join(args.trained, e["onnx"])) for name, e in sorted(trained.items())]
    if args.fmnist_model:
        cases.append(("fmnist_cnn", args.fmnist_model))
    for name, fp32 in cases:
        if not os.path.exists(fp32):
            sys.exit("%s: missing (torchvision fixtures: scripts/export_torchvision.py --out %s)" % (fp32, args.fixtures))
        work = os.path.join(out, name)
        os.makedirs(work, exist_ok=True)
        is_fmnist = name == "fmnist_cnn"
        entry = trained.get(name)
        eval_x = eval_y = None
        if is_fmnist:
            train_x, _ = fmnist("train")
            calib = train_x[:100]
            x = calib[:1]
        elif entry:
            calib = np.ascontiguousarray(np.load(os.path.join(args.trained, entry["calib"]))[:args.calib_samples])
            eval_x = np.load(os.path.join(args.trained, entry["eval"]), mmap_mode="r")[:args.eval_samples]
            eval_y = np.load(os.path.join(args.trained, entry["labels"]))[:args.eval_samples]
            x = np.ascontiguousarray(eval_x[:1])
        else:
            calib = normal_images(1000, args.calib_samples)
            x = np.load(os.path.join(args.fixtures, name + ".input.npy")).astype(np.float32)
        print("== %s: quantising with both (%d calibration samples, %s)" % (name, calib.shape[0], args.method), flush=True)
        ours, theirs = quantize_both(xnn_lab, ort, fp32, calib, work, "", args)

        got = measure_latency(xnn_lab, ours, theirs, x, args)
        extra = {"calibration": "%d %s, %s" % (calib.shape[0], "training images" if is_fmnist or entry else
                                               "synthetic standard-normal images", args.method)}
        extra.update(accuracy(xnn_lab, ours, theirs, x, work, is_fmnist, entry, eval_x, eval_y, args))
        if args.calib_draws > 1:
            extra.update(calibration_draws(xnn_lab, ort, fp32, work, is_fmnist, entry, calib, x, eval_x, eval_y,
                                           extra, args))
        results.append(summarise(name, got, extra))

    print("\n%-13s %9s %9s %9s %9s  %-18s %-16s %s" % ("model", "xnn fp32", "xnn int8", "ort fp32", "ort int8",
                                                      "xnn int8/ort int8", "int8/fp32 xnn|ort", "accuracy (xnn | ort)"))
    for r in results:
        if "xnn_int8_top1" in r:
            acc = "top-1 fp32 %.2f|%.2f  int8 %.2f|%.2f" % (r["xnn_fp32_top1"], r["ort_fp32_top1"], r["xnn_int8_top1"],
                                                         r["ort_int8_top1"])
            if "xnn_cosine_min" in r:
                acc += "  cosine min %.4f|%.4f" % (r["xnn_cosine_min"], r["ort_cosine_min"])
            if "xnn_agree_fp32" in r:
                acc += "  agree with own fp32 %.2f|%.2f%%  logit cosine %.6f|%.6f" % (
                    r["xnn_agree_fp32"], r["ort_agree_fp32"], r["xnn_logit_cosine_mean"], r["ort_logit_cosine_mean"])
            acc_ok = r["xnn_int8_top1"] >= r["ort_int8_top1"]
            if "draws_xnn_mean" in r:
                acc += "  mean of %d draws %.2f|%.2f" % (len(r["draws_xnn"]), r["draws_xnn_mean"], r["draws_ort_mean"])
                if "draws_xnn_agree_fp32" in r:
                    acc += " (agree with own fp32 %.2f|%.2f%%)" % (statistics.fmean(r["draws_xnn_agree_fp32"]),
                                                                    statistics.fmean(r["draws_ort_agree_fp32"]))
                acc_ok = r["draws_xnn_mean"] >= r["draws_ort_mean"]
        else:
            acc = "cosine min %.4f|%.4f  top-1 agree %s|%s" % (r["xnn_cosine_min"], r["ort_cosine_min"],
                                                              r["xnn_top1_agreement"], r["ort_top1_agreement"])
            acc_ok = r["xnn_cosine_min"] >= r["ort_cosine_min"]
            if "draws_xnn_mean" in r:
                acc += "  cosine min, mean of %d draws %.5f|%.5f" % (len(r["draws_xnn"]), r["draws_xnn_mean"],
                                                                    r["draws_ort_mean"])
                acc_ok = r["draws_xnn_mean"] >= r["draws_ort_mean"]
        r["accuracy_at_least_ort"] = acc_ok
        r["int8_faster_than_ort"] = r["xnn_int8_over_ort_int8"] < 1
        print("%-13s %9.2f %9.2f %9.2f %9.2f  %6.3f %-11s %5.3f|%5.3f     %s  %s" % (
            r["model"], r["xnn_fp32_ms"], r["xnn_int8_ms"], r["ort_fp32_ms"], r["ort_int8_ms"], r["xnn_int8_over_ort_int8"],
            "(faster)" if r["int8_faster_than_ort"] else "(SLOWER)", r["xnn_int8_over_xnn_fp32"],
            r["ort_int8_over_ort_fp32"], acc, "(>= ort)" if acc_ok else "(BELOW ort)"))
    path = os.path.join(out, "bench_int8_vs_ort.json")
    with open(path, "w") as f:
        json.dump({"onnxruntime": ort.__version__, "threads": args.threads, "results": results}, f, indent=2)
    print("\nonnxruntime %s, %d thread(s); wrote %s" % (ort.__version__, args.threads, path))


if __name__ == "__main__":
    main()
