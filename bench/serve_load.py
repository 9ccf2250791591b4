#!/usr/bin/env python3
"""Load benchmark for `tessera serve` (not a test; loopback only; bounded in time).

Starts the server on one model, then for each client count runs N concurrent clients for a
fixed time, each sending the model's test_data_set_0 as tritonclient would (the request body
is built by tritonclient's own `generate_request_body`: binary tensor data) over a kept-alive
connection. Reports throughput, p50/p99 latency, errors (must be 0), and the server's overhead
against in-process `tessera bench` on the same model and inputs, measured in the same script.

    pip install -r tests/server/requirements.txt
    cargo build --release
    python3 bench/serve_load.py --model ../shared/models/ppocr_mobile_cls --clients 1,2 --seconds 10
"""

import argparse
import http.client
import json
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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def numbered(folder, prefix):
    out, k = [], 0
    while (folder / f"{prefix}_{k}.pb").exists():
        t = onnx.TensorProto()
        t.ParseFromString((folder / f"{prefix}_{k}.pb").read_bytes())
        out.append((folder / f"{prefix}_{k}.pb", t.name, numpy_helper.to_array(t)))
        k += 1
    return out


def percentile(values, q):
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def scrape(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("tessera_") and " " in line:
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values


def run_clients(port, path, body, headers, clients, seconds):
    latencies, errors, lock = [], [0], threading.Lock()
    deadline = time.monotonic() + seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        mine, bad = [], 0
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            try:
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except Exception:
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            elapsed = time.perf_counter() - t0
            if ok:
                mine.append(elapsed)
            else:
                bad += 1
        conn.close()
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    return latencies, errors[0], wall


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = Path(__file__).resolve().parent.parent
    shared = Path(os.environ.get("TESSERA_SHARED", root.parent / "shared"))
    parser.add_argument("--tessera", default=str(root / "target/release/tessera"))
    parser.add_argument("--model", default=str(shared / "models/ppocr_mobile_cls"), help="a folder with model.onnx and test_data_set_0/")
    parser.add_argument("--clients", default="1,2", help="client counts to run, e.g. 1,2,4")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per client count")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each")
    parser.add_argument("--workers", type=int, default=1, help="tessera serve --workers")
    parser.add_argument("--threads", type=int, default=1, help="cpu threads per session (server and bench)")
    parser.add_argument("--bench-runs", type=int, default=300, help="timed runs of the in-process baseline")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    model_dir = Path(args.model)
    name = model_dir.name
    data = model_dir / "test_data_set_0"
    inputs = numbered(data, "input")
    expected = numbered(data, "output")

    # The in-process baseline: the same inputs through `tessera bench`, run before and after the
    # load runs (the machine's load drifts; the overhead column uses the mean of both medians).
    bench_cmd = [args.tessera, "bench", str(model_dir / "model.onnx"), "--json", "--threads", str(args.threads),
                 "--runs", str(args.bench_runs), "--warmup", "10"]
    for path, input_name, _ in inputs:
        bench_cmd += ["--input", f"{input_name}={path}"]

    def run_bench():
        return json.loads(subprocess.run(bench_cmd, check=True, capture_output=True, text=True).stdout)

    bench_before = run_bench()

    port = free_port()
    server = subprocess.Popen(
        [args.tessera, "serve", "--model", f"{name}={model_dir / 'model.onnx'}", "--host", "127.0.0.1",
         "--port", str(port), "--threads", str(args.threads), "--workers", str(args.workers)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    results = []
    try:
        client = httpclient.InferenceServerClient(url=f"127.0.0.1:{port}")
        deadline = time.monotonic() + 300
        while True:
            try:
                if client.is_server_ready():
                    break
            except Exception:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"server did not start: {server.stdout.read()}")
            time.sleep(0.2)

        tensors = []
        for _, input_name, array in inputs:
            t = httpclient.InferInput(input_name, list(array.shape), np_to_triton_dtype(array.dtype))
            t.set_data_from_numpy(array)
            tensors.append(t)
        body, json_size = httpclient.InferenceServerClient.generate_request_body(tensors)
        headers = {"Content-Type": "application/octet-stream"}
        if json_size is not None:
            headers["Inference-Header-Content-Length"] = str(json_size)
        path = f"/v2/models/{name}/infer"

        # Sanity: the benchmarked request gives the expected outputs.
        result = client.infer(name, tensors)
        for _, out_name, want in expected:
            got = result.as_numpy(out_name)
            if got is None or not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                sys.exit(f"wrong output '{out_name}' from the server: not benchmarking")

        for clients in [int(c) for c in args.clients.split(",")]:
            run_clients(port, path, body, headers, clients, args.warmup)
            before = scrape(port)
            latencies, errors, wall = run_clients(port, path, body, headers, clients, args.seconds)
            after = scrape(port)
            label = f'{{model="{name}"}}'

            def delta(metric):
                return after.get(metric + label, 0.0) - before.get(metric + label, 0.0)

            n = delta("tessera_compute_duration_seconds_count")
            results.append({
                "clients": clients,
                "requests": len(latencies),
                "errors": errors,
                "throughput_per_s": len(latencies) / wall,
                "p50_ms": percentile(latencies, 50) * 1e3,
                "p99_ms": percentile(latencies, 99) * 1e3,
                # Inside the server: from request received to answered, and the model run alone.
                "server_request_mean_ms": delta("tessera_request_duration_seconds_sum") / max(n, 1) * 1e3,
                "server_compute_mean_ms": delta("tessera_compute_duration_seconds_sum") / max(n, 1) * 1e3,
            })
    finally:
        server.terminate()
        try:
            code = server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            code = "killed"

    bench_after = run_bench()
    bench = {"median_ms": (bench_before["median_ms"] + bench_after["median_ms"]) / 2,
             "before": bench_before, "after": bench_after}
    print(f"model {name}, body {len(body)} bytes (binary tensor data), server --workers {args.workers} "
          f"--threads {args.threads}, {args.seconds:.0f} s per row; server exit after SIGTERM: {code}")
    print(f"in-process `tessera bench` ({args.bench_runs} runs): median {bench_before['median_ms']:.3f} ms before, "
          f"{bench_after['median_ms']:.3f} ms after the load runs")
    print()
    print("| clients | requests | errors | throughput req/s | p50 ms | p99 ms | p50 - bench median ms | server: request mean ms | server: compute mean ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['clients']} | {r['requests']} | {r['errors']} | {r['throughput_per_s']:.1f} | {r['p50_ms']:.3f} | "
              f"{r['p99_ms']:.3f} | {r['p50_ms'] - bench['median_ms']:.3f} | {r['server_request_mean_ms']:.3f} | "
              f"{r['server_compute_mean_ms']:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"model": name, "bench": bench, "runs": results}, indent=2))
    if any(r["errors"] for r in results):
        sys.exit("errors during the load run")


if __name__ == "__main__":
    main()
