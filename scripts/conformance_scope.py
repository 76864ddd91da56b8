#!/usr/bin/python3
"""Lists the ONNX conformance tests that are in xnn-lab's scope: every op in the issue's op set
and every tensor dtype among f32, f16, i8, u8, i32, i64, bool (inputs, outputs, initialisers).
Usage: /usr/bin/python3 scripts/conformance_scope.py [DATA_DIR] > in_scope.txt"""
import os
import sys

import onnx

OPS = set("""Conv ConvTranspose Gemm MatMul BatchNormalization Relu LeakyRelu PRelu Clip Sigmoid Tanh
HardSigmoid HardSwish Elu Selu Softplus Softsign Erf Add Sub Mul Div Pow Sqrt Exp Log Abs Neg Reciprocal
Floor Ceil Min Max Sum Mean MaxPool AveragePool GlobalAveragePool GlobalMaxPool Flatten Reshape Transpose
Concat Split Slice Squeeze Unsqueeze Gather Shape Constant ConstantOfShape Identity Dropout Softmax
LogSoftmax ReduceMean ReduceSum ReduceMax ReduceMin Pad Resize Upsample Cast Expand Where Equal Less
Greater Not And Or ArgMax Tile DepthToSpace SpaceToDepth LayerNormalization""".split())
T = onnx.TensorProto
DTYPES = {T.FLOAT, T.FLOAT16, T.INT8, T.UINT8, T.INT32, T.INT64, T.BOOL}


def graph_ok(g):
    for n in g.node:
        if n.domain not in ("", "ai.onnx") or n.op_type not in OPS:
            return False, "op " + n.op_type
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type not in DTYPES:
                return False, "dtype in attribute"
            if a.type == onnx.AttributeProto.INT and a.name == "to" and n.op_type == "Cast" and a.i not in DTYPES:
                return False, "cast target"
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        t = vi.type
        if t.HasField("tensor_type"):
            if t.tensor_type.elem_type not in DTYPES:
                return False, "dtype"
        else:
            return False, "non-tensor type"
    for init in g.initializer:
        if init.data_type not in DTYPES:
            return False, "dtype"
    return True, ""


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/libonnx-testdata/data"
    for suite in sorted(os.listdir(root)):
        sdir = os.path.join(root, suite)
        if not os.path.isdir(sdir):
            continue
        for test in sorted(os.listdir(sdir)):
            path = os.path.join(sdir, test, "model.onnx")
            if not os.path.exists(path):
                continue
            try:
                m = onnx.load(path)
            except Exception:
                continue
            ok, why = graph_ok(m.graph)
            if ok:
                print(f"{suite}/{test}")


if __name__ == "__main__":
    main()
