#!/usr/bin/env python3
"""deploy/ as a cluster would use it, without a cluster (scripts/test-image.sh runs this):

1. deploy/kserve/*.yaml validate against KServe's API schema (kserve_manifests.py, pinned
   release), and the validator itself rejects broken copies of them (so it can fail);
2. the manifests agree with each other and with the image: runtime name, model format, protocol,
   the container KServe requires (`kserve-container`), one port everywhere (container port,
   probes, Prometheus annotation, the image's EXPOSE and its entrypoint's --port);
3. the image's config: a non-root user, the entrypoint, the labels;
4. the pod's process as the kubelet would start it: the image's ENTRYPOINT followed by the
   ServingRuntime's args (KServe's `{{.Name}}` filled in with the InferenceService's name), the
   image's environment, user 1000, the image's own filesystem as root, the model where KServe's
   storage initializer puts it (the storageUri folder at /mnt/models, read-only). Then the probes'
   paths answer 200, the model's metadata and one inference (stock tritonclient) are right, the
   Prometheus path counts the request, and SIGTERM ends it with exit 0.

Part 4 runs in private mount and network namespaces (`unshare`, needs root): port 8080 and
/mnt/models are the pod's own, whatever the machine has. Fails loudly; never skips.

    python tests/server/test_kserve_deploy.py --image-config CONFIG.json --rootfs IMAGE_ROOT
"""

import argparse
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kserve_manifests  # noqa: E402
from test_tritonclient import infer_inputs, numbered  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "deploy/kserve/serving-runtime.yaml"
# Every InferenceService in deploy/kserve is checked; the plain one (first) is served as a pod.
SERVICES = sorted((ROOT / "deploy/kserve").glob("inference-service*.yaml"),
                  key=lambda p: (p.name != "inference-service.yaml", p.name))
# The model the InferenceService's storageUri folder holds in this test, with its test data.
MODEL = ROOT / "examples/text-orientation"
RTOL, ATOL = 1e-3, 1e-4


def fail(message):
    raise SystemExit(f"FAIL: {message}")


def check_schema(runtime, services):
    for path in [RUNTIME] + SERVICES:
        errors = kserve_manifests.validate(yaml.safe_load(path.read_text()))
        if errors:
            fail(f"{path.name} does not validate against kserve {kserve_manifests.KSERVE_VERSION}:\n  " + "\n  ".join(errors))
    service = services[0]
    # The validator must be able to say no: each broken copy has to be rejected.
    broken = []
    b = copy.deepcopy(runtime)
    b["spec"]["containers"][0]["arg"] = b["spec"]["containers"][0].pop("args")
    broken.append(("a misspelt field (arg)", b))
    b = copy.deepcopy(runtime)
    b["spec"]["containers"][0]["ports"][0]["containerPort"] = "8080"
    broken.append(("a port as a string", b))
    b = copy.deepcopy(runtime)
    del b["spec"]["containers"]
    broken.append(("no containers", b))
    b = copy.deepcopy(service)
    del b["spec"]["predictor"]
    broken.append(("no predictor", b))
    b = copy.deepcopy(service)
    b["apiVersion"] = "serving.kserve.io/v1"
    broken.append(("an unknown apiVersion", b))
    for what, document in broken:
        if not kserve_manifests.validate(document):
            fail(f"the schema check accepted a manifest with {what}")
    print(f"manifests: {', '.join(p.name for p in [RUNTIME] + SERVICES)} valid against "
          f"kserve {kserve_manifests.KSERVE_VERSION}'s schema; {len(broken)} broken copies rejected")


def http_port(probe, where):
    port = probe.get("httpGet", {}).get("port")
    if not isinstance(port, int):
        fail(f"{where}: expected a numeric httpGet port, got {port!r}")
    return port


def runtime_arg(runtime, flag, default):
    args = runtime["spec"]["containers"][0]["args"]
    return float(args[args.index(flag) + 1]) if flag in args else default


def check_service(runtime, path, service):
    spec, predictor = runtime["spec"], service["spec"]["predictor"]
    model = predictor["model"]
    if model.get("runtime") != runtime["metadata"]["name"]:
        fail(f"{path.name} asks for runtime {model.get('runtime')!r}, the ServingRuntime is "
             f"{runtime['metadata']['name']!r}")
    formats = {f["name"] for f in spec.get("supportedModelFormats", [])}
    if model.get("modelFormat", {}).get("name") not in formats:
        fail(f"{path.name}: model format {model.get('modelFormat')} is not among the runtime's {sorted(formats)}")
    if model.get("protocolVersion") not in spec.get("protocolVersions", []):
        fail(f"{path.name}: protocol {model.get('protocolVersion')} is not among the runtime's "
             f"{spec.get('protocolVersions')}")
    # SIGTERM to SIGKILL must hold the drain delay and the longest request.
    grace = predictor.get("terminationGracePeriodSeconds", 30)  # Kubernetes' default
    needed = runtime_arg(runtime, "--drain-delay-s", 0.0) + runtime_arg(runtime, "--timeout-s", 60.0)
    if grace <= needed:
        fail(f"{path.name}: terminationGracePeriodSeconds {grace} does not cover the runtime's drain delay "
             f"plus request timeout ({needed} s)")


def check_consistency(runtime, services, config, report=True):
    for path, service in zip(SERVICES, services):
        check_service(runtime, path, service)
    spec = runtime["spec"]
    containers = spec["containers"]
    if [c["name"] for c in containers] != ["kserve-container"]:
        fail(f"KServe runs the container named kserve-container; the runtime has {[c['name'] for c in containers]}")
    container = containers[0]
    ports = {p["containerPort"] for p in container.get("ports", [])}
    if len(ports) != 1:
        fail(f"expected one container port, got {sorted(ports)}")
    port = ports.pop()
    for probe in ("readinessProbe", "livenessProbe"):
        if probe not in container:
            fail(f"the runtime's container has no {probe}")
        if http_port(container[probe], probe) != port:
            fail(f"{probe} checks port {http_port(container[probe], probe)}, the container listens on {port}")
    metrics_port = spec.get("annotations", {}).get("prometheus.kserve.io/port")
    if metrics_port != str(port):
        fail(f"prometheus.kserve.io/port is {metrics_port!r}, the container listens on {port}")

    image = config["OCIv1"]["config"]
    entrypoint = image.get("Entrypoint") or []
    if entrypoint[:2] != ["/usr/local/bin/tessera", "serve"]:
        fail(f"the image's entrypoint is {entrypoint}")
    if "--port" not in entrypoint or entrypoint[entrypoint.index("--port") + 1] != str(port):
        fail(f"the image's entrypoint {entrypoint} does not listen on the runtime's port {port}")
    if "--host" not in entrypoint or entrypoint[entrypoint.index("--host") + 1] != "0.0.0.0":
        fail(f"the image's entrypoint {entrypoint} does not listen on every address (--host 0.0.0.0)")
    if f"{port}/tcp" not in (image.get("ExposedPorts") or {}):
        fail(f"the image exposes {sorted(image.get('ExposedPorts') or {})}, not {port}/tcp")
    user = image.get("User", "")
    uid = user.split(":")[0]
    if not uid.isdigit() or int(uid) == 0:
        fail(f"the image runs as {user!r}: expected a numeric non-root user (it has no /etc/passwd)")
    labels = image.get("Labels") or {}
    for label in ("org.opencontainers.image.title", "org.opencontainers.image.description",
                  "org.opencontainers.image.licenses"):
        if not labels.get(label):
            fail(f"the image has no {label} label")
    if config["OCIv1"].get("os") != "linux" or config["OCIv1"].get("architecture") != "amd64":
        fail(f"the image is {config['OCIv1'].get('os')}/{config['OCIv1'].get('architecture')}, expected linux/amd64")
    model = services[0]["spec"]["predictor"]["model"]
    if report:
        print(f"consistent: runtime {runtime['metadata']['name']}, format {model['modelFormat']['name']}, "
              f"protocol {model['protocolVersion']}, port {port} (container, probes, metrics, EXPOSE, "
              f"entrypoint), user {user}, grace periods cover drain delay + timeout")
    return port, container, image


def pod_command(runtime, service, image):
    """What the kubelet runs: the image's ENTRYPOINT, the container's args in place of CMD."""
    name = service["metadata"]["name"]
    args = [a.replace("{{.Name}}", name) for a in runtime["spec"]["containers"][0]["args"]]
    if any("{{" in a for a in args):
        fail(f"a KServe placeholder this test does not fill in: {args}")
    return image["Entrypoint"] + args


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return None, b""


def serve_as_a_pod(runtime, service, image, container, port, rootfs):
    import tritonclient.http as httpclient

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    name = service["metadata"]["name"]
    storage = Path(tempfile.mkdtemp(prefix="tessera-kserve-storage-"))
    storage.chmod(0o755)
    shutil.copy(MODEL / "model.onnx", storage / "model.onnx")
    (storage / "model.onnx").chmod(0o644)
    mount_point = Path(rootfs) / "mnt/models"
    mount_point.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(storage), str(mount_point)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(mount_point)], check=True)

    user = image["User"]
    env = dict(e.split("=", 1) for e in image.get("Env") or [])
    command = pod_command(runtime, service, image)
    print(f"pod: uid:gid {user}, root {rootfs}, /mnt/models = storageUri folder (read-only), env {env}")
    print(f"pod: {' '.join(command)}")
    server = subprocess.Popen(["chroot", f"--userspec={user}", str(rootfs)] + command, env=env)
    try:
        ready_path = container["readinessProbe"]["httpGet"]["path"]
        live_path = container["livenessProbe"]["httpGet"]["path"]
        deadline = time.monotonic() + 120
        while get(port, ready_path)[0] != 200:
            if server.poll() is not None:
                fail(f"the server exited with {server.returncode} before its readiness probe passed")
            if time.monotonic() > deadline:
                fail(f"readiness probe {ready_path} did not answer 200 within 120 s")
            time.sleep(0.3)
        status = get(port, live_path)[0]
        if status != 200:
            fail(f"liveness probe {live_path} answered {status}")
        uid = next(line.split()[1] for line in Path(f"/proc/{server.pid}/status").read_text().splitlines()
                   if line.startswith("Uid:"))
        if uid != user.split(":")[0]:
            fail(f"the server runs as uid {uid}, not the image's user {user}")

        status, body = get(port, f"/v2/models/{name}")
        if status != 200:
            fail(f"model metadata for {name}: {status} {body[:200]!r}")
        meta = json.loads(body)
        inputs = numbered(MODEL / "test_data_set_0", "input")
        outputs = numbered(MODEL / "test_data_set_0", "output")
        if meta.get("name") != name or [i["name"] for i in meta["inputs"]] != [n for n, _ in inputs]:
            fail(f"metadata {meta} does not describe {name} with inputs {[n for n, _ in inputs]}")

        client = httpclient.InferenceServerClient(url=f"127.0.0.1:{port}")
        tensors = infer_inputs(inputs)
        result = client.infer(name, tensors)
        for out_name, want in outputs:
            got = result.as_numpy(out_name)
            if got is None or got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
                fail(f"output {out_name} differs from the stored reference")

        metrics_path = runtime["spec"]["annotations"]["prometheus.kserve.io/path"]
        status, text = get(port, metrics_path)
        want = f'tessera_inference_requests_total{{model="{name}"}} 1'
        if status != 200 or want not in text.decode():
            fail(f"{metrics_path} ({status}) does not count the request: no line '{want}'")
        print(f"pod: ready and live, metadata and one inference through tritonclient right, {metrics_path} counts it")

        # Pod deletion: SIGTERM. With the runtime's --drain-delay-s the server first turns
        # not-ready while still answering (endpoints are removed meanwhile), then exits 0.
        delay = runtime_arg(runtime, "--drain-delay-s", 0.0)
        server.send_signal(signal.SIGTERM)
        if delay > 0:
            deadline = time.monotonic() + delay
            while get(port, ready_path)[0] != 503:
                if time.monotonic() > deadline:
                    fail(f"readiness did not turn 503 within the drain delay ({delay} s) after SIGTERM")
                time.sleep(0.1)
            result = client.infer(name, tensors)
            if not np.allclose(result.as_numpy(outputs[0][0]), outputs[0][1], rtol=RTOL, atol=ATOL):
                fail("a request during the drain delay got a wrong answer")
            print(f"pod: SIGTERM -> readiness 503 and requests still answered during the {delay} s drain delay")
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        try:
            # Kubernetes' default terminationGracePeriodSeconds.
            code = server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            fail("the server did not exit within 30 s of SIGTERM")
        subprocess.run(["umount", str(mount_point)], check=False)
        shutil.rmtree(storage, ignore_errors=True)
    if code != 0:
        fail(f"the server exited with {code} after SIGTERM (expected 0)")
    print("pod: SIGTERM -> exit 0")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image-config", required=True, help="`buildah inspect --type image` output (JSON)")
    parser.add_argument("--rootfs", required=True, help="the image's filesystem (`buildah mount`)")
    parser.add_argument("--in-namespaces", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    runtime = yaml.safe_load(RUNTIME.read_text())
    services = [yaml.safe_load(p.read_text()) for p in SERVICES]
    config = json.loads(Path(args.image_config).read_text())
    if not args.in_namespaces:
        check_schema(runtime, services)
        check_consistency(runtime, services, config)
        if os.geteuid() != 0:
            fail("serving as a pod needs root (mount and network namespaces, chroot, another uid)")
        # The same checks' facts are needed inside: run the pod part in fresh namespaces.
        code = subprocess.call(["unshare", "--mount", "--net", "--fork", "--", sys.executable, __file__,
                                "--image-config", args.image_config, "--rootfs", args.rootfs, "--in-namespaces"])
        if code != 0:
            fail(f"serving as a pod failed (exit {code})")
        print("kserve deploy: all checks passed")
        return
    port, container, image = check_consistency(runtime, services, config, report=False)
    serve_as_a_pod(runtime, services[0], image, container, port, args.rootfs)


if __name__ == "__main__":
    main()
