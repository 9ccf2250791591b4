#!/usr/bin/env python3
"""Each distinct convolution of a model, alone, Tessera beside onnxruntime.

For each model (shared/models/NAME), every `Conv` node's geometry (input shape after shape
inference, output channels, kernel, strides, pads, dilations, group) is made into a model of its
own: that `Conv` with random weights and bias, then a `Relu` (what most of them are followed by,
and what both runtimes fuse). Each distinct geometry is timed on both runtimes, interleaved over
`--rounds` rounds of `--runs` runs each (Tessera's `bench`, onnxruntime's `InferenceSession.run`
timed in this process), at one thread count; the minimum over all of them is kept, this VM's
noise being in the slow runs. Printed: per geometry its count in the model, both times, the ratio
and the work (multiply-adds); then per model the sum over its convolutions weighted by their
counts, and the same per class of geometry (kernel size and plane size), so that one sees which
convolutions hold a model back.

Usage: bench/conv_shapes_vs_ort.py --models light_inception_v2,light_squeezenet [--threads 1]
       [--rounds 4] [--runs 30] [--tessera target/release/tessera] [--json-out FILE]
Needs numpy, onnx and onnxruntime (bench/requirements.txt).
"""
import argparse
import collections
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper, shape_inference

from compare_onnxruntime import cpu_model

REPO = Path(__file__).resolve().parent.parent


def attribute(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return default


def conv_geometries(model_path):
    """(geometry, count) for each distinct Conv of the model; geometry is a hashable tuple."""
    model = shape_inference.infer_shapes(onnx.load(str(model_path)))
    graph = model.graph
    shapes = {}
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
        if dims and all(d > 0 for d in dims):
            shapes[info.name] = dims
    # Weights are initializers, or (the light models) made by `ConstantOfShape`.
    weights = dict(shapes)
    weights.update({init.name: list(init.dims) for init in graph.initializer})
    counts = collections.Counter()
    for node in graph.node:
        if node.op_type != "Conv" or node.input[0] not in shapes or node.input[1] not in weights:
            continue
        x, w = shapes[node.input[0]], weights[node.input[1]]
        if len(x) != 4:
            continue
        kernel = tuple(w[2:])
        geometry = (
            tuple(x),
            w[0],
            kernel,
            tuple(attribute(node, "strides", [1, 1])),
            tuple(attribute(node, "pads", [0, 0, 0, 0])),
            tuple(attribute(node, "dilations", [1, 1])),
            attribute(node, "group", 1),
            attribute(node, "auto_pad", b"NOTSET"),
        )
        counts[geometry] += 1
    return counts


def conv_model(geometry, path):
    x, out_channels, kernel, strides, pads, dilations, group, auto_pad = geometry
    rng = np.random.default_rng(0)
    w = rng.random((out_channels, x[1] // group, *kernel), dtype=np.float32) - 0.5
    b = rng.random(out_channels, dtype=np.float32)
    attrs = dict(kernel_shape=list(kernel), strides=list(strides), dilations=list(dilations), group=group)
    if isinstance(auto_pad, bytes) and auto_pad != b"NOTSET":
        attrs["auto_pad"] = auto_pad.decode()
    else:
        attrs["pads"] = list(pads)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return (rng.random(x, dtype=np.float32) - 0.5).astype(np.float32)


def macs(geometry):
    x, out_channels, kernel, strides, pads, dilations, group, _ = geometry
    out_h = (x[2] + pads[0] + pads[2] - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    out_w = (x[3] + pads[1] + pads[3] - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    return x[0] * out_channels * out_h * out_w * (x[1] // group) * kernel[0] * kernel[1]


def describe(geometry):
    x, out_channels, kernel, strides, pads, dilations, group, _ = geometry
    text = f"{x[1]}->{out_channels} {kernel[0]}x{kernel[1]} on {x[2]}x{x[3]}"
    if strides != (1, 1):
        text += f" s{strides[0]}"
    if group != 1:
        text += f" g{group}"
    if dilations != (1, 1):
        text += f" d{dilations[0]}"
    return text


def conv_class(geometry):
    x, _, kernel, strides, _, _, group, _ = geometry
    if group != 1:
        kind = "depthwise" if group == x[1] else "grouped"
    else:
        kind = f"{kernel[0]}x{kernel[1]}"
    plane = x[2] * x[3]
    size = "small (<=16x16)" if plane <= 256 else "medium (<=32x32)" if plane <= 1024 else "large"
    return f"{kind}, {size}" + (", strided" if strides != (1, 1) else "")


def time_tessera(binary, model, data, threads, runs):
    out = subprocess.run(
        [binary, "bench", str(model), "--threads", str(threads), "--json",
         "-i", f"x={data}", "--runs", str(runs), "--warmup", "3"],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)["min_ms"]


def time_ort(session, x, runs):
    for _ in range(3):
        session.run(None, {"x": x})
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, {"x": x})
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, help="comma-separated names under shared/models")
    ap.add_argument("--models-dir", type=Path, default=REPO.parent / "shared" / "models")
    ap.add_argument("--tessera", default=str(REPO / "target" / "release" / "tessera"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; {args.threads} thread(s); onnxruntime {ort.__version__}")
    report = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.models.split(","):
            counts = conv_geometries(args.models_dir / name / "model.onnx")
            rows = []
            for i, (geometry, count) in enumerate(sorted(counts.items(), key=lambda gc: -macs(gc[0]) * gc[1])):
                model = Path(scratch) / f"conv{i}.onnx"
                x = conv_model(geometry, model)
                data = Path(scratch) / f"conv{i}.npy"
                np.save(data, x)
                options = ort.SessionOptions()
                options.intra_op_num_threads = args.threads
                session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
                tessera_ms, ort_ms = float("inf"), float("inf")
                for _ in range(args.rounds):
                    tessera_ms = min(tessera_ms, time_tessera(args.tessera, model, data, args.threads, args.runs))
                    ort_ms = min(ort_ms, time_ort(session, x, args.runs))
                rows.append(dict(conv=describe(geometry), kind=conv_class(geometry), count=count,
                                 macs=macs(geometry), tessera_ms=tessera_ms, ort_ms=ort_ms))
                print(f"{name:24s} {describe(geometry):34s} x{count:<3d} tessera {tessera_ms:8.3f} ms  "
                      f"onnxruntime {ort_ms:8.3f} ms  x{tessera_ms / ort_ms:4.2f}  "
                      f"{macs(geometry) / ort_ms / 1e6:5.1f} | {macs(geometry) / tessera_ms / 1e6:5.1f} GMAC/s", flush=True)
            total_t = sum(r["tessera_ms"] * r["count"] for r in rows)
            total_o = sum(r["ort_ms"] * r["count"] for r in rows)
            print(f"{name}: all convolutions, each alone, times their count: tessera {total_t:.2f} ms, "
                  f"onnxruntime {total_o:.2f} ms, x{total_t / max(total_o, 1e-9):.2f}")
            by_kind = collections.defaultdict(lambda: [0.0, 0.0, 0])
            for r in rows:
                k = by_kind[r["kind"]]
                k[0] += r["tessera_ms"] * r["count"]
                k[1] += r["ort_ms"] * r["count"]
                k[2] += r["count"]
            for kind, (t, o, n) in sorted(by_kind.items(), key=lambda kv: kv[1][1] - kv[1][0]):
                print(f"    {kind:34s} x{n:<3d} tessera {t:8.2f} ms  onnxruntime {o:8.2f} ms  x{t / max(o, 1e-9):4.2f}  (+{t - o:.2f} ms)")
            report[name] = rows
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
