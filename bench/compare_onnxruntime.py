#!/usr/bin/env python3
"""Side-by-side CPU benchmark: Tessera (`tessera bench ... --json`) vs onnxruntime.

For every model in shared/models (or --models a,b) and every thread count
(--threads 1,2), runs Tessera's cpu backend and onnxruntime's
CPUExecutionProvider, each in its own child process, one right after the
other (order alternating), and prints a markdown table of medians and
tessera/ort ratios.  See bench/README.md.

The onnxruntime side runs this same file as a child: `compare_onnxruntime.py
_ort_child ...`; that child imports only numpy and onnxruntime.
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent

# Fields of the `tessera bench --json` contract (the ORT child prints the same).
CONTRACT_FIELDS = {
    "model": str, "backend": str, "threads": int, "runs": int,
    "load_ms": float, "first_run_ms": float, "median_ms": float,
    "p90_ms": float, "mean_ms": float, "min_ms": float, "peak_rss_mb": float,
}


# --------------------------------------------------------------------------
# shared helpers (used by both parent and child)
# --------------------------------------------------------------------------

# Tessera's cpu backend spends the first 7 runs of a plan (the first run + 6) comparing pooled and
# single-threaded execution; at least 6 warmup runs keep that out of the timed runs.
MIN_WARMUP = 6


def choose_warmup(first_run_ms, warmup_s, max_warmup):
    """warmup = clamp(warmup_s / first_run, MIN_WARMUP, max_warmup)."""
    t = max(first_run_ms, 1e-3) / 1000.0
    return int(min(max(round(warmup_s / t), MIN_WARMUP), max(max_warmup, MIN_WARMUP)))


def choose_runs(steady_ms, target_s, min_runs, max_runs):
    """runs = clamp(target_s / steady-state run time, min_runs, max_runs).

    steady_ms is the fastest warmup run, not the first run: the first run is
    often 10-70x slower (allocation, lazy init) and would give too few runs.
    """
    t = max(steady_ms, 1e-3) / 1000.0
    return int(min(max(round(target_s / t), min_runs), max_runs))


def summarize(times_ms):
    s = sorted(times_ms)
    n = len(s)
    # p90: nearest-rank definition (the ceil(0.9*n)-th smallest sample).
    p90 = s[max(0, math.ceil(0.9 * n) - 1)]
    return {
        "median_ms": statistics.median(s),
        "p90_ms": p90,
        "mean_ms": statistics.fmean(s),
        "min_ms": s[0],
    }


def _proc_status_mb(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


# --------------------------------------------------------------------------
# onnxruntime child: `compare_onnxruntime.py _ort_child --model M --threads N ...`
# --------------------------------------------------------------------------

def ort_child(argv):
    ap = argparse.ArgumentParser(prog="compare_onnxruntime.py _ort_child")
    ap.add_argument("--model", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy")
    ap.add_argument("--target-s", type=float, required=True)
    ap.add_argument("--min-runs", type=int, required=True)
    ap.add_argument("--max-runs", type=int, required=True)
    ap.add_argument("--warmup-s", type=float, required=True)
    ap.add_argument("--max-warmup", type=int, required=True)
    ap.add_argument("--runs", type=int, default=0, help="fixed runs (0 = adaptive)")
    ap.add_argument("--warmup", type=int, default=-1, help="fixed warmup (-1 = adaptive)")
    ap.add_argument("--no-spin", action="store_true")
    a = ap.parse_args(argv)

    import resource
    import numpy as np
    import onnxruntime as ort

    # Python + numpy + onnxruntime imported, nothing loaded yet.
    baseline_rss_mb = _proc_status_mb("VmHWM")

    feeds = {}
    for spec in a.input:
        name, path = spec.split("=", 1)
        feeds[name] = np.load(path)

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if a.no_spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.add_session_config_entry("session.inter_op.allow_spinning", "0")

    t0 = time.perf_counter()
    sess = ort.InferenceSession(a.model, sess_options=so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1000.0

    t0 = time.perf_counter()
    sess.run(None, feeds)
    first_run_ms = (time.perf_counter() - t0) * 1000.0

    warmup = a.warmup if a.warmup >= 0 else choose_warmup(first_run_ms, a.warmup_s, a.max_warmup)
    wtimes = []
    for _ in range(warmup):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        wtimes.append((time.perf_counter() - t0) * 1000.0)
    if a.runs > 0:
        runs = a.runs
    else:
        runs = choose_runs(min(wtimes) if wtimes else first_run_ms, a.target_s, a.min_runs, a.max_runs)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000.0)

    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out = {
        "model": a.name, "backend": "ort-cpu", "threads": a.threads, "runs": runs,
        "warmup": warmup, "load_ms": load_ms, "first_run_ms": first_run_ms,
        **summarize(times),
        # VmHWM belongs to this exec'd process; ru_maxrss can include the parent's RSS at fork.
        "peak_rss_mb": _proc_status_mb("VmHWM") or peak_kb / 1024.0,
        "baseline_rss_mb": baseline_rss_mb,
        "ort_version": ort.__version__,
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------

def run_child(cmd, timeout_s):
    """Run cmd; return (rc, stdout, stderr, child_maxrss_mb, wall_s).

    Uses os.wait4 so the peak RSS is that of this one child (RUSAGE_CHILDREN
    in the parent would be the max over every child so far).
    """
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL)
        except OSError as e:
            return 127, "", f"cannot start {cmd[0]}: {e}", None, 0.0
        res = {}

        def waiter():
            _, status, ru = os.wait4(p.pid, 0)
            res["status"], res["ru"] = status, ru

        th = threading.Thread(target=waiter, daemon=True)
        th.start()
        th.join(timeout_s)
        timed_out = th.is_alive()
        if timed_out:
            p.kill()
            th.join()
        p.returncode = os.waitstatus_to_exitcode(res["status"])  # reaped by wait4
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode("utf-8", "replace")
        err = fe.read().decode("utf-8", "replace")
        if timed_out:
            err = f"timed out after {timeout_s:.0f} s\n" + err
            return None, out, err, res["ru"].ru_maxrss / 1024.0, wall
        return p.returncode, out, err, res["ru"].ru_maxrss / 1024.0, wall


def parse_contract_json(stdout):
    """The one JSON object on stdout (tolerates stray lines around it)."""
    text = stdout.strip()
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                    break
                except ValueError:
                    continue
        if obj is None:
            raise ValueError("no JSON object on stdout: " + (text[-200:] or "<empty>"))
    if not isinstance(obj, dict):
        raise ValueError("stdout JSON is not an object")
    missing = [k for k in CONTRACT_FIELDS if k not in obj]
    if missing:
        raise ValueError("JSON lacks fields: " + ",".join(missing))
    for k, typ in CONTRACT_FIELDS.items():
        if typ is float and not isinstance(obj[k], (int, float)):
            raise ValueError(f"field {k} is not a number: {obj[k]!r}")
    return obj


def error_message(rc, out, err):
    lines = [l.strip() for l in (err or "").splitlines() if l.strip()]
    # Prefer the last line that looks like an error; fall back to the last line.
    msg = next((l for l in reversed(lines) if "error" in l.lower()), lines[-1] if lines else "")
    if not msg:
        msg = (out or "").strip().splitlines()[-1:] or [""]
        msg = msg[0]
    prefix = "timeout" if rc is None else f"exit {rc}"
    return f"{prefix}: {msg}"[:300]


def measure(cmd, timeout_s):
    rc, out, err, child_rss, wall = run_child(cmd, timeout_s)
    if rc != 0:
        return {"error": error_message(rc, out, err), "wall_s": wall, "stderr_tail": err[-2000:]}
    try:
        obj = parse_contract_json(out)
    except ValueError as e:
        return {"error": f"bad output: {e}"[:300], "wall_s": wall, "stderr_tail": err[-2000:]}
    obj["wait4_peak_rss_mb"] = child_rss
    obj["wall_s"] = wall
    return obj


def run_tessera(args, name, model_path, pb_inputs, threads):
    base = [args.tessera, "bench", str(model_path), "--backend", args.backend,
            "--threads", str(threads)]
    for iname, f in pb_inputs:
        base += ["--input", f"{iname}={f}"]
    if args.runs > 0:
        runs, warmup = args.runs, max(args.warmup, 0)
        probe = None
    else:
        # Probe: load + first run + 2 timed runs, only to size runs/warmup the
        # way the ORT child does (warmup from the first run, runs from the
        # fastest steady-state run).
        probe = measure(base + ["--runs", "2", "--warmup", "0", "--json"], args.timeout)
        if "error" in probe:
            probe["error"] = "probe: " + probe["error"]
            return probe
        warmup = args.warmup if args.warmup >= 0 else \
            choose_warmup(probe["first_run_ms"], args.warmup_s, args.max_warmup)
        runs = choose_runs(probe["min_ms"], args.target_s, args.min_runs, args.max_runs)
    r = measure(base + ["--runs", str(runs), "--warmup", str(warmup), "--json"], args.timeout)
    r.setdefault("warmup", warmup)
    if probe is not None:
        r["probe_first_run_ms"] = probe.get("first_run_ms")
        r["probe_min_ms"] = probe.get("min_ms")
        r["probe_wall_s"] = probe.get("wall_s")
    return r


def run_ort(args, name, model_path, npy_inputs, threads):
    cmd = [sys.executable, str(Path(__file__).resolve()), "_ort_child",
           "--model", str(model_path), "--name", name, "--threads", str(threads),
           "--target-s", str(args.target_s), "--min-runs", str(args.min_runs),
           "--max-runs", str(args.max_runs), "--warmup-s", str(args.warmup_s),
           "--max-warmup", str(args.max_warmup), "--runs", str(args.runs),
           "--warmup", str(args.warmup)]
    if args.ort_no_spin:
        cmd.append("--no-spin")
    for iname, f in npy_inputs:
        cmd += ["--input", f"{iname}={f}"]
    return measure(cmd, args.timeout)


def read_manifest(models_dir):
    names = []
    mf = models_dir / "MANIFEST.tsv"
    if mf.exists():
        with open(mf) as f:
            header = f.readline().rstrip("\n").split("\t")
            col = header.index("name") if "name" in header else 0
            for line in f:
                if line.strip():
                    names.append(line.rstrip("\n").split("\t")[col])
    else:
        names = sorted(p.name for p in models_dir.iterdir() if (p / "model.onnx").exists())
    return names


def prepare_inputs(model_dir, tmpdir):
    """[(name, pb_path)], [(name, npy_path)] from test_data_set_0/input_K.pb.

    The input name is the one stored in each TensorProto; if a .pb has no
    name, it is mapped by position onto the model's declared (non-initializer)
    inputs.
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper

    ds = model_dir / "test_data_set_0"
    pbs = sorted(ds.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    if not pbs:
        raise RuntimeError(f"no input_*.pb in {ds}")
    declared = None
    pb_inputs, npy_inputs = [], []
    for k, pb in enumerate(pbs):
        t = onnx.load_tensor(str(pb))
        name = t.name
        if not name:
            if declared is None:
                m = onnx.load(str(model_dir / "model.onnx"), load_external_data=False)
                init = {i.name for i in m.graph.initializer}
                declared = [i.name for i in m.graph.input if i.name not in init]
            name = declared[k]
        arr = numpy_helper.to_array(t)
        npy = Path(tmpdir) / f"{model_dir.name}_input_{k}.npy"
        np.save(npy, arr)
        pb_inputs.append((name, pb.resolve()))
        npy_inputs.append((name, npy))
    return pb_inputs, npy_inputs


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_busy_fraction(seconds=1.0):
    """Fraction of all CPUs busy over `seconds` (from /proc/stat); None if unknown."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return idle, sum(v)
    try:
        i0, t0 = snap()
        time.sleep(seconds)
        i1, t1 = snap()
        return 1.0 - (i1 - i0) / max(t1 - t0, 1)
    except (OSError, ValueError, IndexError):
        return None


def ort_version():
    try:
        out = subprocess.run([sys.executable, "-c", "import onnxruntime; print(onnxruntime.__version__)"],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or ("unavailable: " + out.stderr.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"


def tessera_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or out.stderr.strip() or f"exit {out.returncode}"
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"


def fmt_ms(r):
    if r is None:
        return "skipped"
    if "error" in r:
        return "ERROR: " + r["error"].replace("|", "\\|").replace("\n", " ")[:120]
    return f"{r['median_ms']:.3f}"


def ratio(a, b, key):
    if not a or not b or "error" in a or "error" in b:
        return None
    x, y = a.get(key), b.get(key)
    if x is None or y is None or y <= 0 or x <= 0:
        return None
    return x / y


def first_result_ratio(a, b):
    """(load + first run) / (load + first run): Tessera's model read, plan and first run against
    onnxruntime's session creation and first run, the wait before a first answer."""
    if not a or not b or "error" in a or "error" in b:
        return None
    try:
        x = a["load_ms"] + a["first_run_ms"]
        y = b["load_ms"] + b["first_run_ms"]
    except (KeyError, TypeError):
        return None
    return x / y if x > 0 and y > 0 else None


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}"


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def rss_of(r):
    # Same measurement for both runtimes: each process's own VmHWM (peak_rss_mb). wait4's
    # ru_maxrss is only a fallback: on Linux it includes this script's RSS at fork (~60 MB).
    if r is None or "error" in r:
        return None
    return r.get("peak_rss_mb") or r.get("wait4_peak_rss_mb")


def combine_rounds(rs):
    """Median over rounds of each numeric field (rounds=1: the one result)."""
    ok = [r for r in rs if r is not None and "error" not in r]
    if not ok:
        return rs[0] if rs else None
    if len(ok) == 1:
        return ok[0]
    out = dict(ok[0])
    for k, v in ok[0].items():
        if isinstance(v, float):
            vals = [r[k] for r in ok if isinstance(r.get(k), (int, float))]
            out[k] = statistics.median(vals)
    out["rounds_ok"] = len(ok)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_shared = Path(os.environ.get("TESSERA_SHARED", REPO_ROOT.parent / "shared"))
    ap.add_argument("--tessera", default="target/release/tessera",
                    help="tessera binary (default target/release/tessera; a relative path not found "
                         "from the current directory is tried from the repo root)")
    ap.add_argument("--models-dir", type=Path, default=default_shared / "models",
                    help="default $TESSERA_SHARED/models, else <repo>/../shared/models")
    ap.add_argument("--models", default="", help="comma-separated model names (default: all in MANIFEST.tsv)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "wgpu", "cuda"],
                    help="Tessera's backend (default cpu; on a GPU machine: cuda, against "
                         "onnxruntime's CPU provider, with --threads naming its threads)")
    ap.add_argument("--only", choices=["both", "tessera", "ort"], default="both",
                    help="run only one runtime (the other's columns say 'skipped')")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat each (model, threads) pair this many times; the table shows the "
                         "median over rounds (default 1)")
    ap.add_argument("--target-s", type=float, default=2.0,
                    help="timed budget per measurement: runs = clamp(target / fastest warmup run, min, max)")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--max-runs", type=int, default=200)
    ap.add_argument("--warmup-s", type=float, default=0.5,
                    help="warmup = clamp(warmup_s/first_run, 1, max_warmup)")
    ap.add_argument("--max-warmup", type=int, default=8)
    ap.add_argument("--noise", type=float, default=0.05,
                    help="a median this much above the fewer-threads one counts as slower (machine noise)")
    ap.add_argument("--runs", type=int, default=0, help="fixed runs for both (0 = adaptive, default)")
    ap.add_argument("--warmup", type=int, default=-1, help="fixed warmup for both (-1 = adaptive)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per child process")
    ap.add_argument("--ort-no-spin", action="store_true",
                    help="disable onnxruntime's intra/inter-op thread spinning (default: ORT default)")
    ap.add_argument("--json-out", type=Path, help="write all raw numbers here")
    args = ap.parse_args(argv)

    threads_list = [int(t) for t in args.threads.split(",") if t.strip()]
    models_dir = args.models_dir.resolve()
    all_names = read_manifest(models_dir)
    if args.models:
        names = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in names if not (models_dir / m / "model.onnx").exists()]
        if unknown:
            ap.error(f"unknown models (not in {models_dir}): {', '.join(unknown)}")
    else:
        names = all_names
    if args.only != "ort":
        tp = Path(args.tessera)
        if not tp.is_absolute() and not tp.exists() and (REPO_ROOT / tp).exists():
            tp = REPO_ROOT / tp
        if not tp.exists() and shutil.which(args.tessera):
            tp = Path(shutil.which(args.tessera))
        args.tessera = str(tp.resolve()) if tp.exists() else args.tessera

    started = datetime.datetime.now().astimezone()
    meta = {
        "date": started.isoformat(timespec="seconds"),
        "cpu_model": cpu_model(),
        "nproc": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "cpu_busy_before": cpu_busy_fraction(),
        "python": platform.python_version(),
        "onnxruntime": ort_version() if args.only != "tessera" else "not run",
        "tessera": args.tessera if args.only != "ort" else "not run",
        "tessera_version": tessera_version(args.tessera) if args.only != "ort" else "not run",
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    print(f"# Tessera {args.backend} vs onnxruntime CPUExecutionProvider")
    print()
    print(f"- date: {meta['date']}")
    print(f"- CPU: {meta['cpu_model']} ({meta['nproc']} logical cores), load average at start "
          f"{meta['loadavg_start'][0]:.2f}")
    busy = meta["cpu_busy_before"]
    if busy is not None and busy > 0.25:
        print(f"- WARNING: the CPUs were {busy:.0%} busy before starting (other processes); "
              f"latencies, 2-thread ones above all, will be inflated. Rerun on a quiet machine.")
    print(f"- onnxruntime: {meta['onnxruntime']} (intra_op=N, inter_op=1, ORT_SEQUENTIAL, "
          f"spinning {'off' if args.ort_no_spin else 'default'})")
    print(f"- tessera: {meta['tessera']} ({meta['tessera_version']})")
    print(f"- runs = clamp({args.target_s} s / steady run, {args.min_runs}, {args.max_runs}), "
          f"rounds = {args.rounds}, models dir {models_dir}")
    print(flush=True)

    results = []   # raw, one entry per (model, threads, round)
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
        for mi, name in enumerate(names):
            mdir = models_dir / name
            model_path = (mdir / "model.onnx").resolve()
            try:
                pb_inputs, npy_inputs = prepare_inputs(mdir, tmp)
                prep_err = None
            except Exception as e:  # noqa: BLE001
                pb_inputs = npy_inputs = []
                prep_err = f"inputs: {type(e).__name__}: {e}"[:300]
            # Warm the page cache so neither runtime pays the cold read alone.
            try:
                with open(model_path, "rb") as f:
                    while f.read(1 << 22):
                        pass
            except OSError:
                pass
            for ti, th in enumerate(threads_list):
                for rnd in range(args.rounds):
                    order = ["tessera", "ort"] if (mi + ti + rnd) % 2 == 0 else ["ort", "tessera"]
                    entry = {"model": name, "threads": th, "round": rnd, "order": order,
                             "loadavg": os.getloadavg()[0], "tessera": None, "ort": None}
                    for rt in order:
                        if args.only not in ("both", rt):
                            continue
                        if prep_err:
                            entry[rt] = {"error": prep_err}
                            continue
                        t0 = time.perf_counter()
                        if rt == "tessera":
                            entry[rt] = run_tessera(args, name, model_path, pb_inputs, th)
                        else:
                            entry[rt] = run_ort(args, name, model_path, npy_inputs, th)
                        dt = time.perf_counter() - t0
                        r = entry[rt]
                        status = ("ERROR " + r["error"][:100]) if "error" in r else \
                            f"median {r['median_ms']:.3f} ms, runs {r['runs']}"
                        print(f"  [{time.perf_counter() - t_all:6.1f}s] {name} t={th} {rt}: "
                              f"{status} ({dt:.1f}s)", file=sys.stderr, flush=True)
                    results.append(entry)

    # ---- combine rounds and print the table ----
    rows = []
    for name in names:
        for th in threads_list:
            es = [e for e in results if e["model"] == name and e["threads"] == th]
            rows.append({"model": name, "threads": th,
                         "tessera": combine_rounds([e["tessera"] for e in es]),
                         "ort": combine_rounds([e["ort"] for e in es])})
    for row in rows:
        t, o = row["tessera"], row["ort"]
        row["latency_ratio"] = ratio(t, o, "median_ms")
        row["load_ratio"] = ratio(t, o, "load_ms")
        row["first_result_ratio"] = first_result_ratio(t, o)
        tr, orr = rss_of(t), rss_of(o)
        row["rss_ratio"] = (tr / orr) if tr and orr else None

    print("| model | threads | tessera median ms | ort median ms | latency ratio | load-time ratio | "
          "load + first run ratio | peak-RSS ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['model']} | {row['threads']} | {fmt_ms(row['tessera'])} | {fmt_ms(row['ort'])} | "
              f"{fmt_ratio(row['latency_ratio'])} | {fmt_ratio(row['load_ratio'])} | "
              f"{fmt_ratio(row['first_result_ratio'])} | {fmt_ratio(row['rss_ratio'])} |")
    print()
    print("Ratios are tessera / onnxruntime (below 1: Tessera faster or smaller). "
          "Peak RSS is each process's own VmHWM; the ORT child's includes the Python interpreter "
          "(see baseline_rss_mb in --json-out).")
    print()

    # Peak RSS side by side, in MB; onnxruntime's also above its floor (baseline_rss_mb: Python,
    # numpy and onnxruntime imported, no model loaded).
    print("| model | threads | tessera peak RSS MB | ort peak RSS MB | ratio | "
          "ort floor MB | ort above floor MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    mb = lambda x: "—" if x is None else f"{x:.1f}"
    for row in rows:
        t, o = row["tessera"], row["ort"]
        o_floor = o.get("baseline_rss_mb") if o and "error" not in o else None
        orr = rss_of(o)
        o_net = orr - o_floor if orr and o_floor else None
        print(f"| {row['model']} | {row['threads']} | {mb(rss_of(t))} | {mb(orr)} | "
              f"{fmt_ratio(row['rss_ratio'])} | {mb(o_floor)} | {mb(o_net)} |")
    print()

    summary = {"geomean": {}, "slower_with_more_threads": {}}
    print("| threads | models (both ok) | geomean latency ratio | geomean load-time ratio | "
          "geomean load + first run ratio | geomean peak-RSS ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for th in threads_list:
        rs = [r for r in rows if r["threads"] == th and r["latency_ratio"] is not None]
        keys = ("latency_ratio", "load_ratio", "first_result_ratio", "rss_ratio")
        g = {k: geomean([r[k] for r in rs]) for k in keys}
        g["n"] = len(rs)
        summary["geomean"][str(th)] = g
        print(f"| {th} | {len(rs)} | {fmt_ratio(g['latency_ratio'])} | {fmt_ratio(g['load_ratio'])} | "
              f"{fmt_ratio(g['first_result_ratio'])} | {fmt_ratio(g['rss_ratio'])} |")
    print()

    ts = sorted(set(threads_list))
    if len(ts) >= 2:
        for rt, label in (("tessera", "tessera"), ("ort", "onnxruntime")):
            if args.only not in ("both", rt):
                continue
            slower = []
            for name in names:
                by_t = {r["threads"]: r[rt] for r in rows if r["model"] == name}
                for lo, hi in zip(ts, ts[1:]):
                    a, b = by_t.get(lo), by_t.get(hi)
                    if a and b and "error" not in a and "error" not in b and b["median_ms"] > a["median_ms"] * (1 + args.noise):
                        slower.append({"model": name, "from": lo, "to": hi,
                                       "ratio": b["median_ms"] / a["median_ms"]})
            summary["slower_with_more_threads"][rt] = slower
            if slower:
                lst = ", ".join(f"{s['model']} ({s['to']}t/{s['from']}t = {s['ratio']:.2f}x)" for s in slower)
                print(f"- {label}: slower with more threads (beyond {args.noise:.0%} noise) on {len(slower)} model(s): {lst}")
            else:
                print(f"- {label}: no model is slower with more threads (beyond {args.noise:.0%} noise)")
        print()

    wall = time.perf_counter() - t_all
    meta["loadavg_end"] = os.getloadavg()
    meta["wall_s"] = wall
    print(f"Total wall time {wall:.0f} s; load average at end {meta['loadavg_end'][0]:.2f}.")

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"meta": meta, "rows": rows, "raw": results, "summary": summary}, f, indent=1)
        print(f"Raw numbers written to {args.json_out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_ort_child":
        sys.exit(ort_child(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
