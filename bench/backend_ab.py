#!/usr/bin/env python3
"""Two builds of tessera side by side on one backend: `tessera bench --json` of each binary on
each shared real model, one right after the other (order alternating per model), same inputs
(test_data_set_0). For checking that a change made nothing slower (e.g. a refactor of a GPU
backend: `--backend wgpu`, on lavapipe where there is no GPU; or two build profiles on cpu).

Prints a markdown table of both medians and after/before per model, and the geomean.

Usage: bench/backend_ab.py --before OLD_TESSERA --after NEW_TESSERA [--backend wgpu]
       [--threads N] [--models a,b] [--runs N] [--rounds R]
(needs `pip install -r bench/requirements.txt` for reading .pb input names)
"""

import argparse
import math
import platform
import statistics
import sys
from pathlib import Path

from wgpu_vs_cpu import bench

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the tessera binary before the change")
    parser.add_argument("--after", required=True, help="the tessera binary after the change")
    parser.add_argument("--backend", default="wgpu")
    parser.add_argument("--shared", default=str(REPO.parent / "shared"))
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per bench call")
    parser.add_argument("--threads", type=int, help="cpu threads (default: tessera's, one per core)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="bench calls per binary and model (the median of their medians is kept)")
    args = parser.parse_args()
    models_dir = Path(args.shared) / "models"
    names = args.models.split(",") if args.models else sorted(
        p.name for p in models_dir.iterdir() if (p / "model.onnx").exists())
    extra = ["--threads", str(args.threads)] if args.threads else []
    print(f"`--backend {args.backend} {' '.join(extra)}`, before = {args.before}, after = {args.after}; "
          f"{cpu_model()}; median of {args.rounds} rounds of {args.runs} runs after 2 warmup "
          "runs, the two binaries alternating.\n")
    print("| model | before ms | after ms | after/before |")
    print("|---|---:|---:|---:|")
    ratios = []
    for k, name in enumerate(names):
        times = {"before": [], "after": []}
        errors = {}
        for r in range(args.rounds):
            order = ["before", "after"] if (k + r) % 2 == 0 else ["after", "before"]
            for which in order:
                result = bench(getattr(args, which), models_dir / name, args.backend, args.runs, extra)
                if "error" in result:
                    errors[which] = result["error"]
                else:
                    times[which].append(result["median_ms"])
        cell = lambda w: f"ERROR: {errors[w]}" if w in errors else f"{statistics.median(times[w]):.2f}"
        ratio = "-"
        if not errors:
            r = statistics.median(times["after"]) / statistics.median(times["before"])
            ratios.append(r)
            ratio = f"{r:.2f}"
        print(f"| {name} | {cell('before')} | {cell('after')} | {ratio} |", flush=True)
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\ngeomean after/before over {len(ratios)} models: {geo:.3f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
