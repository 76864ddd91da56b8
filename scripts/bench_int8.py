#!/usr/bin/python3
"""INT8 against FP32 on the CPU: latency and output agreement, in one run.

    /usr/bin/python3 scripts/bench_int8.py --xnn-lab BUILD/harness/cli/xnn-lab \\
        [--fixtures DIR] [--models resnet18,mobilenet_v2] [--out DIR] [--threads 1] \\
        [--rounds 6] [--runs 15] [--warmup 3] [--calib-samples 8] [--eval-samples 4] [--method minmax] \\
        [--quantize-args "--exclude NODE ..."] [--trained DIR]

A benchmark, not a test: it times, prints and writes OUT/bench_int8.json; it fails only when a
step fails. The issue's targets (ResNet-18 and MobileNetV2, 1x3x224x224, 1 thread): INT8
median latency <= 0.55x our own FP32, output cosine similarity to FP32 >= 0.99; each is printed
as met or missed.

For every model NAME:
  1. FP32 model: DIR/NAME.onnx from scripts/export_torchvision.py (seeded random weights, BN
     statistics calibrated; the build's ctest fixture step writes DIR = BUILD/fixtures/torchvision).
     Missing fixtures are exported into DIR with Debian's /usr/bin/python3 first.
  2. INT8 model: `xnn-lab quantize DIR/NAME.onnx -o OUT/NAME.int8.xnn --calib-npy calib.npy`
     (per-channel int8 weights, uint8 activations, --method ranges). Calibration data is
     SYNTHETIC: --calib-samples seeded standard-normal images, the distribution the fixtures'
     own input is drawn from. The models have random weights, so no real dataset is more
     representative of them; the figures measure the int8 kernels and the quantiser's rewrite,
     not accuracy on real images.
  3. Latency: --rounds rounds; each round runs `xnn-lab bench MODEL --json --threads T --warmup W
     --runs K` for FP32 and for INT8, the order alternating between rounds (A/B, B/A, ...) so slow
     drift of the machine (other load, frequency) hits both alike. Reported: the median of the
     per-round medians of each, and the INT8/FP32 ratio as the median of the per-round ratios
     (the ratio of the overall medians is printed beside it).
  With --trained DIR (scripts/train_torchvision_fmnist.py: torchvision models trained on
  Fashion-MNIST at 1x3x224x224) those models are measured too, calibrated on their own first
  --calib-samples training images and compared on their first --eval-samples test images, with
  top-1 against the labels. A random-weight MobileNetV2 is chaotic (compress/quantize/README.md):
  40 dB of input noise alone moves its output to cosine 0.991, so the cosine target is judged on
  the trained one.
  4. Agreement: --eval-samples inputs (the fixture's NAME.input.npy, then seeded standard-normal
     images different from the calibration ones) through `xnn-lab infer` with both models;
     cosine similarity of the flattened outputs (min and mean over inputs) and top-1 agreement.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COSINE_TARGET = 0.99
RATIO_TARGET = 0.55


def run(cmd, **kw):
    """Runs cmd; on failure prints its output and exits."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
        sys.exit(1)
    return p.stdout


def ensure_fixtures(fixtures, models):
    missing = [m for m in models if not os.path.exists(os.path.join(fixtures, m + ".onnx"))]
    if missing:
        print("exporting fixtures %s into %s" % (",".join(missing), fixtures), flush=True)
        run(["/usr/bin/python3", os.path.join(REPO, "scripts", "export_torchvision.py"), "--out", fixtures,
             "--models", ",".join(missing)])


def normal_images(seed, n):
    return np.random.default_rng(seed).standard_normal((n, 3, 224, 224), dtype=np.float32)


def quantize(xnn_lab, fp32, int8, work, args, calib_images=None):
    calib = os.path.join(work, "calib.npy")
    np.save(calib, normal_images(1000, args.calib_samples) if calib_images is None else calib_images)
    out = run([xnn_lab, "quantize", fp32, "-o", int8, "--calib-npy", calib, "--calib-samples", str(args.calib_samples),
               "--method", args.method, "--eval-limit", "-1", "--json"] + args.quantize_args.split())
    return json.loads(out.strip().splitlines()[-1])


def bench_once(xnn_lab, model, args):
    out = run([xnn_lab, "bench", model, "--json", "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--runs", str(args.runs)])
    return json.loads(out.strip().splitlines()[-1])["latency_ms"]["median"]


def infer(xnn_lab, model, x, work, tag):
    d = os.path.join(work, tag)
    os.makedirs(d, exist_ok=True)
    inp = os.path.join(d, "input.npy")
    np.save(inp, x)
    run([xnn_lab, "infer", model, "-i", "input=" + inp, "-d", d])
    outs = sorted(f for f in os.listdir(d) if f.endswith(".npy") and f != "input.npy")
    if len(outs) != 1:
        sys.exit("expected one output from %s, got %s" % (model, outs))
    return np.load(os.path.join(d, outs[0])).astype(np.float64).ravel()


def cosine(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--xnn-lab", required=True, help="the xnn-lab binary")
    p.add_argument("--fixtures", default=os.path.join(REPO, "build", "fixtures", "torchvision"))
    p.add_argument("--models", default="resnet18,mobilenet_v2")
    p.add_argument("--out", default=os.path.join(REPO, "build", "bench-int8"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=6, help="A/B rounds (each: one bench of FP32 and one of INT8)")
    p.add_argument("--runs", type=int, default=15, help="timed runs per bench")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--calib-samples", type=int, default=8)
    p.add_argument("--eval-samples", type=int, default=4)
    p.add_argument("--method", default="minmax", help="calibration method (xnn-lab quantize --method)")
    p.add_argument("--quantize-args", default="", help="more `xnn-lab quantize` options, e.g. '--sqnr-target 17'")
    p.add_argument("--trained", default="", help="folder of scripts/train_torchvision_fmnist.py (trained models)")
    args = p.parse_args()

    xnn_lab = os.path.abspath(args.xnn_lab)
    models = [m for m in args.models.split(",") if m]
    os.makedirs(args.out, exist_ok=True)
    ensure_fixtures(args.fixtures, models)
    cases = [(name, os.path.join(args.fixtures, name + ".onnx"), None) for name in models]
    if args.trained:
        with open(os.path.join(args.trained, "trained_manifest.json")) as f:
            cases += [(name, os.path.join(args.trained, e["onnx"]), e) for name, e in sorted(json.load(f).items())]
    results = []
    for name, fp32, entry in cases:
        int8 = os.path.join(args.out, name + ".int8.xnn")
        calib_images = eval_x = eval_y = None
        if entry:
            calib_images = np.ascontiguousarray(np.load(os.path.join(args.trained, entry["calib"]))[:args.calib_samples])
            eval_x = np.load(os.path.join(args.trained, entry["eval"]), mmap_mode="r")[:args.eval_samples]
            eval_y = np.load(os.path.join(args.trained, entry["labels"]))[:args.eval_samples]
        with tempfile.TemporaryDirectory(prefix="bench_int8_") as work:
            print("== %s: quantising (%d %s calibration images, %s)" % (
                name, args.calib_samples, "training" if entry else "synthetic", args.method), flush=True)
            q = quantize(xnn_lab, fp32, int8, work, args, calib_images)

            fp32_ms, int8_ms, ratios = [], [], []
            for r in range(args.rounds):
                order = [("fp32", fp32), ("int8", int8)] if r % 2 == 0 else [("int8", int8), ("fp32", fp32)]
                got = {tag: bench_once(xnn_lab, model, args) for tag, model in order}
                fp32_ms.append(got["fp32"])
                int8_ms.append(got["int8"])
                ratios.append(got["int8"] / got["fp32"])
                print("   round %d: fp32 %.2f ms  int8 %.2f ms  ratio %.3f" % (r + 1, got["fp32"], got["int8"], ratios[-1]),
                      flush=True)

            if entry:
                inputs = [np.ascontiguousarray(eval_x[i:i + 1]) for i in range(eval_x.shape[0])]
            else:
                fixture_input = np.load(os.path.join(args.fixtures, name + ".input.npy")).astype(np.float32)
                extra = normal_images(2000, max(args.eval_samples - 1, 0))
                inputs = [fixture_input] + [extra[i:i + 1] for i in range(extra.shape[0])]
            cosines, top1_same, hits = [], 0, [0, 0]
            for i, x in enumerate(inputs):
                a = infer(xnn_lab, fp32, x, work, "fp32_%d" % i)
                b = infer(xnn_lab, int8, x, work, "int8_%d" % i)
                cosines.append(cosine(a, b))
                top1_same += int(np.argmax(a) == np.argmax(b))
                if entry:
                    hits[0] += int(np.argmax(a) == eval_y[i])
                    hits[1] += int(np.argmax(b) == eval_y[i])

        res = {
            "model": name,
            "threads": args.threads,
            "fp32_median_ms": statistics.median(fp32_ms),
            "int8_median_ms": statistics.median(int8_ms),
            "ratio_median_of_rounds": statistics.median(ratios),
            "ratio_of_medians": statistics.median(int8_ms) / statistics.median(fp32_ms),
            "fp32_round_medians_ms": fp32_ms,
            "int8_round_medians_ms": int8_ms,
            "cosine_min": min(cosines),
            "cosine_mean": statistics.fmean(cosines),
            "top1_agreement": "%d/%d" % (top1_same, len(inputs)),
            "calibration": "%d %s, %s" % (args.calib_samples, "training images" if entry else
                                          "synthetic standard-normal images", args.method),
            "quantize_report": {k: q.get(k) for k in ("weights", "int8_nodes", "fp32_nodes", "quantize_nodes",
                                                      "dequantize_nodes", "fused_activations", "fp32_layers")},
        }
        if entry:
            res["fp32_top1"] = 100.0 * hits[0] / len(inputs)
            res["int8_top1"] = 100.0 * hits[1] / len(inputs)
            res["top1_images"] = len(inputs)
        results.append(res)

    print("\nmodel          fp32 ms   int8 ms   int8/fp32 (rounds | medians)  target <= %.2f   cosine min/mean    target >= %.2f  top-1"
          % (RATIO_TARGET, COSINE_TARGET))
    for r in results:
        print("%-13s %8.2f  %8.2f   %6.3f | %6.3f               %-6s           %.5f / %.5f  %-6s          %s" % (
            r["model"], r["fp32_median_ms"], r["int8_median_ms"], r["ratio_median_of_rounds"], r["ratio_of_medians"],
            "met" if r["ratio_median_of_rounds"] <= RATIO_TARGET else "MISSED", r["cosine_min"], r["cosine_mean"],
            "met" if r["cosine_min"] >= COSINE_TARGET else "MISSED", r["top1_agreement"]))
        if "int8_top1" in r:
            print("%-13s top-1 on %d labelled test images: fp32 %.2f%%, int8 %.2f%%" % (
                "", r["top1_images"], r["fp32_top1"], r["int8_top1"]))
    path = os.path.join(args.out, "bench_int8.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    print("\nwrote %s" % path)


if __name__ == "__main__":
    main()
