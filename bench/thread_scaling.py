#!/usr/bin/env python3
"""Thread scaling, measured fairly: 1 vs 2 threads (or any counts) in ONE process per runtime,
one session per thread count, timed runs interleaved round by round, so the noise of a shared
machine hits every count alike (separate processes minutes apart differ by up to 60% here).

Tessera: `tessera bench MODEL --scaling 1,2 --json`. onnxruntime: a child process with one
InferenceSession per thread count, interleaved the same way. Prints, per model, the median at
each count and the ratio to the first count, and lists models slower with more threads.

    python3 bench/thread_scaling.py [--tessera target/release/tessera] [--models a,b] [--runs 60]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_onnxruntime import prepare_inputs, read_manifest, cpu_model, ort_version  # noqa: E402


def ort_scaling(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--counts")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--input", action="append", default=[])
    a = ap.parse_args(argv)
    import numpy as np
    import onnxruntime as ort
    feeds = {s.split("=", 1)[0]: np.load(s.split("=", 1)[1]) for s in a.input}
    counts = [int(c) for c in a.counts.split(",")]
    sessions = []
    for n in counts:
        so = ort.SessionOptions()
        so.intra_op_num_threads = n
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sessions.append(ort.InferenceSession(a.model, sess_options=so, providers=["CPUExecutionProvider"]))
    for s in sessions:
        for _ in range(a.warmup + 1):
            s.run(None, feeds)
    times = [[] for _ in sessions]
    for r in range(a.runs):
        for off in range(len(sessions)):
            i = (r + off) % len(sessions)
            t = time.perf_counter()
            sessions[i].run(None, feeds)
            times[i].append((time.perf_counter() - t) * 1e3)
    meds = [statistics.median(t) for t in times]
    print(json.dumps({"scaling": [{"threads": n, "median_ms": m, "ratio": m / meds[0]} for n, m in zip(counts, meds)]}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_ort_child":
        return ort_scaling(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", default="target/release/tessera")
    ap.add_argument("--models-dir", default=None)
    ap.add_argument("--models", default=None)
    ap.add_argument("--counts", default="1,2")
    ap.add_argument("--runs", type=int, default=40, help="interleaved rounds (slow models: fewer, see --budget-s)")
    ap.add_argument("--budget-s", type=float, default=8.0, help="time budget per model and runtime")
    ap.add_argument("--warmup", type=int, default=6)
    ap.add_argument("--noise", type=float, default=0.05)
    args = ap.parse_args()
    import os
    shared = Path(os.environ.get("TESSERA_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    models_dir = Path(args.models_dir) if args.models_dir else shared / "models"
    names = args.models.split(",") if args.models else read_manifest(models_dir)
    counts = args.counts
    print(f"# Thread scaling ({counts} threads), one process per runtime, runs interleaved\n")
    print(f"- date: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}; CPU: {cpu_model()}; onnxruntime {ort_version()}\n")
    cols = counts.split(",")
    print("| model | " + " | ".join(f"tessera {c}t ms" for c in cols) + " | tessera ratio | "
          + " | ".join(f"ort {c}t ms" for c in cols) + " | ort ratio |")
    print("| --- |" + " ---: |" * (2 * len(cols) + 2))
    slower = {"tessera": [], "ort": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model = models_dir / name / "model.onnx"
            pb_inputs, npy_inputs = prepare_inputs(models_dir / name, tmp)
            # Size runs from a quick single run so slow models stay within budget.
            probe = subprocess.run([args.tessera, "bench", str(model), "--runs", "1", "--warmup", "0", "--json",
                                    *sum((["--input", f"{n}={p}"] for n, p in pb_inputs), [])],
                                   capture_output=True, text=True)
            per_run = json.loads(probe.stdout)["median_ms"] if probe.returncode == 0 else 100.0
            runs = max(5, min(args.runs, int(args.budget_s * 1e3 / (per_run * len(cols) * 2))))
            t = subprocess.run([args.tessera, "bench", str(model), "--scaling", counts, "--runs", str(runs),
                                "--warmup", str(args.warmup), "--json",
                                *sum((["--input", f"{n}={p}"] for n, p in pb_inputs), [])],
                               capture_output=True, text=True)
            o = subprocess.run([sys.executable, __file__, "_ort_child", "--model", str(model), "--counts", counts,
                                "--runs", str(runs), "--warmup", str(args.warmup),
                                *sum((["--input", f"{n}={p}"] for n, p in npy_inputs), [])],
                               capture_output=True, text=True)
            cells = []
            for label, proc in (("tessera", t), ("ort", o)):
                if proc.returncode != 0:
                    cells.append(("ERROR",) * len(cols) + ("",))
                    continue
                entries = json.loads(proc.stdout.strip().splitlines()[-1])["scaling"]
                worst = max(e["ratio"] for e in entries[1:]) if len(entries) > 1 else 1.0
                if worst > 1 + args.noise:
                    slower[label].append(f"{name} ({worst:.2f}x)")
                cells.append(tuple(f"{e['median_ms']:.3f}" for e in entries) + (f"{worst:.2f}",))
            print(f"| {name} | " + " | ".join(cells[0]) + " | " + " | ".join(cells[1]) + " |", flush=True)
    print()
    for label in ("tessera", "ort"):
        lst = ", ".join(slower[label]) or "none"
        print(f"- {label}: slower with more threads (beyond {args.noise:.0%} noise): {lst}")


if __name__ == "__main__":
    main()
