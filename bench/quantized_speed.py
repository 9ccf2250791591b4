#!/usr/bin/env python3
"""int8 vs float, Tessera vs onnxruntime: the quantized suite's models side by side.

Runs bench/compare_onnxruntime.py once over the float models of the quantized suite and their
quantized variants (scripts/derive-quantized.sh writes them into ~/.cache/tessera-ci/quantized),
then prints, per model, variant and thread count: Tessera's and onnxruntime's median latency,
int8/float for each runtime (below 1: the quantized model is faster than its float version) and
tessera/onnxruntime on the quantized model. A variant a runtime refuses shows its error.

Usage: bench/quantized_speed.py [--threads 1,2] [--models a,b] [--variants v,w] [compare_onnxruntime options...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("TESSERA_SHARED", HERE.parent.parent / "shared"))
SUITE = Path.home() / ".cache/tessera-ci/quantized"


def median(entry):
    return None if not entry or "error" in entry else entry["median_ms"]


def cell(entry):
    if not entry:
        return "—"
    if "error" in entry:
        return "refused" if "unsupported operator" in entry["error"] else "ERROR"
    return f"{entry['median_ms']:.2f}"


def ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="", help="default: every model of the derived suite")
    ap.add_argument("--variants", default="dynamic_s8,dynamic_u8,qdq_tensor,qdq_channel,qoperator")
    ap.add_argument("--suite", type=Path, default=SUITE)
    ap.add_argument("--json-out", type=Path)
    args, rest = ap.parse_known_args()
    manifest = json.loads((args.suite / "manifest.json").read_text())
    derived = [c for c, status in manifest["cases"].items() if status == "derived"]
    models = [m for m in args.models.split(",") if m] or sorted({c.split("__")[0] for c in derived})
    variants = [v for v in args.variants.split(",") if v]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        names = []
        for model in models:
            (tmp / f"{model}__float").symlink_to(SHARED / "models" / model)
            names.append(f"{model}__float")
            for variant in variants:
                case = f"{model}__{variant}"
                if case in derived:
                    (tmp / case).symlink_to(args.suite / case)
                    names.append(case)
        raw = tmp / "raw.json"
        subprocess.run([sys.executable, str(HERE / "compare_onnxruntime.py"), "--models-dir", str(tmp),
                        "--models", ",".join(names), "--threads", args.threads, "--json-out", str(raw)] + rest,
                       check=True, stdout=sys.stderr)
        result = json.loads(raw.read_text())
    rows = {(r["model"], r["threads"]): r for r in result["rows"]}
    meta = result["meta"]
    print("# int8 vs float on cpu: Tessera and onnxruntime side by side")
    print()
    print(f"- date: {meta['date']}; CPU: {meta['cpu_model']} ({meta['nproc']} logical cores)")
    print(f"- onnxruntime {meta['onnxruntime']}; tessera {meta['tessera_version']}")
    print()
    print("| model | variant | threads | tessera ms | ort ms | tessera int8/float | ort int8/float | tessera/ort |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model in models:
        for threads in [int(t) for t in args.threads.split(",")]:
            base = rows.get((f"{model}__float", threads))
            for variant in ["float"] + variants:
                row = rows.get((f"{model}__{variant}", threads))
                if row is None:
                    continue
                t, o = row["tessera"], row["ort"]
                line = [model, variant, str(threads), cell(t), cell(o)]
                if variant == "float":
                    line += ["1", "1"]
                else:
                    line += [ratio(median(t), median(base["tessera"])), ratio(median(o), median(base["ort"]))]
                line.append(ratio(median(t), median(o)))
                print("| " + " | ".join(line) + " |")
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
