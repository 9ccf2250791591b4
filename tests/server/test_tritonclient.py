#!/usr/bin/env python3
"""`tessera serve` with the stock Triton HTTP client (tritonclient[http], unmodified, default
binary tensor data): every shared real model's test_data_set_0 through the server, compared
with the stored expected outputs; then SIGTERM while a request is in flight, which must still
be answered, and the server must exit 0.

Fails loudly (exit 1) on any mismatch, missing model or server problem; it never skips.

    python tests/server/test_tritonclient.py --tessera target/release/tessera --models ../shared/models
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
import tritonclient.http as httpclient
from tritonclient.utils import np_to_triton_dtype

RTOL, ATOL = 1e-3, 1e-4
# Same exceptions as tests/real_models.rs: its softmax runs on int8-quantized logits.
ATOL_BY_MODEL = {"ppocr_mobile_cls_qdq_int8": 0.004}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_pb(path):
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return tensor.name, numpy_helper.to_array(tensor)


def numbered(folder, prefix):
    out = []
    k = 0
    while (folder / f"{prefix}_{k}.pb").exists():
        out.append(read_pb(folder / f"{prefix}_{k}.pb"))
        k += 1
    return out


def wait_ready(client, server, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"FAIL: the server exited with {server.returncode} before it was ready")
        try:
            if client.is_server_ready():
                return
        except Exception:  # not listening yet
            pass
        time.sleep(0.5)
    raise SystemExit(f"FAIL: the server was not ready within {seconds} s")


def infer_inputs(named_arrays):
    """tritonclient inputs for (name, array) pairs, sent as binary tensor data (its default)."""
    inputs = []
    for name, array in named_arrays:
        tensor = httpclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return inputs


def build_inputs(meta, data_set):
    named = numbered(data_set, "input")
    return infer_inputs((name or meta["inputs"][k]["name"], array) for k, (name, array) in enumerate(named))


def check_model(client, model_dir):
    """Returns a list of failure messages (empty when every output matches)."""
    name = model_dir.name
    failures = []
    meta = client.get_model_metadata(name)
    if not client.is_model_ready(name):
        return [f"{name}: not ready"]
    data_set = model_dir / "test_data_set_0"
    inputs = build_inputs(meta, data_set)
    expected = numbered(data_set, "output")
    meta_inputs = [i["name"] for i in meta["inputs"]]
    if sorted(meta_inputs) != sorted(t.name() for t in inputs):
        failures.append(f"{name}: metadata inputs {meta_inputs} differ from the test data's")
    output_names = [o["name"] for o in meta["outputs"]]
    atol = ATOL_BY_MODEL.get(name, ATOL)
    # Once as the client does by default (no outputs named: all of them, binary), once with
    # every output requested by name (InferRequestedOutput's default is binary too).
    requested = [httpclient.InferRequestedOutput(o) for o in output_names]
    for how, outputs in (("default", None), ("requested outputs", requested)):
        result = client.infer(name, inputs, outputs=outputs)
        for k, (out_name, want) in enumerate(expected):
            out_name = out_name or output_names[k]
            got = result.as_numpy(out_name)
            if got is None:
                failures.append(f"{name} ({how}): output '{out_name}' missing")
                continue
            if got.shape != want.shape or got.dtype != want.dtype:
                failures.append(
                    f"{name} ({how}): '{out_name}' is {got.dtype}{list(got.shape)}, "
                    f"expected {want.dtype}{list(want.shape)}"
                )
                continue
            if not np.allclose(got, want, rtol=RTOL, atol=atol, equal_nan=True):
                err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
                failures.append(f"{name} ({how}): '{out_name}' max abs error {err:.3g} (atol {atol})")
    # Only one output asked for: the response must hold just that one.
    result = client.infer(name, inputs, outputs=requested[-1:])
    returned = [o["name"] for o in result.get_response()["outputs"]]
    if returned != output_names[-1:]:
        failures.append(f"{name}: asked for {output_names[-1:]}, got {returned}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessera", required=True, help="the tessera binary")
    parser.add_argument("--models", required=True, help="shared/models (one folder per model)")
    parser.add_argument("--ready-timeout", type=float, default=600)
    args = parser.parse_args()

    model_dirs = sorted(p for p in Path(args.models).iterdir() if (p / "model.onnx").is_file())
    if len(model_dirs) != 20:
        sys.exit(f"expected the 20 shared models in {args.models}, found {len(model_dirs)}")
    if not model_dirs:
        raise SystemExit(f"FAIL: no models in {args.models}")
    port = free_port()
    command = [args.tessera, "serve", "--model-repository", args.models,
               "--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    print("starting:", " ".join(command), flush=True)
    env = dict(os.environ, TESSERA_LOG=os.environ.get("TESSERA_LOG", "info"))
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    log = []
    reader = threading.Thread(target=lambda: log.extend(server.stdout), daemon=True)
    reader.start()
    failures = []
    try:
        url = f"127.0.0.1:{port}"
        client = httpclient.InferenceServerClient(url=url, network_timeout=600, connection_timeout=600)
        start = time.monotonic()
        wait_ready(client, server, args.ready_timeout)
        print(f"ready after {time.monotonic() - start:.1f} s", flush=True)
        if not client.is_server_live():
            failures.append("server not live")
        passed = 0
        for model_dir in model_dirs:
            t0 = time.monotonic()
            problems = check_model(client, model_dir)
            passed += not problems
            status = "ok" if not problems else "FAIL"
            print(f"{status:4} {model_dir.name:28} {time.monotonic() - t0:6.2f} s", flush=True)
            for p in problems:
                print("     ", p, flush=True)
            failures.extend(problems)
        print(f"tritonclient: {passed}/{len(model_dirs)} models match their expected outputs", flush=True)

        # SIGTERM with a request in flight: it must still be answered, then the server exits 0.
        slow = next((d for d in model_dirs if d.name == "light_vgg19"), model_dirs[-1])
        inputs = build_inputs(client.get_model_metadata(slow.name), slow / "test_data_set_0")
        expected = numbered(slow / "test_data_set_0", "output")
        in_flight = {}

        def infer():
            try:
                c = httpclient.InferenceServerClient(url=url, network_timeout=600)
                in_flight["result"] = c.infer(slow.name, inputs)
            except Exception as e:  # reported below
                in_flight["error"] = e

        thread = threading.Thread(target=infer)
        thread.start()
        time.sleep(0.3)
        server.send_signal(signal.SIGTERM)
        thread.join(600)
        if "error" in in_flight or "result" not in in_flight:
            failures.append(f"request in flight at SIGTERM failed: {in_flight.get('error')}")
        else:
            names = [o["name"] for o in in_flight["result"].get_response()["outputs"]]
            got = in_flight["result"].as_numpy(names[0])
            if not np.allclose(got, expected[0][1], rtol=RTOL, atol=ATOL):
                failures.append("request in flight at SIGTERM: wrong output")
        try:
            code = server.wait(120)
        except subprocess.TimeoutExpired:
            code = None
            failures.append("server did not exit within 120 s of SIGTERM")
        if code not in (0, None):
            failures.append(f"server exited with {code} after SIGTERM")
        if code == 0:
            print(f"SIGTERM: in-flight request answered ({slow.name}), server exited 0", flush=True)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        reader.join(5)
    if failures:
        print("server log (last 40 lines):")
        print("".join(log[-40:]))
        print(f"FAIL: {len(failures)} problem(s)")
        for f in failures:
            print("  ", f)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
