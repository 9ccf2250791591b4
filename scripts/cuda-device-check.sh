#!/usr/bin/env bash
# The cuda backend on a real NVIDIA GPU, in one script, for a session that has the `device`
# tool (an H100/H200 box with 16 cores, the CUDA toolkit, PyTorch and onnxruntime, and no
# network). Two halves:
#
#   scripts/cuda-device-check.sh pack   HERE (no GPU needed): builds the release `tessera`
#       binary and the conformance test binaries (cudarc loads CUDA at run time, so they need
#       no toolkit to build), and packs them with the shared test data into `.cuda-check/`
#       (git-ignored through .git/info/exclude) in parts of at most PART_MIB MiB each, since a
#       device call carries at most 64 MiB (the 20 models alone are ~106 MiB). It prints the
#       device calls to make.
#   scripts/cuda-device-check.sh run    THERE: unpacks whatever parts have arrived under
#       .cuda-check/ (parts carried by earlier calls stay while the machine is warm), then runs
#       the real models and the node suites on cuda (strict placement, TESSERA_REQUIRE_CUDA=1 so
#       a missing device or library fails instead of skipping; nothing is blessed: the pass sets
#       found are written as candidate lists to $OUT for review) and the benchmark against
#       PyTorch eager and onnxruntime, writing logs and bench.md / bench.json under $OUT. It
#       fails if any test skipped or the benchmark could not measure something.
#
# Budget: the tests run in release binaries built here; the bench exports two models and times
# 50 runs each; the whole `run` should take well under 10 minutes on 16 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
stage=.cuda-check
part_mib="${PART_MIB:-56}"

pack() {
    local exclude
    exclude="$(git rev-parse --git-path info/exclude)"
    grep -qx '/.cuda-check/' "$exclude" 2>/dev/null || echo '/.cuda-check/' >> "$exclude"
    local shared="${TESSERA_SHARED:-$(cd .. && pwd)/shared}"
    cargo build --release --locked -p tessera-cli
    # The conformance test binaries, built once; their paths from cargo's JSON messages.
    local tests
    tests="$(cargo test --release --locked -p tessera-conformance --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("node_suite", "real_models"):
        print(m["executable"])')"
    rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/parts"
    cp target/release/tessera "$stage/bin/"
    for t in $tests; do cp "$t" "$stage/bin/$(basename "$t" | sed 's/-[0-9a-f]*$//')"; done
    strip "$stage/bin/"* 2>/dev/null || true
    # One stream: binaries, expected pass lists, the node suites, the models; split in parts.
    # The test binaries find tests/expected through the path they were built at.
    pwd > "$stage/bin/repo_path.txt"
    tar -C "$stage" -cf "$stage/bin.tar" bin
    tar -cf "$stage/data.tar" -C "$shared/.." "$(basename "$shared")/onnx-tests" "$(basename "$shared")/models"
    tar -rf "$stage/data.tar" tests/expected
    tar -cf - -C "$stage" bin.tar data.tar | xz -T0 -6 > "$stage/all.tar.xz"
    rm -rf "$stage/bin" "$stage/bin.tar" "$stage/data.tar"
    split -b "${part_mib}M" -d -a 2 "$stage/all.tar.xz" "$stage/parts/part."
    rm "$stage/all.tar.xz"
    ( cd "$stage/parts" && sha256sum part.* > SHA256SUMS )
    local n
    n="$(ls "$stage/parts" | grep -c '^part\.')"
    echo "packed into $n part(s) under $stage/parts ($(du -sh "$stage/parts" | cut -f1)):"
    ls -la "$stage/parts"
    echo
    echo "Device calls, back to back (the machine stays warm ~30 s after a call):"
    for p in "$stage"/parts/part.*; do
        echo "  run(carry=[\"$p\", \"$stage/parts/SHA256SUMS\"], command=\"true\")   # all but the last"
    done
    echo "  the last: command=\"scripts/cuda-device-check.sh run\", timeout_s=590"
    echo "(Move each part to its own folder, e.g. $stage/p00/, if your carry must name folders.)"
}

find_lib() {  # prints the folder holding $1 (e.g. libnvrtc.so*), searching the usual places
    local found
    found="$( (ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
        /usr/lib/x86_64-linux-gnu 2>/dev/null; python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null) \
        | while read -r d; do find "$d" -maxdepth 4 -name "$1" 2>/dev/null; done | head -1)"
    [ -n "$found" ] && dirname "$found"
}

run() {
    : "${OUT:?set OUT to the folder results go to}"
    exec > >(tee "$OUT/log.txt") 2>&1
    cat "$stage"/parts/part.* 2>/dev/null > /dev/null || { echo "no parts under $stage/parts"; exit 1; }
    ( cd "$stage/parts" && sha256sum -c SHA256SUMS )
    local work=/tmp/tessera-cuda-check
    rm -rf "$work" && mkdir -p "$work"
    cat "$stage"/parts/part.* | xz -d | tar -C "$work" -xf -
    tar -C "$work" -xf "$work/bin.tar"
    tar -C "$work" -xf "$work/data.tar"
    export TESSERA_SHARED="$work/shared"
    # cudarc looks for libnvrtc.so / libcublas.so (and .so.12, .so.11...): link whatever
    # version this machine has under those names.
    local libs="$work/libs"
    mkdir -p "$libs"
    for lib in nvrtc cublas cublasLt; do
        local dir
        dir="$(find_lib "lib$lib.so*" || true)"
        if [ -n "$dir" ]; then
            local file
            file="$(ls "$dir"/lib$lib.so* | grep -v alt | sort | tail -1)"
            ln -sf "$file" "$libs/lib$lib.so"
            echo "lib$lib: $file"
        else
            echo "lib$lib: not found"
        fi
    done
    export LD_LIBRARY_PATH="$libs:/usr/local/nvidia/lib64:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # What this machine has, before anything runs.
    echo "== probe"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "nvidia-smi: not found"
    nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' || true
    ls /usr/local/cuda*/version* /usr/local/cuda/bin/nvcc 2>/dev/null || true
    for lib in libcuda.so.1 'libcublas.so*' 'libnvrtc.so*'; do
        echo "$lib: $(find_lib "$lib" || echo 'not found')"
    done
    python3 - <<'PY' || true
import importlib
for name in ("torch", "onnxruntime", "numpy", "transformers"):
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
    "$work/bin/tessera" devices | tee "$OUT/devices.txt"
    export TESSERA_REQUIRE_CUDA=1 TESSERA_PASS_LISTS_TO="$OUT"
    # The conformance binaries read and write tests/expected at the path they were built at.
    local repo_path
    repo_path="$(cat "$work/bin/repo_path.txt")"
    mkdir -p "$repo_path/tests" && cp -r "$work/tests/expected" "$repo_path/tests/"
    local status=0
    ( cd "$repo_path/tests" && timeout 180 "$work/bin/real_models" --test-threads 1 --nocapture real_models_on_cuda ) \
        > "$OUT/real_models_cuda.txt" 2>&1 || status=1
    tail -30 "$OUT/real_models_cuda.txt"
    ( cd "$repo_path/tests" && timeout 150 "$work/bin/node_suite" --test-threads 1 --nocapture on_cuda ) \
        > "$OUT/node_suite_cuda.txt" 2>&1 || status=1
    grep -E "passes|newly|no longer|skipped|candidate|test result" "$OUT/node_suite_cuda.txt" | tail -20
    if grep -h '^skipped:' "$OUT"/real_models_cuda.txt "$OUT"/node_suite_cuda.txt; then
        echo "error: a cuda test skipped on the GPU machine" >&2
        status=1
    fi
    PYTHONUNBUFFERED=1 timeout 200 python3 bench/cuda_vs_torch.py --tessera "$work/bin/tessera" \
        --out "$work/bench" --runs 50 --warmup 10 || status=1
    cp "$work/bench/bench.md" "$work/bench/bench.json" "$OUT/" 2>/dev/null || true
    exit "$status"
}

case "$mode" in
    pack) pack ;;
    run) run ;;
    *) echo "usage: $0 pack|run (see the comment at the top)" >&2; exit 2 ;;
esac
