#!/usr/bin/env python3
"""wgpu next to cpu on the shared real models: `tessera bench --json` for each backend, one
right after the other per model (order alternating), same inputs (test_data_set_0).

Prints a markdown table: cpu and wgpu medians, the wgpu/cpu latency ratio, and the peak device
memory `tessera bench --backend wgpu` reports (its arena against the plan's largest live set).

On a machine without a GPU wgpu runs on Mesa's lavapipe, a software Vulkan driver: that is a
correctness platform, not a speed one, and these ratios say nothing about a real GPU.

Usage: bench/wgpu_vs_cpu.py [--models a,b] [--runs N] [--tessera PATH]\n(needs `pip install -r bench/requirements.txt` for reading .pb input names)
"""

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def pb_name(path):
    """The tensor name stored in an ONNX TensorProto .pb."""
    import onnx  # bench/requirements.txt

    return onnx.load_tensor(str(path)).name or None


def bench(tessera, model_dir, backend, runs, extra=()):
    inputs = []
    for pb in sorted((model_dir / "test_data_set_0").glob("input_*.pb")):
        name = pb_name(pb)
        if name:
            inputs += ["--input", f"{name}={pb}"]
    cmd = [str(tessera), "bench", str(model_dir / "model.onnx"), "--backend", backend,
           "--runs", str(runs), "--warmup", "2", "--json", *extra, *inputs]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(REPO.parent / "shared"))
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tessera", default=str(REPO / "target/release/tessera"))
    args = parser.parse_args()
    models_dir = Path(args.shared) / "models"
    names = args.models.split(",") if args.models else sorted(
        p.name for p in models_dir.iterdir() if (p / "model.onnx").exists())
    print("wgpu on this machine's adapter (lavapipe when there is no GPU: a correctness "
          "platform, not a speed one) next to cpu; same inputs, medians of "
          f"{args.runs} runs after 2 warmup runs.\n")
    print("| model | cpu median ms | wgpu median ms | wgpu/cpu | wgpu device memory MiB | arena / largest live set |")
    print("|---|---:|---:|---:|---:|---:|")
    ratios = []
    for k, name in enumerate(names):
        order = ["cpu", "wgpu"] if k % 2 == 0 else ["wgpu", "cpu"]
        results = {b: bench(args.tessera, models_dir / name, b, args.runs) for b in order}
        cpu, gpu = results["cpu"], results["wgpu"]
        cell = lambda r: f"ERROR: {r['error']}" if "error" in r else f"{r['median_ms']:.2f}"
        ratio = mem = arena = "-"
        if "error" not in cpu and "error" not in gpu:
            r = gpu["median_ms"] / cpu["median_ms"]
            ratios.append(r)
            ratio = f"{r:.1f}"
        m = gpu.get("device_memory")
        if m:
            total = m["arena"] + m["inputs"] + m["constants"] + m["other"]
            mem = f"{total / 2**20:.1f}"
            arena = f"{m['arena'] / max(m['peak_live'], 1):.2f}"
        print(f"| {name} | {cell(cpu)} | {cell(gpu)} | {ratio} | {mem} | {arena} |", flush=True)
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\ngeomean wgpu/cpu latency over {len(ratios)} models: {geo:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
