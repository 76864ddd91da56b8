#!/usr/bin/python3
"""Time xnn-lab against its peers on the same models in one interleaved run.

Usually run through scripts/bench-peers.sh (which runs this with Debian's /usr/bin/python3).

Engines (--engines, default all):
  xnn-lab      `xnn-lab bench MODEL --threads N --warmup W --runs K --json`, one process per
               round; its samples_ms are the samples. Output checked once per model with
               `xnn-lab infer MODEL -i NAME=IN.npy -d DIR`.
  ort          ONNX Runtime: intra_op_num_threads=N, inter_op_num_threads=1, ORT_SEQUENTIAL.
  mnn          MNN: ONNX -> .mnn with the wheel's mnnconvert; Interpreter session numThread=N,
               precision high (FP32).
  ncnn         ncnn: ONNX -> .ncnn.param/.bin with pnnx from PyPI (the wheel's own binary run
               directly, fp16=0 so weights stay FP32; the wheel's Python wrapper needs a
               recent torch and is not used). If pnnx cannot read the ONNX file, the model is
               traced to TorchScript with Debian's torch 1.13 and given to pnnx instead.
               opt.num_threads=N, fp16/bf16 storage and arithmetic off.
  openvino     OpenVINO CPU: INFERENCE_NUM_THREADS=N, PERFORMANCE_HINT=LATENCY, NUM_STREAMS=1,
               INFERENCE_PRECISION_HINT=f32 (it would otherwise pick bf16 on CPUs that have it).
  opencv       OpenCV DNN (opencv-python-headless): cv2.setNumThreads(N), DNN_BACKEND_OPENCV.
  torch-ts     Debian PyTorch 1.13: torch.jit.freeze(torch.jit.script(model)) (trace if the
               model is not scriptable); torch.set_num_threads(N), set_num_interop_threads(1).
  torch-eager  Debian PyTorch 1.13, eager, inference_mode; same thread settings.
The ort/mnn/ncnn/openvino/opencv packages come from PyPI into a virtual environment this
script creates (--venv, default $XNN_PEERS_VENV or build/peers-venv; reused when present,
only missing packages are installed; --no-install never touches it). pnnx is installed with
--no-deps: its wheel declares a dependency on torch, which would pull ~3 GB of CUDA wheels.

Models are the seeded random-weight torchvision exports of scripts/export_torchvision.py
(1x3x224x224, opset 13, BatchNorm statistics calibrated), written to OUT/fixtures and reused
when up to date. The reference output of every model is the exporter's PyTorch eager output
(NAME.output.npy).

Method. For each model and thread count, one long-lived worker process per Python engine
(venv python for the PyPI peers, /usr/bin/python3 for torch) loads the model once, runs
--warmup untimed iterations, and then answers "time k iterations" requests over JSON lines.
Timing is interleaved in rounds: in each round every engine runs --per-round timed iterations
(after --round-warmup untimed ones), in an order rotated by one engine each round, with a
--gap-ms pause between engines so spinning thread pools of the previous engine go to sleep.
xnn-lab is one fresh `xnn-lab bench` process per round (its --warmup untimed runs each time,
then its timed runs). --runs timed samples per engine in all; the median is reported.
One sample = one inference call as a user makes it (feed input, run, read output to numpy).

Correctness: every engine's output for NAME.input.npy against PyTorch's; printed as max
abs diff and rel = max|y - ref| / max|ref|; rel > --tolerance (1e-3) is flagged MISMATCH and
that engine is not counted as best peer for the model.

Report: median latency (ms) per model / threads / engine; best peer; ratio = xnn-lab median
/ best peer median (< 1: xnn-lab is faster); xnn-lab GFLOP/s = 2 x MACs / median, with MACs
from `xnn-lab inspect MODEL --json` (or, failing that, counted from the ONNX graph's
Conv/Gemm/MatMul nodes), and its fraction of FP32 peak:
    peak(N threads) = min(N, cores) x 2 FMA pipes x 8 lanes (AVX2 fp32) x 2 flop x GHz
(GHz: lscpu's max MHz, else the highest "cpu MHz" in /proc/cpuinfo; --peak-gflops P gives
the whole-CPU peak instead and is scaled by min(N, cores)/cores). Then CV% of every engine's
samples (noise), the one-line error of every engine that could not run a model, and the
correctness lines. --json FILE (and always OUT/bench-peers.json) gets everything, with the
raw samples.

Modes:
  --quick      squeezenet1_1, 1 thread, 6 runs, 2 warm-ups, 3 per round, all engines.
  --self-test  as --quick with xnn-lab, torch-ts and torch-eager only: no venv, no downloads
               (CI smoke test, well under 3 minutes). Exits 1 if xnn-lab's output mismatches
               PyTorch, if xnn-lab or torch fails, or if the script breaks. If the xnn-lab
               binary has no `bench` subcommand yet, that is a loud warning, not a failure.
Explicit --models/--threads/--runs/... override these presets.

Exit status: 0 normally (peers that fail are reported, not fatal); 1 if xnn-lab's output
mismatches PyTorch or xnn-lab fails to run (any mode), or under --self-test as above;
2 for bad arguments or a missing xnn-lab binary.
"""

import argparse
import json
import math
import os
import platform
import re
import select
import shutil
import statistics
import subprocess
import sys
import time

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(SCRIPTS)
WORKER = os.path.join(SCRIPTS, "bench_peers_worker.py")
EXPORTER = os.path.join(SCRIPTS, "export_torchvision.py")
DEBIAN_PY = "/usr/bin/python3"

ALL_ENGINES = ["xnn-lab", "ort", "mnn", "ncnn", "openvino", "opencv", "torch-ts", "torch-eager"]
VENV_ENGINES = {"ort": "onnxruntime", "mnn": "MNN", "ncnn": "ncnn", "openvino": "openvino",
                "opencv": "cv2"}
TORCH_ENGINES = ("torch-ts", "torch-eager")
# (pip requirement, import name or None, extra pip args)
VENV_PACKAGES = [
    ("numpy", "numpy", []),
    ("onnxruntime", "onnxruntime", []),
    ("MNN", "MNN", []),
    ("ncnn", "ncnn", []),
    ("pnnx", None, ["--no-deps"]),  # only its bundled converter binary is used
    ("openvino", "openvino", []),
    ("opencv-python-headless", "cv2", []),
]
DEFAULT_MODELS = ["mobilenet_v2", "mobilenet_v3_small", "resnet18", "shufflenet_v2_x1_0",
                  "squeezenet1_1", "efficientnet_b0"]
QUICK = {"models": "squeezenet1_1", "threads": "1", "runs": 6, "warmup": 2, "per_round": 3}
NORMAL = {"models": ",".join(DEFAULT_MODELS), "threads": "1,2", "runs": 30, "warmup": 5,
          "per_round": 5}
FMA_PIPES, LANES, FLOP_PER_FMA = 2, 8, 2


def log(msg=""):
    print(msg, flush=True)


def one_line(text, limit=300):
    """The most telling line of a tool's output: the last line that looks like an error,
    else the last non-empty line."""
    lines = [" ".join(l.split()) for l in (text or "").splitlines() if l.strip()]
    for l in reversed(lines):
        if re.search(r"error|exception|fail|unsupported|not support|abort|segmentation", l, re.I):
            return l[:limit]
    return lines[-1][:limit] if lines else "(no output)"


class EngineError(Exception):
    pass


# ----------------------------------------------------------------------------- arguments

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench-peers.sh",
        description=__doc__.split("\n\n")[0] + " Method and engine settings: see below.",
        epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated torchvision models (default: %s)"
                   % ",".join(DEFAULT_MODELS))
    p.add_argument("--engines", default=",".join(ALL_ENGINES),
                   help="comma-separated engines, 'torch' = both torch ones (default: %(default)s)")
    p.add_argument("--threads", help="comma-separated thread counts (default: 1,2)")
    p.add_argument("--runs", type=int, help="timed samples per engine/model/threads (default: 30)")
    p.add_argument("--warmup", type=int,
                   help="untimed runs after loading (each xnn-lab bench process) (default: 5)")
    p.add_argument("--per-round", type=int, help="timed iterations per engine per round (default: 5)")
    p.add_argument("--round-warmup", type=int, default=1,
                   help="untimed iterations at the start of each round, Python workers (default: 1)")
    p.add_argument("--gap-ms", type=float, default=20.0,
                   help="pause between two engines' turns in a round (default: %(default)s)")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "bench-peers"),
                   help="work folder: fixtures, converted models, outputs, logs (default: %(default)s)")
    p.add_argument("--json", metavar="FILE", help="also write machine-readable results here")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke variant: squeezenet1_1, 1 thread, 6 runs, all engines")
    p.add_argument("--self-test", action="store_true",
                   help="--quick with xnn-lab and Debian PyTorch only (no venv, no downloads); "
                        "non-zero exit on an xnn-lab mismatch or failure")
    p.add_argument("--peak-gflops", type=float,
                   help="whole-CPU FP32 peak to use instead of the computed one")
    p.add_argument("--tolerance", type=float, default=1e-3,
                   help="max |y-ref| / max |ref| above which an output is a MISMATCH (default: %(default)s)")
    p.add_argument("--xnn-lab", default=os.environ.get("XNN_LAB"),
                   help="xnn-lab binary (default: $XNN_LAB, else found under build/)")
    p.add_argument("--venv", default=os.environ.get("XNN_PEERS_VENV") or
                   os.path.join(ROOT, "build", "peers-venv"),
                   help="virtual environment for the PyPI peers (default: $XNN_PEERS_VENV or %(default)s)")
    p.add_argument("--no-install", action="store_true",
                   help="never create the venv or pip install; peers whose package is missing are reported")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds allowed for one load/convert/round request (default: %(default)s)")
    a = p.parse_args(argv)
    preset = QUICK if (a.quick or a.self_test) else NORMAL
    for k, v in preset.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.self_test and a.engines == ",".join(ALL_ENGINES):
        a.engines = "xnn-lab,torch-ts,torch-eager"
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    engines = []
    for e in (x.strip() for x in a.engines.split(",")):
        if not e:
            continue
        for x in (TORCH_ENGINES if e == "torch" else [e]):
            if x not in ALL_ENGINES:
                p.error("unknown engine %r (choose from %s, torch)" % (x, ", ".join(ALL_ENGINES)))
            if x not in engines:
                engines.append(x)
    a.engines = [e for e in ALL_ENGINES if e in engines]  # fixed column order
    try:
        a.threads = [int(t) for t in a.threads.split(",") if t.strip()]
    except ValueError:
        p.error("--threads must be comma-separated integers")
    if not a.models or not a.engines or not a.threads or min(a.threads) < 1:
        p.error("--models, --engines and --threads must be non-empty (threads >= 1)")
    if a.runs < 1 or a.per_round < 1 or a.warmup < 0 or a.round_warmup < 0:
        p.error("--runs and --per-round must be >= 1, warm-ups >= 0")
    if a.self_test:
        a.no_install = True
    a.out = os.path.abspath(a.out)
    return a


# ----------------------------------------------------------------------------- machine

def cpu_peak(override):
    """(per-core FP32 peak GFLOP/s, cores, description lines)."""
    lscpu = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            lscpu[k.strip()] = v.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    cores = None
    try:
        cores = int(lscpu["Core(s) per socket"]) * int(lscpu.get("Socket(s)", "1"))
    except (KeyError, ValueError):
        pass
    cores = cores or os.cpu_count() or 1
    cpuinfo = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
    except OSError:
        pass
    model = lscpu.get("Model name") or (re.findall(r"model name\s*:\s*(.*)", cpuinfo) or ["?"])[0]
    mhz, src = None, None
    try:
        mhz, src = float(lscpu["CPU max MHz"]), "lscpu CPU max MHz"
    except (KeyError, ValueError):
        vals = [float(v) for v in re.findall(r"cpu MHz\s*:\s*([\d.]+)", cpuinfo)]
        if vals:
            mhz, src = max(vals), "/proc/cpuinfo cpu MHz (no max MHz reported)"
    flags = set((re.findall(r"flags\s*:\s*(.*)", cpuinfo) or [""])[0].split())
    lines = ["CPU: %s, %d core(s), %d logical CPU(s)" % (model, cores, os.cpu_count() or 0)]
    if override:
        per_core = override / cores
        lines.append("FP32 peak: --peak-gflops %.1f GFLOP/s for %d cores = %.1f per core"
                     % (override, cores, per_core))
    elif mhz:
        per_core = FMA_PIPES * LANES * FLOP_PER_FMA * mhz / 1000.0
        lines.append("FP32 peak = cores x %d FMA pipes x %d lanes (AVX2 fp32) x %d flop/FMA x GHz"
                     " = %d x %d x %d x %d x %.3f = %.1f GFLOP/s  (clock: %s)"
                     % (FMA_PIPES, LANES, FLOP_PER_FMA, cores, FMA_PIPES, LANES, FLOP_PER_FMA,
                        mhz / 1000.0, per_core * cores, src))
        if "avx512f" in flags:
            lines.append("  note: this CPU also has AVX-512 (16 lanes), which doubles the peak; xnn-lab's GEMM,"
                         " depthwise and Winograd GEMM use it, and GFLOP/s counts a Winograd layer's direct"
                         " MACs, so %peak can pass 100%")
        if "hypervisor" in flags:
            lines.append("  note: virtual machine; the reported clock may not be the turbo clock")
    else:
        per_core = None
        lines.append("FP32 peak: unknown (no clock found; use --peak-gflops)")
    lines.append("  %peak at N threads uses min(N, cores) cores")
    return per_core, cores, lines


def blas_check():
    """Lines about Debian torch's BLAS; loud if libopenblas0-pthread is missing."""
    lines = []
    try:
        st = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "libopenblas0-pthread"],
                            capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        st = ""
    alt = ""
    try:
        q = subprocess.run(["update-alternatives", "--query", "libblas.so.3-x86_64-linux-gnu"],
                           capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"^Value:\s*(.*)$", q, re.M)
        alt = m.group(1) if m else ""
    except (OSError, subprocess.SubprocessError):
        pass
    ok = "install ok installed" in st
    if ok:
        lines.append("BLAS for Debian torch: libopenblas0-pthread installed; libblas.so.3 -> %s"
                     % (alt or "?"))
        if alt and "openblas" not in alt:
            lines.append("!!! WARNING: libblas.so.3 does not point at OpenBLAS: torch timings are "
                         "unrepresentative (update-alternatives --config libblas.so.3-x86_64-linux-gnu)")
    else:
        bar = "!" * 78
        lines += [bar,
                  "!!! WARNING: libopenblas0-pthread is NOT installed. Debian's PyTorch then uses the",
                  "!!! reference BLAS and its timings are meaningless. Install it:",
                  "!!!     sudo apt-get install libopenblas0-pthread",
                  bar]
    return ok, lines


def find_xnn_lab(path):
    if path:
        return os.path.abspath(path) if os.path.isfile(path) else None
    for cand in (os.path.join(ROOT, "build", "harness", "cli", "xnn-lab"),
                 os.path.join(ROOT, "build", "xnn-lab")):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    for dirpath, _, files in os.walk(os.path.join(ROOT, "build")):
        if "peers-venv" in dirpath or "bench-peers" in dirpath:
            continue
        if "xnn-lab" in files:
            cand = os.path.join(dirpath, "xnn-lab")
            if os.access(cand, os.X_OK):
                return cand
    return shutil.which("xnn-lab")


def xnn_has_bench(xnn):
    try:
        out = subprocess.run([xnn, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return re.search(r"^\s+bench\s", out, re.M) is not None


# ----------------------------------------------------------------------------- venv

def _venv_python(venv):
    return os.path.join(venv, "bin", "python")


def _probe_venv(py):
    """{import name: None or error} for the venv's packages, plus the pnnx binary path."""
    code = r"""
import importlib, importlib.util, json, os
res = {}
for m in %r:
    try:
        importlib.import_module(m); res[m] = None
    except Exception as e:
        res[m] = "%%s: %%s" %% (type(e).__name__, e)
spec = importlib.util.find_spec("pnnx")
exe = os.path.join(list(spec.submodule_search_locations)[0], "pnnx") if spec else ""
res["pnnx"] = None if exe and os.access(exe, os.X_OK) else "pnnx binary not installed"
res["_pnnx_exe"] = exe
print(json.dumps(res))
""" % [m for _, m, _ in VENV_PACKAGES if m]
    try:
        cp = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300)
        return json.loads(cp.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - any failure means "unusable venv"
        return {"_error": one_line(str(e))}


def _base_python():
    cands = [os.environ.get("XNN_PEERS_PYTHON"), shutil.which("python3"),
             shutil.which("python3.11"), shutil.which("python3.12"), DEBIAN_PY]
    for c in cands:
        if not c:
            continue
        try:
            if subprocess.run([c, "-c", "import venv, ensurepip"], capture_output=True,
                              timeout=60).returncode == 0:
                return c
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def ensure_venv(args, wanted, logdir):
    """Returns (venv python or None, {engine: error or None}, pnnx binary or None)."""
    errs = {e: None for e in wanted}
    py = _venv_python(args.venv)
    probe = _probe_venv(py) if os.path.exists(py) else {"_error": "no venv at " + args.venv}
    if "_error" in probe:
        if args.no_install:
            return None, {e: "venv unusable (%s); run without --no-install" % probe["_error"]
                          for e in wanted}, None
        base = _base_python()
        if not base:
            return None, {e: "no Python with venv+ensurepip to create %s" % args.venv
                          for e in wanted}, None
        log("creating venv %s with %s" % (args.venv, base))
        cp = subprocess.run([base, "-m", "venv", args.venv], capture_output=True, text=True)
        if cp.returncode != 0:
            msg = "python -m venv failed: " + one_line(cp.stderr + cp.stdout)
            return None, {e: msg for e in wanted}, None
        probe = _probe_venv(py)
        if "_error" in probe:
            return None, {e: "new venv unusable: " + probe["_error"] for e in wanted}, None
    need = {"numpy"} | {VENV_ENGINES[e] for e in wanted} | ({"pnnx"} if "ncnn" in wanted else set())
    pip_errors = {}
    for req, mod, extra in VENV_PACKAGES:
        key = mod or req
        if key not in need or probe.get(key) is None:
            continue
        if args.no_install:
            pip_errors[key] = "not installed in %s (--no-install): %s" % (args.venv, probe.get(key))
            continue
        log("pip install %s into %s ..." % (req, args.venv))
        logf = os.path.join(logdir, "pip-%s.log" % req)
        with open(logf, "w") as f:
            cp = subprocess.run([py, "-m", "pip", "install", "--disable-pip-version-check"]
                                + extra + [req], stdout=f, stderr=subprocess.STDOUT, text=True)
        if cp.returncode != 0:
            with open(logf) as f:
                pip_errors[key] = "pip install %s failed: %s (log %s)" % (req, one_line(f.read()), logf)
    if any(probe.get(k) for k in need) and not args.no_install:
        probe = _probe_venv(py)
    for e in wanted:
        mods = ["numpy", VENV_ENGINES[e]] + (["pnnx"] if e == "ncnn" else [])
        for m in mods:
            if probe.get(m):
                errs[e] = pip_errors.get(m) or "cannot import %s: %s" % (m, probe[m])
                break
    if "mnn" in wanted and not errs["mnn"] and not os.path.exists(os.path.join(args.venv, "bin", "mnnconvert")):
        errs["mnn"] = "mnnconvert not found in %s/bin" % args.venv
    return py, errs, (probe.get("_pnnx_exe") or None)


# ----------------------------------------------------------------------------- models

def export_fixtures(models, fixdir, timeout, logdir):
    os.makedirs(fixdir, exist_ok=True)
    logf = os.path.join(logdir, "export.log")
    log("exporting %s -> %s (cached when up to date) ..." % (",".join(models), fixdir))
    with open(logf, "w") as f:
        try:
            cp = subprocess.run([DEBIAN_PY, EXPORTER, "--out", fixdir, "--models", ",".join(models)],
                                stdout=f, stderr=subprocess.STDOUT, text=True,
                                timeout=timeout * max(1, len(models)))
            rc = cp.returncode
        except (OSError, subprocess.SubprocessError) as e:
            rc = "%s" % e
    with open(logf) as f:
        text = f.read()
    entries = {}
    try:
        with open(os.path.join(fixdir, "manifest.json")) as f:
            entries = {e["name"]: e for e in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    out, errors = {}, {}
    for m in models:
        line = next((l for l in text.splitlines() if l.startswith(m + " ")), "")
        if m in entries and "FAILED" not in line:
            e = dict(entries[m])
            for k in ("onnx", "input", "output"):
                e[k] = os.path.join(fixdir, e[k])
            out[m] = e
        else:
            errors[m] = "export failed (rc %s): %s" % (rc, one_line(line or text))
    return out, errors


def onnx_macs(path):
    """MACs of Conv/Gemm/MatMul from the ONNX graph with inferred shapes (fallback)."""
    import numpy as np
    import onnx
    from onnx import shape_inference
    model = shape_inference.infer_shapes(onnx.load(path))
    g = model.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    total = 0
    for n in g.node:
        try:
            if n.op_type == "Conv":
                w, y = shapes[n.input[1]], shapes[n.output[0]]
                total += int(np.prod(y)) * int(np.prod(w[1:]))
            elif n.op_type == "Gemm":
                a, y = shapes[n.input[0]], shapes[n.output[0]]
                trans_a = next((at.i for at in n.attribute if at.name == "transA"), 0)
                k = a[0] if trans_a else a[1]
                total += int(np.prod(y)) * k
            elif n.op_type == "MatMul":
                a, y = shapes[n.input[0]], shapes[n.output[0]]
                total += int(np.prod(y)) * a[-1]
        except (KeyError, IndexError):
            continue
    return total


def xnn_inspect(xnn, onnx_path):
    try:
        cp = subprocess.run([xnn, "inspect", onnx_path, "--json"], capture_output=True,
                            text=True, timeout=120)
        if cp.returncode == 0:
            return json.loads(cp.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return {}


def _fresh(paths, src):
    try:
        t = os.path.getmtime(src)
        return all(os.path.getsize(p) > 0 and os.path.getmtime(p) >= t for p in paths)
    except OSError:
        return False


def _run_tool(cmd, logf, timeout, cwd=None):
    with open(logf, "w") as f:
        f.write("$ %s\n" % " ".join(cmd))
        f.flush()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout after %ds" % timeout
        except OSError as e:
            rc = str(e)
    with open(logf) as f:
        return rc, f.read()


def convert_mnn(args, m, convdir, logdir):
    out = os.path.join(convdir, m["name"] + ".mnn")
    if _fresh([out], m["onnx"]):
        return {"mnn": out}, "cached"
    tmp = out + ".tmp.mnn"
    rc, text = _run_tool([os.path.join(args.venv, "bin", "mnnconvert"), "-f", "ONNX",
                          "--modelFile", m["onnx"], "--MNNModel", tmp, "--bizCode", "xnn-lab"],
                         os.path.join(logdir, "convert-mnn-%s.log" % m["name"]), args.timeout)
    if rc != 0 or not os.path.exists(tmp) or os.path.getsize(tmp) == 0 or "Converted Success" not in text:
        raise EngineError("mnnconvert failed (rc %s): %s" % (rc, one_line(text)))
    os.replace(tmp, out)
    return {"mnn": out}, "mnnconvert"


def _pnnx(pnnx, src, stem, shape, logf, timeout):
    outs = {"pnnxparam": stem + ".pnnx.param", "pnnxbin": stem + ".pnnx.bin",
            "pnnxpy": stem + "_pnnx.py", "pnnxonnx": stem + ".pnnx.onnx",
            "ncnnparam": stem + ".tmp.ncnn.param", "ncnnbin": stem + ".tmp.ncnn.bin",
            "ncnnpy": stem + "_ncnn.py"}
    cmd = [pnnx, src, "inputshape=[%s]" % ",".join(str(d) for d in shape), "fp16=0"]
    cmd += ["%s=%s" % kv for kv in outs.items()]
    rc, text = _run_tool(cmd, logf, timeout, cwd=os.path.dirname(stem))
    ok = rc == 0 and all(os.path.exists(outs[k]) and os.path.getsize(outs[k]) > 0
                         for k in ("ncnnparam", "ncnnbin"))
    return ok, rc, text, outs


def convert_ncnn(args, m, convdir, logdir, pnnx):
    if not pnnx:
        raise EngineError("pnnx binary not found in the venv")
    stem = os.path.join(convdir, m["name"] + ".fp32")
    param, binf = stem + ".ncnn.param", stem + ".ncnn.bin"
    if _fresh([param, binf], m["onnx"]):
        return {"ncnn_param": param, "ncnn_bin": binf}, "cached"
    ok, rc, text, outs = _pnnx(pnnx, m["onnx"], stem, m["input_shape"],
                               os.path.join(logdir, "convert-ncnn-%s.log" % m["name"]), args.timeout)
    route = "pnnx(onnx)"
    if not ok:
        first = "pnnx(onnx) rc %s: %s" % (rc, one_line(text))
        log("  ncnn: pnnx could not convert the ONNX file (%s); trying TorchScript from torch 1.13" % first)
        pt = stem + ".pt"
        trc, ttext = _run_tool([DEBIAN_PY, WORKER, "--trace", m["name"], str(m["seed"]),
                                str(m["bn_calibration"]), str(m["input_shape"][-1]), pt],
                               os.path.join(logdir, "trace-%s.log" % m["name"]), args.timeout)
        if trc != 0:
            raise EngineError(first + "; torch.jit.trace failed: " + one_line(ttext))
        ok, rc, text, outs = _pnnx(pnnx, pt, stem, m["input_shape"],
                                   os.path.join(logdir, "convert-ncnn-pt-%s.log" % m["name"]),
                                   args.timeout)
        if not ok:
            raise EngineError(first + "; pnnx(.pt) rc %s: %s" % (rc, one_line(text)))
        route = "pnnx(torchscript)"
    os.replace(outs["ncnnparam"], param)
    os.replace(outs["ncnnbin"], binf)
    return {"ncnn_param": param, "ncnn_bin": binf}, route


# ----------------------------------------------------------------------------- engines

def thread_env(threads):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[k] = str(threads)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    return env


class Worker:
    """A bench_peers_worker.py process for one engine/model/threads."""

    def __init__(self, engine, python, threads, logf, timeout):
        self.engine, self.timeout, self.logf = engine, timeout, logf
        self.log = open(logf, "w")
        self.proc = subprocess.Popen([python, WORKER, engine, str(threads)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
                                     env=thread_env(threads), cwd=ROOT)

    def _died(self, what):
        rc = self.proc.poll()
        self.log.flush()
        try:
            with open(self.logf) as f:
                tail = one_line(f.read())
        except OSError:
            tail = ""
        return EngineError("worker %s (rc %s): %s" % (what, rc, tail))

    def send(self, obj):
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("died")

    def recv(self, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            self.kill()
            raise EngineError("no reply within %.0fs (killed)" % timeout)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=10)
            raise self._died("exited")
        rep = json.loads(line)
        if not rep.get("ok"):
            raise EngineError(rep.get("error", "unknown worker error"))
        return rep

    def request(self, obj, timeout=None):
        self.send(obj)
        return self.recv(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()  # this worker only, by its own pid
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self):
        if self.proc.poll() is None:
            try:
                self.request({"op": "quit"}, timeout=10)
                self.proc.wait(timeout=10)
            except (EngineError, subprocess.TimeoutExpired, ValueError):
                self.kill()
        self.log.close()


def xnn_bench_round(xnn, model, threads, warmup, k, timeout):
    cmd = [xnn, "bench", model, "--threads", str(threads), "--warmup", str(warmup),
           "--runs", str(k), "--json"]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                            env=thread_env(threads))
    except subprocess.TimeoutExpired:
        raise EngineError("xnn-lab bench: no result within %.0fs" % timeout)
    if cp.returncode != 0:
        raise EngineError("xnn-lab bench rc %d: %s" % (cp.returncode, one_line(cp.stderr + cp.stdout)))
    data = None
    try:
        data = json.loads(cp.stdout)
    except ValueError:
        for line in reversed(cp.stdout.splitlines()):
            if line.strip().startswith("{"):
                try:
                    data = json.loads(line)
                    break
                except ValueError:
                    continue
    if not isinstance(data, dict):
        raise EngineError("xnn-lab bench --json printed no JSON object: " + one_line(cp.stdout))
    samples = data.get("samples_ms")
    if not samples:
        med = (data.get("latency_ms") or {}).get("median")
        if med is None:
            raise EngineError("xnn-lab bench JSON has neither samples_ms nor latency_ms.median")
        samples = [med]
    return [float(s) for s in samples], data


def compare(y_path, ref, tol):
    import numpy as np
    y = np.load(y_path).astype(np.float64)
    r = ref.astype(np.float64)
    if y.size != r.size:
        return {"ok": False, "error": "output shape %s vs reference %s" % (list(y.shape), list(r.shape))}
    y = y.reshape(r.shape)
    if not np.all(np.isfinite(y)):
        return {"ok": False, "max_abs": float("nan"), "rel": float("nan"),
                "error": "non-finite values in output"}
    max_abs = float(np.max(np.abs(y - r)))
    rel = max_abs / max(float(np.max(np.abs(r))), 1e-30)
    return {"ok": rel <= tol, "max_abs": max_abs, "rel": rel}


def stats(samples):
    s = sorted(samples)
    n = len(s)
    mean = statistics.fmean(s)
    sd = statistics.stdev(s) if n > 1 else 0.0
    return {"n": n, "median_ms": statistics.median(s), "min_ms": s[0],
            "p90_ms": s[min(n - 1, max(0, math.ceil(0.9 * n) - 1))], "mean_ms": mean,
            "stddev_ms": sd, "cv": sd / mean if mean > 0 else 0.0}


# ----------------------------------------------------------------------------- driver

def run_block(args, ctx, name, m, threads, engines, rec):
    """Loads, checks and times every engine for one model at one thread count.
    rec(engine) -> the result dict for this model/threads/engine."""
    ref = ctx["refs"][name]
    outdir = os.path.join(args.out, "outputs")
    logdir = ctx["logdir"]
    workers = {}
    # Start every Python worker first (imports overlap), then load.
    for e in engines:
        if e == "xnn-lab" or rec(e).get("error"):
            continue
        py = DEBIAN_PY if e in TORCH_ENGINES else ctx["venv_py"]
        try:
            workers[e] = Worker(e, py, threads, os.path.join(
                logdir, "worker-%s-%s-t%d.log" % (e, name, threads)), args.timeout)
        except OSError as ex:
            rec(e)["error"] = "cannot start worker: %s" % ex
    model_msg = dict(m)
    model_msg.update(ctx["converted"].get(name, {}))
    for e, w in workers.items():
        w.send({"op": "load", "model": model_msg})
    for e, w in list(workers.items()):
        try:
            rep = w.recv()
            rec(e).update(load_ms=rep["load_ms"], version=rep.get("version"), info=rep.get("info"))
            ctx["versions"][e] = rep.get("version")
        except EngineError as ex:
            rec(e)["error"] = "load: %s" % ex
            w.close()
            del workers[e]
    # Warm-ups one engine at a time, then each engine's output against PyTorch's.
    for e, w in list(workers.items()):
        try:
            if args.warmup:
                w.request({"op": "warmup", "n": args.warmup})
            path = os.path.join(outdir, "%s.%s.t%d.npy" % (name, e, threads))
            w.request({"op": "output", "path": path})
            rec(e)["check"] = compare(path, ref, args.tolerance)
        except EngineError as ex:
            rec(e)["error"] = "warm-up/output: %s" % ex
            w.close()
            del workers[e]
    if "xnn-lab" in engines and not rec("xnn-lab").get("error"):
        rec("xnn-lab")["check"] = ctx["xnn_check"].get(name)
        if not ctx["xnn_bench"]:
            rec("xnn-lab")["error"] = ("`xnn-lab bench` subcommand not in %s (not built yet?): "
                                       "no timing" % ctx["xnn"])
    active = [e for e in engines if e in workers or (e == "xnn-lab" and not rec(e).get("error"))]
    samples = {e: [] for e in active}
    n_rounds = math.ceil(args.runs / args.per_round)
    for r in range(n_rounds):
        k = min(args.per_round, args.runs - r * args.per_round)
        order = active[r % len(active):] + active[:r % len(active)] if active else []
        for e in order:
            if rec(e).get("error"):
                continue
            try:
                if e == "xnn-lab":
                    s, data = xnn_bench_round(ctx["xnn"], m["onnx"], threads, args.warmup, k,
                                              args.timeout)
                    rec(e)["bench"] = {key: data.get(key) for key in
                                       ("init_ms", "first_run_ms", "threads", "kernels",
                                        "opt_level", "warmup", "runs", "arena_bytes",
                                        "peak_rss_bytes", "latency_ms")}
                    if data.get("threads") not in (None, threads):
                        rec(e)["warning"] = "bench reported threads=%s" % data.get("threads")
                else:
                    s = workers[e].request({"op": "run", "k": k, "warmup": args.round_warmup})["samples_ms"]
                samples[e].extend(s)
            except EngineError as ex:
                rec(e)["error"] = "round %d: %s" % (r + 1, ex)
            if args.gap_ms > 0:
                time.sleep(args.gap_ms / 1000.0)
    for w in workers.values():
        w.close()
    for e in active:
        if not rec(e).get("error") and samples[e]:
            rec(e).update(stats(samples[e]))
            rec(e)["samples_ms"] = samples[e]


def fmt_ms(r, tol_flag=True):
    if r is None:
        return "-"
    if r.get("error") and "median_ms" not in r:
        return "ERR"
    if "median_ms" not in r:
        return "-"
    s = "%.2f" % r["median_ms"]
    chk = r.get("check")
    if tol_flag and chk is not None and not chk.get("ok"):
        s += "!"
    return s


def print_tables(args, res, summary, engines):
    head = ["model", "thr"] + engines + ["best-peer", "ratio", "xnn GFLOP/s", "%peak"]
    rows = []
    cvrows = []
    for s in summary:
        cells = [s["model"], str(s["threads"])]
        cv = [s["model"], str(s["threads"])]
        for e in engines:
            r = res.get((s["model"], s["threads"], e))
            cells.append(fmt_ms(r))
            cv.append("%.1f" % (100 * r["cv"]) if r and "cv" in r else "-")
        cells += [s.get("best_peer") or "-",
                  "%.2f" % s["ratio"] if s.get("ratio") else "-",
                  "%.1f" % s["gflops"] if s.get("gflops") else "-",
                  "%.1f%%" % (100 * s["peak_fraction"]) if s.get("peak_fraction") else "-"]
        rows.append(cells)
        cvrows.append(cv)

    def table(head, rows):
        w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        out = []
        for i, row in enumerate([head] + rows):
            out.append("  ".join(str(c).ljust(w[j]) if j == 0 else str(c).rjust(w[j])
                                 for j, c in enumerate(row)))
            if i == 0:
                out.append("-" * len(out[0]))
        return "\n".join(out)

    log()
    log("Median latency, ms (lower is better; '!' = output MISMATCH vs PyTorch, 'ERR' = cannot run,"
        " '-' = not run)")
    log("ratio = xnn-lab / best peer (< 1: xnn-lab faster); GFLOP/s = 2 x MACs / xnn-lab median")
    log(table(head, rows))
    log()
    log("Spread: coefficient of variation of the samples, % (high = noisy machine)")
    log(table(["model", "thr"] + engines, cvrows))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    t_start = time.time()
    for sub in ("", "fixtures", "converted", "outputs", "logs"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    logdir = os.path.join(args.out, "logs")
    try:
        import numpy as np  # the driver needs numpy: run it with Debian's python
    except ImportError:
        print("bench_peers: numpy missing in %s; run scripts/bench-peers.sh (uses %s)"
              % (sys.executable, DEBIAN_PY), file=sys.stderr)
        return 2

    xnn = find_xnn_lab(args.xnn_lab)
    if "xnn-lab" in args.engines and not xnn:
        print("bench_peers: no xnn-lab binary (build it, or pass --xnn-lab PATH)", file=sys.stderr)
        return 2
    per_core, cores, cpu_lines = cpu_peak(args.peak_gflops)
    blas_ok, blas_lines = blas_check() if any(e in args.engines for e in TORCH_ENGINES) else (True, [])
    load0 = os.getloadavg()
    log("bench-peers: models %s; threads %s; engines %s" % (",".join(args.models),
        ",".join(map(str, args.threads)), ",".join(args.engines)))
    log("  %d timed runs per engine in rounds of %d (+%d untimed), %d warm-ups, gap %.0f ms; "
        "load average %.2f %.2f %.2f" % (args.runs, args.per_round, args.round_warmup, args.warmup,
                                         args.gap_ms, *load0))
    for line in cpu_lines + blas_lines:
        log(line)
    xnn_bench = bool(xnn) and xnn_has_bench(xnn)
    if "xnn-lab" in args.engines:
        log("xnn-lab: %s (bench subcommand: %s)" % (xnn, "yes" if xnn_bench else "NO"))
        if not xnn_bench:
            log("!!! WARNING: this xnn-lab has no `bench` subcommand: xnn-lab is checked for "
                "correctness but not timed")

    res = {}  # (model, threads, engine) -> dict

    def recf(name, threads):
        def rec(e):
            return res.setdefault((name, threads, e), {"model": name, "threads": threads, "engine": e})
        return rec

    def fail_all(name, e, msg):
        for t in args.threads:
            recf(name, t)(e)["error"] = msg

    # Engines' environments.
    venv_engines = [e for e in args.engines if e in VENV_ENGINES]
    venv_py, venv_errs, pnnx = (None, {}, None)
    if venv_engines:
        venv_py, venv_errs, pnnx = ensure_venv(args, venv_engines, logdir)
    torch_err = None
    if any(e in args.engines for e in TORCH_ENGINES):
        cp = subprocess.run([DEBIAN_PY, "-c", "import torch, torchvision; print(torch.__version__)"],
                            capture_output=True, text=True)
        if cp.returncode != 0:
            torch_err = "Debian torch unusable: " + one_line(cp.stderr)

    fixtures, export_errs = export_fixtures(args.models, os.path.join(args.out, "fixtures"),
                                            args.timeout, logdir)
    ctx = {"xnn": xnn, "xnn_bench": xnn_bench, "venv_py": venv_py, "logdir": logdir,
           "refs": {}, "converted": {}, "xnn_check": {}, "versions": {}, "routes": {}}
    macs = {}
    for name in args.models:
        if name in export_errs:
            for e in args.engines:
                fail_all(name, e, export_errs[name])
            continue
        m = fixtures[name]
        ctx["refs"][name] = np.load(m["output"])
        for e in args.engines:
            err = venv_errs.get(e) or (torch_err if e in TORCH_ENGINES else None)
            if err:
                fail_all(name, e, err)
        # MACs and xnn-lab's own output.
        info = xnn_inspect(xnn, m["onnx"]) if xnn else {}
        if info.get("macs"):
            macs[name] = (int(info["macs"]), "xnn-lab inspect")
        else:
            try:
                macs[name] = (onnx_macs(m["onnx"]), "ONNX graph (Conv/Gemm/MatMul)")
            except Exception as ex:  # noqa: BLE001
                log("  %s: cannot count MACs: %s" % (name, one_line(str(ex))))
        if "xnn-lab" in args.engines:
            in_name = ((info.get("inputs") or [{}])[0].get("name")) or "input"
            odir = os.path.join(args.out, "outputs", "xnn-lab-" + name)
            shutil.rmtree(odir, ignore_errors=True)
            rc, text = _run_tool([xnn, "infer", m["onnx"], "-i", "%s=%s" % (in_name, m["input"]),
                                  "-d", odir], os.path.join(logdir, "xnn-infer-%s.log" % name),
                                 args.timeout)
            npys = sorted(f for f in os.listdir(odir) if f.endswith(".npy")) if os.path.isdir(odir) else []
            if rc != 0 or not npys:
                fail_all(name, "xnn-lab", "xnn-lab infer failed (rc %s): %s" % (rc, one_line(text)))
            else:
                pick = "output.npy" if "output.npy" in npys else npys[0]
                ctx["xnn_check"][name] = compare(os.path.join(odir, pick), ctx["refs"][name],
                                                 args.tolerance)
        # Conversions, once per model.
        conv = {}
        for e, fn in (("mnn", convert_mnn), ("ncnn", convert_ncnn)):
            if e not in args.engines or venv_errs.get(e):
                continue
            try:
                log("  converting %s for %s ..." % (name, e))
                extra = (pnnx,) if e == "ncnn" else ()
                files, route = fn(args, m, os.path.join(args.out, "converted"), logdir, *extra)
                conv.update(files)
                ctx["routes"]["%s/%s" % (e, name)] = route
            except EngineError as ex:
                fail_all(name, e, "convert: %s" % ex)
        ctx["converted"][name] = conv
        for t in args.threads:
            log("timing %s at %d thread(s) ..." % (name, t))
            run_block(args, ctx, name, m, t, args.engines, recf(name, t))

    # Summary per model/threads.
    summary = []
    for name in args.models:
        for t in args.threads:
            s = {"model": name, "threads": t}
            peers = [res[(name, t, e)] for e in args.engines
                     if e != "xnn-lab" and (name, t, e) in res and "median_ms" in res[(name, t, e)]
                     and (res[(name, t, e)].get("check") or {}).get("ok")]
            if peers:
                best = min(peers, key=lambda r: r["median_ms"])
                s["best_peer"], s["best_peer_ms"] = best["engine"], best["median_ms"]
            x = res.get((name, t, "xnn-lab"))
            if x and "median_ms" in x:
                s["xnn_ms"] = x["median_ms"]
                if "best_peer_ms" in s:
                    s["ratio"] = x["median_ms"] / s["best_peer_ms"]
                if name in macs:
                    s["macs"], s["macs_source"] = macs[name]
                    s["gflops"] = 2.0 * s["macs"] / (x["median_ms"] / 1e3) / 1e9
                    if per_core:
                        s["peak_gflops"] = per_core * min(t, cores)
                        s["peak_fraction"] = s["gflops"] / s["peak_gflops"]
            summary.append(s)

    print_tables(args, res, summary, args.engines)
    if macs:
        log()
        log("MACs: " + "; ".join("%s %.3f G (%s)" % (n, v / 1e9, src) for n, (v, src) in macs.items()))
    log()
    log("Cannot run (one line each):")
    seen, nerr = set(), 0
    for (name, t, e), r in sorted(res.items(), key=lambda kv: (args.models.index(kv[0][0]), kv[0][1],
                                                               ALL_ENGINES.index(kv[0][2]))):
        if not r.get("error"):
            continue
        if name in export_errs:  # one line for the model, not one per engine
            e, err, when = "all engines", export_errs[name], "all threads"
        else:
            err = r["error"]
            same = all((res.get((name, tt, e)) or {}).get("error") == err for tt in args.threads)
            when = "all threads" if same else "%d thr" % t
        if (name, e, err) in seen:
            continue
        seen.add((name, e, err))
        log("  %-20s %-12s %s: %s" % (name, e, when, err))
        nerr += 1
    if not nerr:
        log("  (none)")
    log()
    log("Correctness vs PyTorch eager (NAME.output.npy); rel = max|y-ref| / max|ref|, MISMATCH if > %g:"
        % args.tolerance)
    for (name, t, e), r in sorted(res.items(), key=lambda kv: (args.models.index(kv[0][0]), kv[0][1],
                                                               ALL_ENGINES.index(kv[0][2]))):
        c = r.get("check")
        if not c:
            continue
        if e == "xnn-lab" and t != args.threads[0]:
            continue  # one `xnn-lab infer` per model
        what = "%-20s %-12s %s" % (name, e, "(infer)" if e == "xnn-lab" else "%d thr   " % t)
        if "max_abs" in c:
            log("  %s max_abs %.3g  rel %.3g  %s" % (what, c["max_abs"], c["rel"],
                                                     "ok" if c["ok"] else "MISMATCH"))
        else:
            log("  %s MISMATCH: %s" % (what, c.get("error")))
    if ctx["routes"]:
        log()
        log("Conversions: " + "; ".join("%s %s" % kv for kv in sorted(ctx["routes"].items())))
    if ctx["versions"]:
        log("Versions: " + "; ".join("%s" % v for v in sorted(set(filter(None, ctx["versions"].values())))))
    load1 = os.getloadavg()
    log("Load average at end %.2f %.2f %.2f; wall time %.0f s" % (*load1, time.time() - t_start))

    # Verdict.
    problems = ["%s: %s" % (name, export_errs[name]) for name in args.models if name in export_errs]
    for name in args.models:
        if name in export_errs:
            continue
        c = ctx["xnn_check"].get(name)
        if "xnn-lab" in args.engines:
            if c is None:
                problems.append("%s: xnn-lab produced no output" % name)
            elif not c.get("ok"):
                problems.append("%s: xnn-lab output MISMATCH vs PyTorch (%s)"
                                % (name, c.get("error") or "rel %.3g" % c["rel"]))
            for t in args.threads:
                r = res.get((name, t, "xnn-lab"), {})
                if r.get("error") and xnn_bench:
                    problems.append("%s %d thr: xnn-lab: %s" % (name, t, r["error"]))
        if args.self_test:
            for e in TORCH_ENGINES:
                for t in args.threads:
                    r = res.get((name, t, e), {})
                    if e in args.engines and (r.get("error") or not (r.get("check") or {}).get("ok")):
                        problems.append("%s %d thr: %s: %s" % (name, t, e, r.get("error") or "mismatch"))

    doc = {"meta": {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": platform.node(),
                    "cpu": cpu_lines, "cores": cores, "peak_gflops_per_core": per_core,
                    "blas": blas_lines, "openblas_pthread": blas_ok,
                    "loadavg_start": load0, "loadavg_end": load1, "xnn_lab": xnn,
                    "xnn_lab_bench": xnn_bench, "versions": ctx["versions"],
                    "conversions": ctx["routes"],
                    "args": {k: v for k, v in vars(args).items()}},
           "macs": {n: {"macs": v, "source": src} for n, (v, src) in macs.items()},
           "results": list(res.values()), "summary": summary, "problems": problems}
    for path in filter(None, [os.path.join(args.out, "bench-peers.json"), args.json]):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)
    log("Results: %s%s" % (os.path.join(args.out, "bench-peers.json"),
                           " and " + args.json if args.json else ""))
    if args.self_test and "xnn-lab" in args.engines and not xnn_bench:
        log("!!! self-test: xnn-lab was not timed (no `bench` subcommand); only its output was checked")
    if problems:
        log()
        log("FAILED:")
        for p in problems:
            log("  " + p)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
