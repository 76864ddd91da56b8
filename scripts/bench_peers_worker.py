"""Persistent timing worker for scripts/bench_peers.py (one engine, one model, one thread count).

Not meant to be run by hand. The driver starts one worker per (engine, model, threads):

    VENV/bin/python   bench_peers_worker.py ENGINE THREADS    (ort, mnn, ncnn, openvino, opencv)
    /usr/bin/python3  bench_peers_worker.py ENGINE THREADS    (torch-eager, torch-ts)

Thread counts are fixed at process start (some runtimes, torch in particular, can set them
only once), so a worker never changes its thread count. It then answers JSON-line requests
on stdin, one JSON-line reply each on stdout:

    {"op": "load", "model": {...}}     -> {"ok": true, "load_ms": F, "version": S, "info": S}
    {"op": "warmup", "n": N}           -> {"ok": true}
    {"op": "run", "k": K, "warmup": W} -> {"ok": true, "samples_ms": [K floats]}
    {"op": "output", "path": P}        -> {"ok": true, "shape": [...]}   (one inference, saved as .npy)
    {"op": "quit"}                     -> exits

Any failure is answered as {"ok": false, "error": "one line"}; the driver then drops the
engine for that model/thread count. One timed sample = one inference call as a user makes
it: feeding the input, running, and reading the output back into a numpy array (where the
API separates these steps); per-call allocations that the API lets one hoist are hoisted.

C libraries print to stdout (MNN does); to keep the reply channel clean, the real stdout is
duplicated to a private descriptor at start and file descriptor 1 is pointed at stderr.

`bench_peers_worker.py --trace NAME SEED CALIB SIZE OUT.pt` (Debian python) writes a traced
TorchScript of the seeded torchvision model: the fallback input for pnnx.
"""

import json
import os
import sys
import time
import traceback


def _one_line(e):
    s = "%s: %s" % (type(e).__name__, e)
    s = " ".join(s.split())
    return s[:400]


class Engine:
    version = ""
    info = ""

    def __init__(self, threads):
        self.threads = threads

    def load(self, m):  # m: the model dict sent by the driver
        raise NotImplementedError

    def run(self):  # one inference on self.x; returns the output as a numpy array
        raise NotImplementedError


class Ort(Engine):
    def load(self, m):
        import numpy as np
        import onnxruntime as ort
        self.version = "onnxruntime " + ort.__version__
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(m["onnx"], so, providers=["CPUExecutionProvider"])
        self.in_name = self.sess.get_inputs()[0].name
        self.x = np.load(m["input"])
        self.info = "intra_op_num_threads=%d inter_op_num_threads=1 ORT_SEQUENTIAL ORT_ENABLE_ALL" % self.threads

    def run(self):
        return self.sess.run(None, {self.in_name: self.x})[0]


class Mnn(Engine):
    def load(self, m):
        import numpy as np
        import MNN
        self.MNN = MNN
        try:
            self.version = "MNN " + MNN.version()
        except Exception:
            self.version = "MNN"
        self.x = np.ascontiguousarray(np.load(m["input"]))
        self.it = MNN.Interpreter(m["mnn"])
        # precision 'high': plain FP32 (no bf16/fp16 storage), like every other engine here.
        self.sess = self.it.createSession({"backend": "CPU", "numThread": self.threads,
                                           "precision": "high"})
        self.inp = self.it.getSessionInput(self.sess)
        self.host_in = MNN.Tensor(self.x.shape, MNN.Halide_Type_Float, self.x,
                                  MNN.Tensor_DimensionType_Caffe)
        self.out = self.it.getSessionOutput(self.sess)
        shape = self.out.getShape()
        self.host_out = MNN.Tensor(shape, MNN.Halide_Type_Float,
                                   np.zeros(shape, np.float32), MNN.Tensor_DimensionType_Caffe)
        self.info = "session numThread=%d precision=high" % self.threads

    def run(self):
        import numpy as np
        self.inp.copyFrom(self.host_in)
        self.it.runSession(self.sess)
        self.out.copyToHostTensor(self.host_out)
        return np.array(self.host_out.getNumpyData(), copy=True)


class Ncnn(Engine):
    def load(self, m):
        import numpy as np
        import ncnn
        self.ncnn = ncnn
        self.version = "ncnn " + getattr(ncnn, "__version__", "?")
        net = ncnn.Net()
        o = net.opt
        o.num_threads = self.threads
        o.use_vulkan_compute = False
        # FP32 comparison: no fp16/bf16 storage or arithmetic (Winograd/sgemm stay on).
        o.use_fp16_storage = False
        o.use_fp16_packed = False
        o.use_fp16_arithmetic = False
        o.use_bf16_storage = False
        if net.load_param(m["ncnn_param"]) != 0:
            raise RuntimeError("ncnn load_param failed: " + m["ncnn_param"])
        if net.load_model(m["ncnn_bin"]) != 0:
            raise RuntimeError("ncnn load_model failed: " + m["ncnn_bin"])
        self.net = net
        self.in_name = net.input_names()[0]
        self.out_name = net.output_names()[0]
        x = np.load(m["input"])
        if x.shape[0] != 1:
            raise RuntimeError("ncnn path supports batch 1 only, got %s" % (x.shape,))
        self.x = np.ascontiguousarray(x[0])
        self.out_shape = tuple(m.get("output_shape") or ())
        self.info = "opt.num_threads=%d fp32 (fp16/bf16 off) blobs %s->%s" % (
            self.threads, self.in_name, self.out_name)

    def run(self):
        import numpy as np
        ex = self.net.create_extractor()
        ex.input(self.in_name, self.ncnn.Mat(self.x))
        ret, out = ex.extract(self.out_name)
        if ret != 0:
            raise RuntimeError("ncnn extract returned %d" % ret)
        y = np.array(out)
        if self.out_shape and y.size == int(np.prod(self.out_shape)):
            y = y.reshape(self.out_shape)
        return y


class OpenVino(Engine):
    def load(self, m):
        import numpy as np
        import openvino as ov
        self.version = "openvino " + ov.__version__
        core = ov.Core()
        cfg = {"INFERENCE_NUM_THREADS": self.threads, "PERFORMANCE_HINT": "LATENCY",
               "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "f32"}
        self.compiled = core.compile_model(m["onnx"], "CPU", cfg)
        self.req = self.compiled.create_infer_request()
        self.x = np.load(m["input"])
        self.info = "INFERENCE_NUM_THREADS=%d PERFORMANCE_HINT=LATENCY NUM_STREAMS=1 f32" % self.threads

    def run(self):
        import numpy as np
        self.req.infer({0: self.x})
        return np.array(self.req.get_output_tensor(0).data, copy=True)


class OpenCv(Engine):
    def load(self, m):
        import numpy as np
        import cv2
        cv2.setNumThreads(self.threads)
        self.cv2 = cv2
        self.version = "opencv " + cv2.__version__
        self.net = cv2.dnn.readNetFromONNX(m["onnx"])
        self.net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        self.net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
        self.x = np.load(m["input"])
        self.info = "cv2.setNumThreads(%d) (getNumThreads=%d) DNN_BACKEND_OPENCV" % (
            self.threads, cv2.getNumThreads())

    def run(self):
        import numpy as np
        self.net.setInput(self.x)
        return np.array(self.net.forward(), copy=True)


def _torch_setup(threads):
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    return torch


def _build_torch_model(m):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_torchvision  # the exporter's own constructor: same seed, same BN calibration
    size = int(m["input_shape"][-1])
    return export_torchvision.build_model(m["name"], int(m["seed"]), int(m["bn_calibration"]), size)


class TorchEager(Engine):
    def load(self, m):
        import numpy as np
        torch = _torch_setup(self.threads)
        self.torch = torch
        self.version = "torch " + torch.__version__
        self.model = _build_torch_model(m)
        self.x = torch.from_numpy(np.load(m["input"]))
        self.info = "eager, inference_mode, set_num_threads(%d) set_num_interop_threads(1)" % self.threads

    def run(self):
        with self.torch.inference_mode():
            return self.model(self.x).numpy()


class TorchTs(TorchEager):
    def load(self, m):
        super().load(m)
        torch = self.torch
        with torch.no_grad():
            try:
                scripted = torch.jit.script(self.model)
                how = "script"
            except Exception as e:  # not scriptable: trace instead
                sys.stderr.write("torch.jit.script failed (%s); tracing\n" % _one_line(e))
                scripted = torch.jit.trace(self.model, self.x)
                how = "trace"
            self.model = torch.jit.freeze(scripted.eval())
        self.info = "torch.jit.freeze(torch.jit.%s), set_num_threads(%d) set_num_interop_threads(1)" % (
            how, self.threads)

    def run(self):
        with self.torch.no_grad():
            return self.model(self.x).numpy()


ENGINES = {"ort": Ort, "mnn": Mnn, "ncnn": Ncnn, "openvino": OpenVino, "opencv": OpenCv,
           "torch-eager": TorchEager, "torch-ts": TorchTs}


def trace_main(argv):
    name, seed, calib, size, out = argv
    torch = _torch_setup(1)
    model = _build_torch_model({"name": name, "seed": seed, "bn_calibration": calib,
                                "input_shape": [1, 3, int(size), int(size)]})
    with torch.no_grad():
        traced = torch.jit.trace(model, torch.zeros(1, 3, int(size), int(size)))
    traced.save(out)
    return 0


def main(argv):
    if argv and argv[0] == "--trace":
        return trace_main(argv[1:])
    if len(argv) != 2 or argv[0] not in ENGINES:
        sys.stderr.write("usage: bench_peers_worker.py {%s} THREADS\n" % ",".join(ENGINES))
        return 2
    # Private reply channel; fd 1 (what C libraries write to) goes to stderr.
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    eng = ENGINES[argv[0]](int(argv[1]))
    loaded = False

    def answer(obj):
        reply.write(json.dumps(obj) + "\n")
        reply.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "quit":
                answer({"ok": True})
                return 0
            if op == "load":
                t0 = time.perf_counter()
                eng.load(req["model"])
                loaded = True
                answer({"ok": True, "load_ms": (time.perf_counter() - t0) * 1e3,
                        "version": eng.version, "info": eng.info, "pid": os.getpid()})
                continue
            if not loaded:
                raise RuntimeError("no model loaded")
            if op == "warmup":
                for _ in range(int(req.get("n", 1))):
                    eng.run()
                answer({"ok": True})
            elif op == "run":
                for _ in range(int(req.get("warmup", 0))):
                    eng.run()
                samples = []
                clock = time.perf_counter_ns
                for _ in range(int(req["k"])):
                    t0 = clock()
                    eng.run()
                    samples.append((clock() - t0) / 1e6)
                answer({"ok": True, "samples_ms": samples})
            elif op == "output":
                import numpy as np
                y = np.ascontiguousarray(np.asarray(eng.run(), dtype=np.float32))
                np.save(req["path"], y)
                answer({"ok": True, "shape": list(y.shape)})
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            answer({"ok": False, "error": _one_line(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
