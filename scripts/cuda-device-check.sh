#!/usr/bin/env bash
# The cuda backend on a real NVIDIA GPU, for a session that has the `device` tool (an
# H100/H200 box with 16 cores, the CUDA toolkit, PyTorch and a CPU-only onnxruntime, and no
# network). A device call carries at most 64 MiB and a warm machine keeps what earlier calls
# carried for ~30 s, so the work is cut in two calls made back to back:
#
#   scripts/cuda-device-check.sh pack    HERE (no GPU needed): builds the release `tessera` and
#       the conformance test binaries (cudarc loads CUDA at run time, so they need no toolkit),
#       and packs them with the shared test data into `.cuda-check/` (git-ignored through
#       .git/info/exclude): part `a` (binaries, node suites, the smaller models) and part `b`
#       (the models over 32 MiB), each under the carry limit. It prints the two device calls.
#   scripts/cuda-device-check.sh probe   THERE, call 1 (carrying part b): prints what the
#       machine has (GPU, driver, CUDA libraries, Python packages) and unpacks what arrived.
#   scripts/cuda-device-check.sh run     THERE, call 2 (carrying part a): unpacks, then
#       - the 20 real models, the node suite and the small suites on cuda, at once in three
#         processes (strict placement; TESSERA_REQUIRE_CUDA=1, so a missing device or library
#         fails instead of skipping; nothing is blessed: the pass sets go to the results as
#         candidate lists for review);
#       - `tessera compare --backends cpu,cuda` on every real model that failed (first
#         diverging step);
#       - latency: the shared models on tessera-cuda against onnxruntime's CPU provider (16
#         threads) and tessera-cpu (bench/compare_onnxruntime.py --backend cuda), with each
#         plan's device memory; ResNet-50 and a small BERT against PyTorch eager on the same GPU
#         (bench/cuda_vs_torch.py).
#       Writes $OUT/log.txt and $OUT/results.tgz (every log, list and table). Fails if a test
#       failed or skipped, or a benchmark could not measure something. Under 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
stage=.cuda-check
work=/tmp/tessera-cuda-check
# Models at least this large travel in part b.
big_model_mib=32
# What one part may hold: the carry limit less the working tree that travels with it.
part_limit_mib=60

pack() {
    local exclude
    exclude="$(git rev-parse --git-path info/exclude)"
    grep -qx '/.cuda-check/' "$exclude" 2>/dev/null || echo '/.cuda-check/' >> "$exclude"
    local shared="${TESSERA_SHARED:-$(cd .. && pwd)/shared}"
    local target
    target="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')}"
    # The workspace's test build (what CI builds, so nothing is rebuilt with other features);
    # it builds the `tessera` binary too. Test binaries' paths from cargo's JSON messages.
    local tests
    tests="$(cargo test --workspace --release --locked --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"] and m["target"]["name"] in ("node_suite", "real_models"):
        print(m["executable"])')"
    [ "$(echo "$tests" | wc -w)" -eq 2 ] || { echo "error: expected the node_suite and real_models test binaries, got: $tests" >&2; exit 1; }
    rm -rf "$stage" && mkdir -p "$stage/a" "$stage/b" "$stage/tmp/bin"
    cp "$target/release/tessera" "$stage/tmp/bin/"
    for t in $tests; do cp "$t" "$stage/tmp/bin/$(basename "$t" | sed 's/-[0-9a-f]*$//')"; done
    strip "$stage/tmp/bin/"*
    # The test binaries find tests/expected through the path they were built at.
    pwd > "$stage/tmp/bin/repo_path.txt"
    local name big=() small=()
    for dir in "$shared"/models/*/; do
        name="$(basename "$dir")"
        if [ "$(du -sm "$dir" | cut -f1)" -ge "$big_model_mib" ]; then big+=("$name"); else small+=("$name"); fi
    done
    local base
    base="$(basename "$shared")"
    tar -cf "$stage/tmp/a.tar" -C "$stage/tmp" bin
    tar -rf "$stage/tmp/a.tar" tests/expected
    tar -rf "$stage/tmp/a.tar" -C "$shared/.." "$base/onnx-tests" "$base/models/MANIFEST.tsv" \
        "${small[@]/#/$base/models/}"
    tar -cf "$stage/tmp/b.tar" -C "$shared/.." "${big[@]/#/$base/models/}"
    for part in a b; do
        xz -T0 -6 < "$stage/tmp/$part.tar" > "$stage/$part/$part.tar.xz"
        ( cd "$stage/$part" && sha256sum "$part.tar.xz" > "$part.sha256" )
        local mib
        mib="$(( $(stat -c %s "$stage/$part/$part.tar.xz") / 1048576 ))"
        echo "part $part: ${mib} MiB"
        [ "$mib" -lt "$part_limit_mib" ] || { echo "error: part $part is over ${part_limit_mib} MiB" >&2; exit 1; }
    done
    rm -rf "$stage/tmp"
    echo "part a: binaries, node suites, ${#small[@]} models; part b: ${big[*]}"
    echo
    echo "Device calls, the second right after the first (the machine stays warm ~30 s):"
    echo "  run(carry=[\"$stage/b\"], command=\"scripts/cuda-device-check.sh probe\", timeout_s=120)"
    echo "  run(carry=[\"$stage/a\"], command=\"scripts/cuda-device-check.sh run\", timeout_s=600)"
}

find_lib() {  # prints the folder holding $1 (e.g. libnvrtc.so*), searching the usual places
    local found
    found="$( (ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
        /usr/lib/x86_64-linux-gnu 2>/dev/null; python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null) \
        | while read -r d; do find "$d" -maxdepth 5 -name "$1" 2>/dev/null; done | head -1)"
    [ -n "$found" ] && dirname "$found"
}

unpack() {  # every part carried so far, once
    mkdir -p "$work"
    local part
    for part in a b; do
        if [ -f "$work/.unpacked-$part" ]; then
            echo "part $part: unpacked earlier"
        elif [ -f "$stage/$part/$part.tar.xz" ]; then
            ( cd "$stage/$part" && sha256sum -c --quiet "$part.sha256" )
            xz -T0 -d < "$stage/$part/$part.tar.xz" | tar -C "$work" -xf -
            touch "$work/.unpacked-$part"
            echo "part $part: unpacked"
        else
            echo "part $part: not here"
        fi
    done
}

libraries() {
    # cudarc (built against CUDA 12 names) looks for libnvrtc.so / libcublas.so and .so.12 ...:
    # link whatever version this machine has under the plain names.
    local libs="$work/libs"
    mkdir -p "$libs"
    local lib dir file dirs=""
    for lib in nvrtc cublas cublasLt; do
        dir="$(find_lib "lib$lib.so.*[0-9]" || true)"
        if [ -n "$dir" ]; then
            file="$(ls "$dir"/lib$lib.so.*[0-9] | grep -v alt | sort -V | tail -1)"
            ln -sf "$file" "$libs/lib$lib.so"
            echo "lib$lib: $file"
            dirs="$dirs:$dir"  # what each library loads beside it (libnvrtc-builtins)
        else
            echo "lib$lib: not found"
        fi
    done
    export LD_LIBRARY_PATH="$libs$dirs:/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

probe() {
    echo "== probe"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || echo "nvidia-smi: not found"
    nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' || true
    nproc; grep -m1 'model name' /proc/cpuinfo || true
    ls /usr/local/cuda*/version* 2>/dev/null || true
    command -v nvcc >/dev/null && nvcc --version | tail -2
    ldconfig -p | grep -E 'libcuda\.so|libnvrtc|libcublas' || echo "ldconfig: no CUDA libraries on the default path"
    python3 - <<'PY' || true
import importlib
for name in ("torch", "onnxruntime", "onnx", "numpy", "transformers", "torchvision"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" cuda={m.version.cuda} available={m.cuda.is_available()}"
        if name == "onnxruntime":
            extra = f" providers={m.get_available_providers()}"
        print(f"python {name} {m.__version__}{extra}")
    except Exception as e:
        print(f"python {name}: not importable ({e})")
PY
}

run() {
    : "${OUT:?set OUT to the folder results go to}"
    local res=/tmp/tessera-cuda-results
    rm -rf "$res" && mkdir -p "$res"
    trap 'tar -czf "$OUT/results.tgz" -C "$res" .' EXIT
    exec > >(tee "$OUT/log.txt") 2>&1
    local t0=$SECONDS status=0
    unpack
    [ -f "$work/.unpacked-a" ] || { echo "error: part a (binaries, suites) is not here" >&2; exit 1; }
    libraries
    probe > "$res/probe.txt" 2>&1; cat "$res/probe.txt"
    local bin="$work/bin"
    "$bin/tessera" devices > "$res/devices.txt" 2>&1 || status=1
    cat "$res/devices.txt"
    export TESSERA_SHARED="$work/shared" TESSERA_REQUIRE_CUDA=1 TESSERA_PASS_LISTS_TO="$res"
    local repo_path
    repo_path="$(cat "$bin/repo_path.txt")"
    mkdir -p "$repo_path/tests" && cp -r "$work/tests/expected" "$repo_path/tests/"
    echo "== tests on cuda (three processes at once)"
    local models_present
    models_present="$(find "$TESSERA_SHARED/models" -name model.onnx | wc -l)"
    (
        cd "$repo_path/tests"
        if [ "$models_present" -eq 20 ]; then
            timeout 180 "$bin/real_models" --test-threads 1 --nocapture real_models_on_cuda
        else
            # Part b did not arrive (the machine went cold between the calls): each model present.
            echo "only $models_present of the 20 models are here"
            for dir in "$TESSERA_SHARED"/models/*/; do
                echo "$(basename "$dir"): $(timeout 60 "$bin/tessera" check "$dir" --backend cuda 2>&1 | tail -1)"
            done
            false
        fi
    ) > "$res/real_models_cuda.txt" 2>&1 &
    local real=$!
    ( cd "$repo_path/tests" && timeout 180 "$bin/node_suite" --test-threads 1 --nocapture node_suite_on_cuda ) \
        > "$res/node_suite_cuda.txt" 2>&1 &
    local node=$!
    ( cd "$repo_path/tests" && timeout 180 "$bin/node_suite" --test-threads 1 --nocapture small_model_suites_on_cuda ) \
        > "$res/small_suites_cuda.txt" 2>&1 &
    local small=$!
    wait $real || { status=1; echo "real models: FAILED"; }
    grep -E ': (pass|FAIL)|test result|panicked' "$res/real_models_cuda.txt" | tail -30
    wait $node || { status=1; echo "node suite: FAILED"; }
    wait $small || { status=1; echo "small suites: FAILED"; }
    grep -hE "passes|newly|no longer|candidate|test result|panicked|wrong results" \
        "$res/node_suite_cuda.txt" "$res/small_suites_cuda.txt" | cut -c1-600
    if grep -h '^skipped' "$res"/*_cuda.txt; then
        echo "error: a cuda test skipped on the GPU machine" >&2
        status=1
    fi
    echo "tests done at $((SECONDS - t0)) s"
    echo "== first diverging step of each failing real model"
    local name failed pids=()
    failed="$(grep -oE '^[a-z0-9_]+: FAIL' "$res/real_models_cuda.txt" | cut -d: -f1 || true)"
    for name in $failed; do  # at once: 16 cores, one GPU with room for all
        timeout 40 "$bin/tessera" compare "$TESSERA_SHARED/models/$name" --backends cpu,cuda \
            > "$res/compare_$name.txt" 2>&1 &
        pids+=($!)
    done
    # Each by its pid: a bare `wait` also waits for the log's `tee`, which never ends.
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    for name in $failed; do echo "-- $name"; tail -15 "$res/compare_$name.txt"; done
    echo "== latency: shared models, tessera cuda vs onnxruntime cpu ($(nproc) threads)"
    PYTHONUNBUFFERED=1 timeout 150 python3 bench/compare_onnxruntime.py --tessera "$bin/tessera" \
        --models-dir "$TESSERA_SHARED/models" --backend cuda --threads "$(nproc)" \
        --target-s 0.5 --min-runs 10 --max-runs 200 --warmup-s 0.2 --timeout 40 \
        --json-out "$res/shared_models_cuda.json" > "$res/shared_models_cuda.md" 2>&1 || status=1
    grep -E '^\|' "$res/shared_models_cuda.md" | head -50
    echo "== latency: PyTorch eager vs tessera cuda"
    PYTHONUNBUFFERED=1 timeout 140 python3 bench/cuda_vs_torch.py --tessera "$bin/tessera" \
        --out "$work/bench" --runs 30 --warmup 10 || status=1
    cp "$work/bench/bench.md" "$work/bench/bench.json" "$res/" 2>/dev/null || true
    echo "done in $((SECONDS - t0)) s, status $status"
    exit "$status"
}

case "$mode" in
    pack) pack ;;
    probe) : "${OUT:?}"; unpack; libraries; probe ;;
    run) run ;;
    *) echo "usage: $0 pack|probe|run (see the comment at the top)" >&2; exit 2 ;;
esac
