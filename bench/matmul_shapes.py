#!/usr/bin/env python3
"""Matrix products alone, Tessera's cpu backend beside onnxruntime, on ResNet-50's convolution
shapes (M output channels, K = input channels x kernel taps, N output positions).

Each shape becomes a one-node ONNX `MatMul` model (constant M x K weights times a K x N input);
both runtimes run it single-threaded in this script, one after the other, and the table gives
ms per run and GFLOP/s. This isolates the matrix-product kernels from im2col, epilogues and the
rest of a model (bench/op_profile_vs_ort.py shows those per op type).

    python bench/matmul_shapes.py --tessera target/release/tessera
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from compare_onnxruntime import cpu_model  # this folder's side-by-side script

SHAPES = [  # (M, K, N): ResNet-50's convolutions, 1x1 and 3x3 (as im2col), stage by stage
    (64, 64, 3136), (64, 576, 3136), (256, 64, 3136), (128, 1152, 784), (512, 128, 784),
    (256, 2304, 196), (1024, 256, 196), (512, 4608, 49), (2048, 512, 49), (64, 147, 12544),
]


def model(m, k, n, path):
    weights = numpy_helper.from_array(np.random.default_rng(0).random((m, k), np.float32), "A")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"])], "matmul",
        [helper.make_tensor_value_info("B", TensorProto.FLOAT, [k, n])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, [m, n])], [weights])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def ort_ms(path, k, n, runs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    b = np.random.default_rng(1).random((k, n), np.float32)
    for _ in range(3):
        session.run(None, {"B": b})
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, {"B": b})
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def tessera_ms(binary, path, runs):
    out = subprocess.run([binary, "bench", path, "--threads", "1", "--runs", str(runs), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tessera", default="target/release/tessera")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical cores); onnxruntime {ort.__version__}; 1 thread\n")
    print("| M x K x N | tessera ms | onnxruntime ms | tessera GFLOP/s | onnxruntime GFLOP/s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    totals = [0.0, 0.0]
    with tempfile.TemporaryDirectory() as tmp:
        for m, k, n in SHAPES:
            path = os.path.join(tmp, f"mm_{m}_{k}_{n}.onnx")
            model(m, k, n, path)
            t, o = tessera_ms(args.tessera, path, args.runs), ort_ms(path, k, n, args.runs)
            totals[0] += t
            totals[1] += o
            flops = 2 * m * k * n / 1e6
            print(f"| {m} x {k} x {n} | {t:.3f} | {o:.3f} | {flops / t:.0f} | {flops / o:.0f} | {t / o:.2f} |")
    print(f"| all | {totals[0]:.2f} | {totals[1]:.2f} | | | {totals[0] / totals[1]:.2f} |")


if __name__ == "__main__":
    main()
