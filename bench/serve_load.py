#!/usr/bin/env python3
"""Load benchmark: `tessera serve` beside KServe's own Python model server running onnxruntime
(bench/kserve_onnx_server.py), one model at a time, on the same machine, driven by the same
client. Not a test; loopback only.

For each model and each server: start it, check that the model's test_data_set_0 answers with
the stored outputs, then for each concurrency level send a fixed number of requests over that
many kept-alive connections (spread over a few client processes so that the client is not held
by one GIL), each request the body tritonclient builds (binary tensor data). Reports throughput,
p50/p99 latency, errors (non-200 answers), lost requests (no answer at all) and the server's
peak RSS (VmHWM of the server process and its children). For `tessera serve` it also reads the
server's own compute time from /metrics, the share of each request that is the model run.

Both servers get the same compute: `tessera serve --workers W --threads T`; the KServe server runs
onnxruntime with T intra-op threads and W runs at once.

    python3 -m venv venv-serving && venv-serving/bin/pip install -r bench/requirements-serving.txt
    cargo build --release --locked -p tessera-cli
    venv-serving/bin/python bench/serve_load.py --models silero_vad_v5,mtcnn_rnet,ppocr_mobile_cls \\
        --concurrency 1,8,32 --requests 2000
"""

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
import tritonclient.http as httpclient
from tritonclient.utils import np_to_triton_dtype

ROOT = Path(__file__).resolve().parent.parent
CLIENT_PROCESSES = 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def numbered(folder, prefix):
    out, k = [], 0
    while (folder / f"{prefix}_{k}.pb").exists():
        t = onnx.TensorProto()
        t.ParseFromString((folder / f"{prefix}_{k}.pb").read_bytes())
        out.append((t.name, numpy_helper.to_array(t)))
        k += 1
    return out


def percentile(values, q):
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def peak_rss_mib(pid):
    """VmHWM of the process and every descendant, summed (MiB)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                todo.extend(int(c) for c in children)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1024


def scrape(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    except Exception:
        return {}
    values = {}
    for line in text.splitlines():
        if line.startswith("tessera_") and " " in line:
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values


def connection_loop(port, path, body, headers, count, out):
    """One kept-alive connection sending `count` requests one after another."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    latencies, errors, lost = [], 0, 0
    for _ in range(count):
        t0 = time.perf_counter()
        try:
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
        except Exception:
            lost += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            continue
        if response.status == 200:
            latencies.append(time.perf_counter() - t0)
        else:
            errors += 1
    conn.close()
    out.append((latencies, errors, lost))


def client_process(port, path, body, headers, counts, start, queue):
    out = []
    threads = [threading.Thread(target=connection_loop, args=(port, path, body, headers, c, out)) for c in counts]
    start.wait()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(out)


def drive(port, path, body, headers, connections, requests):
    """`requests` requests over `connections` connections; returns latencies, errors, lost, wall."""
    per_connection = [requests // connections + (1 if k < requests % connections else 0) for k in range(connections)]
    groups = [per_connection[k::CLIENT_PROCESSES] for k in range(min(CLIENT_PROCESSES, connections))]
    ctx = multiprocessing.get_context("fork")
    start, queue = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=client_process, args=(port, path, body, headers, g, start, queue)) for g in groups]
    for p in procs:
        p.start()
    time.sleep(0.2)  # let every client process reach the start line
    t0 = time.monotonic()
    start.set()
    results = [queue.get() for _ in procs]
    wall = time.monotonic() - t0
    for p in procs:
        p.join()
    latencies, errors, lost = [], 0, 0
    for out in results:
        for lat, err, lo in out:
            latencies.extend(lat)
            errors += err
            lost += lo
    return latencies, errors, lost, wall


def start_server(kind, args, name, model_path, port, log):
    if kind == "tessera":
        cmd = [args.tessera, "serve", "--model", f"{name}={model_path}", "--host", "127.0.0.1", "--port", str(port),
               "--threads", str(args.threads), "--workers", str(args.workers), "--queue", str(args.queue)]
    else:
        cmd = [args.kserve_python, str(ROOT / "bench/kserve_onnx_server.py"), "--model_name", name,
               "--model_path", str(model_path), "--http_port", str(port), "--threads", str(args.threads),
               "--concurrency", str(args.workers)]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(client, server, name, seconds=300):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the server exited with {server.returncode} before it was ready")
        try:
            if client.is_model_ready(name):
                return
        except Exception:
            pass
        time.sleep(0.2)
    sys.exit("the server was not ready in time")


def measure(kind, args, model_dir, levels):
    name = model_dir.name
    data = model_dir / "test_data_set_0"
    inputs, expected = numbered(data, "input"), numbered(data, "output")
    port = free_port()
    log = open(Path(args.log_dir) / f"{kind}-{name}.log", "w")
    server = start_server(kind, args, name, model_dir / "model.onnx", port, log)
    rows = []
    try:
        client = httpclient.InferenceServerClient(url=f"127.0.0.1:{port}")
        wait_ready(client, server, name)
        tensors = []
        for input_name, array in inputs:
            t = httpclient.InferInput(input_name, list(array.shape), np_to_triton_dtype(array.dtype))
            t.set_data_from_numpy(array)
            tensors.append(t)
        result = client.infer(name, tensors)
        for out_name, want in expected:
            got = result.as_numpy(out_name)
            if got is None or not np.allclose(got, want, rtol=1e-3, atol=args.atol):
                sys.exit(f"{kind}: wrong output '{out_name}' for {name}: not benchmarking")
        body, json_size = httpclient.InferenceServerClient.generate_request_body(tensors)
        headers = {"Content-Type": "application/octet-stream"}
        if json_size is not None:
            headers["Inference-Header-Content-Length"] = str(json_size)
        path = f"/v2/models/{name}/infer"
        for connections in levels:
            drive(port, path, body, headers, connections, max(connections * 2, args.requests // 10))  # warm-up
            before = scrape(port)
            latencies, errors, lost, wall = drive(port, path, body, headers, connections, args.requests)
            after = scrape(port)
            label = f'{{model="{name}"}}'
            n = after.get("tessera_compute_duration_seconds_count" + label, 0) - before.get(
                "tessera_compute_duration_seconds_count" + label, 0)
            compute = after.get("tessera_compute_duration_seconds_sum" + label, 0) - before.get(
                "tessera_compute_duration_seconds_sum" + label, 0)
            rows.append({
                "server": kind, "model": name, "body_bytes": len(body), "concurrency": connections,
                "requests": args.requests, "answered": len(latencies), "errors": errors, "lost": lost,
                "throughput_per_s": len(latencies) / wall,
                "p50_ms": percentile(latencies, 50) * 1e3, "p99_ms": percentile(latencies, 99) * 1e3,
                "server_peak_rss_mib": peak_rss_mib(server.pid),
                "compute_mean_ms": compute / n * 1e3 if n else None,
            })
            r = rows[-1]
            print(f"  {kind:8} {name} c={connections}: {r['throughput_per_s']:.1f} req/s p50 {r['p50_ms']:.2f} ms "
                  f"p99 {r['p99_ms']:.2f} ms errors {errors} lost {lost} rss {r['server_peak_rss_mib']:.0f} MiB",
                  file=sys.stderr, flush=True)
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = Path(os.environ.get("TESSERA_SHARED", ROOT.parent / "shared"))
    parser.add_argument("--tessera", default=str(ROOT / "target/release/tessera"))
    parser.add_argument("--kserve-python", default=sys.executable, help="a Python with bench/requirements-serving.txt")
    parser.add_argument("--models", default="silero_vad_v5,mtcnn_rnet,ppocr_mobile_cls",
                        help="names of folders under SHARED/models (model.onnx, test_data_set_0/)")
    parser.add_argument("--servers", default="tessera,kserve")
    parser.add_argument("--concurrency", default="1,8,32", help="connections sending at once, e.g. 1,8,32")
    parser.add_argument("--requests", type=int, default=2000, help="requests per concurrency level")
    parser.add_argument("--workers", type=int, default=2, help="model runs computing at once, in both servers")
    parser.add_argument("--threads", type=int, default=1, help="cpu threads per model run, in both servers")
    parser.add_argument("--queue", type=int, default=64, help="tessera serve --queue (must hold the concurrency)")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--log-dir", default="/tmp", help="where the servers' logs go")
    parser.add_argument("--json", help="also write every row here")
    args = parser.parse_args()

    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    for model in args.models.split(","):
        for kind in args.servers.split(","):
            rows += measure(kind, args, shared / "models" / model, levels)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}, {os.cpu_count()} cores; servers: --workers {args.workers} --threads {args.threads}; "
          f"{args.requests} requests per level")
    print()
    print("| model | server | concurrency | answered | errors | lost | req/s | p50 ms | p99 ms | peak RSS MiB | tessera/kserve req/s | compute share |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    by_key = {(r["model"], r["server"], r["concurrency"]): r for r in rows}
    for r in rows:
        peer = by_key.get((r["model"], "kserve", r["concurrency"]))
        ratio = f"{r['throughput_per_s'] / peer['throughput_per_s']:.2f}" if r["server"] == "tessera" and peer else ""
        share = f"{r['compute_mean_ms'] / r['p50_ms']:.0%}" if r.get("compute_mean_ms") and r["concurrency"] == 1 else ""
        print(f"| {r['model']} | {r['server']} | {r['concurrency']} | {r['answered']} | {r['errors']} | {r['lost']} | "
              f"{r['throughput_per_s']:.1f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['server_peak_rss_mib']:.0f} | "
              f"{ratio} | {share} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    bad = [r for r in rows if r["server"] == "tessera" and (r["errors"] or r["lost"])]
    if bad:
        sys.exit(f"tessera: errors or lost requests in {len(bad)} rows")


if __name__ == "__main__":
    main()
