#!/usr/bin/env python3
"""Where the time goes, Tessera beside onnxruntime, op type by op type.

For each model (shared/models/NAME, fed its test_data_set_0 inputs), at one thread count:
Tessera's per-op profile (`tessera bench --profile-json`: tract's optimized plan timed node by
node) and onnxruntime's own profiler (`SessionOptions.enable_profiling`, kernel time per node),
each summed per op type and per run, printed as two side-by-side columns (slowest first).
At more than one thread, Tessera's nodes run on the executor its runs chose (the pool once the
calibration picked it), one node after another, so the columns show which ops gain from threads.
Tessera's op types are tract's optimized ops (a Conv is an `OptMatMul` after im2col, for
instance); onnxruntime's are its kernels' ONNX op types (after its own fusions: `FusedConv`...).

With `--nodes N`, also the N slowest nodes of each, side by side (onnxruntime's with their input
shapes, which name the convolution Tessera's node stands for).

Usage: bench/op_profile_vs_ort.py --models light_inception_v1,light_bvlc_alexnet [--threads 1]
       [--runs 20] [--tessera target/release/tessera] [--top 12] [--nodes 0]
Needs numpy, onnx and onnxruntime (bench/requirements.txt).
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

REPO = Path(__file__).resolve().parent.parent


def inputs_of(model_dir):
    files = sorted(glob.glob(str(model_dir / "test_data_set_0" / "input_*.pb")))
    tensors = [onnx.load_tensor(f) for f in files]
    return files, tensors


def tessera_profile(binary, model_dir, threads, runs):
    files, tensors = inputs_of(model_dir)
    args = sum([["-i", f"{t.name}={f}"] for f, t in zip(files, tensors)], [])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profile.json")
        subprocess.run([binary, "bench", str(model_dir / "model.onnx"), "--threads", str(threads),
                        "--runs", str(runs), "--profile-json", out, "--json"] + args,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        profile = json.load(open(out))
    per_op = {o["op"]: o["ms_per_run"] for o in profile["per_op"]}
    per_node = [(n["ms_per_run"], f'{n["op"]} {n["node"]}') for n in profile["per_node"]]
    return per_op, per_node


def ort_profile(model_dir, threads, runs):
    files, tensors = inputs_of(model_dir)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(str(model_dir / "model.onnx"), options,
                                       providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        feeds = {n: numpy_helper.to_array(t) for n, t in zip(names, tensors)}
        for _ in range(runs):
            session.run(None, feeds)
        events = json.load(open(session.end_profiling()))
    per_op = collections.defaultdict(float)
    per_node = collections.defaultdict(float)
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            ms, node = event["dur"] / 1000.0 / runs, event["args"]
            per_op[node["op_name"]] += ms
            shapes = [list(t.values())[0] for t in node.get("input_type_shape", [])]
            per_node[f'{node["op_name"]} {event["name"].removesuffix("_kernel_time")} {shapes}'] += ms
    return dict(per_op), [(ms, name) for name, ms in per_node.items()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, help="comma-separated names under shared/models")
    ap.add_argument("--models-dir", type=Path, default=REPO.parent / "shared" / "models")
    ap.add_argument("--tessera", default=str(REPO / "target" / "release" / "tessera"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--nodes", type=int, default=0, help="also list the N slowest nodes of each")
    args = ap.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# per-op time, ms per run: {cpu}, {args.threads} thread(s), {args.runs} runs, onnxruntime {ort.__version__}\n")
    for name in args.models.split(","):
        model_dir = args.models_dir / name
        ours, our_nodes = tessera_profile(args.tessera, model_dir, args.threads, args.runs)
        theirs, their_nodes = ort_profile(model_dir, args.threads, args.runs)
        print(f"## {name}: tessera {sum(ours.values()):.2f} ms, onnxruntime {sum(theirs.values()):.2f} ms "
              f"(sums of node times)\n")
        print("| tessera op | ms | onnxruntime op | ms |\n| --- | ---: | --- | ---: |")
        a = sorted(ours.items(), key=lambda kv: -kv[1])[: args.top]
        b = sorted(theirs.items(), key=lambda kv: -kv[1])[: args.top]
        for i in range(max(len(a), len(b))):
            left = f"{a[i][0]} | {a[i][1]:.2f}" if i < len(a) else " | "
            right = f"{b[i][0]} | {b[i][1]:.2f}" if i < len(b) else " | "
            print(f"| {left} | {right} |")
        print()
        if args.nodes:
            a, b = (sorted(nodes, reverse=True)[: args.nodes] for nodes in (our_nodes, their_nodes))
            print("| tessera node | ms | onnxruntime node (input shapes) | ms |\n| --- | ---: | --- | ---: |")
            for i in range(max(len(a), len(b))):
                left = f"{a[i][1]} | {a[i][0]:.3f}" if i < len(a) else " | "
                right = f"{b[i][1]} | {b[i][0]:.3f}" if i < len(b) else " | "
                print(f"| {left} | {right} |")
            print()


if __name__ == "__main__":
    main()
