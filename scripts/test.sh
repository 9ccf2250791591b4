#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, the CLI driven as a user would, the ONNX node
# suite and the 20 shared real models on cpu and wgpu, cuda without a GPU, the npm package in
# Node.js and Chromium, the server through tritonclient, the arm64 binary under qemu, the serving
# image and the KServe manifests. Installs what a fresh machine lacks first. Each step runs under
# its own time limit, and the table of step times is printed at the end (see docs/ci.md for a
# measured cold run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ci-guard.sh
source scripts/lib/steps.sh

# Test data lives beside the repository unless TESSERA_SHARED says otherwise.
export TESSERA_SHARED="${TESSERA_SHARED:-$(cd .. && pwd)/shared}"
if [ ! -d "$TESSERA_SHARED/onnx-tests/node" ] || [ ! -d "$TESSERA_SHARED/models" ]; then
    echo "error: shared test data not found at $TESSERA_SHARED (set TESSERA_SHARED)" >&2
    exit 1
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found; install Rust >= 1.91 with rustup" >&2
    exit 1
fi
target="${CARGO_TARGET_DIR:-target}"

# Every Debian package the suites use, in one apt transaction: lavapipe (wgpu tests on a CPU),
# Chromium (diagnostics pictures, the npm package), the ARM cross compilers and qemu (edge),
# buildah and iproute2 (the serving image, scripts/test-image.sh).
step "debian packages" 900 scripts/ensure-packages.sh \
    '/usr/share/vulkan/icd.d/lvp_icd*.json=mesa-vulkan-drivers' chromium=chromium \
    aarch64-linux-gnu-gcc=gcc-aarch64-linux-gnu qemu-aarch64=qemu-user readelf=binutils \
    arm-linux-gnueabihf-gcc=gcc-arm-linux-gnueabihf \
    buildah=buildah ip=iproute2
step "rustfmt" 300 bash -c 'rustup component add rustfmt >/dev/null 2>&1 || true; cargo fmt --all -- --check'
# Before any build: the patched crates' versions name their content, and their files are dated
# back so that builds an earlier clone made stay fresh (the script says why).
step "third_party: versions name the content" 60 scripts/third-party.sh check
# Release: the same build the README's main command uses, and the suites run in seconds.
step "native build (release, every test binary)" 2400 cargo test --workspace --release --locked --no-run
# The edge builds (arm64, the x86-64 musl binary the serving image holds, 32-bit ARM) need nothing from
# the native and browser suites, which leave a core idle much of their time (Chromium, qemu,
# single-threaded loops, wasm-opt): they run beside them from here, in their own target directory
# (two cargo builds cannot share one), their output kept apart and printed when
# scripts/test-edge.sh runs the qemu checks at the end.
# (Its rustup target is added here first: two rustup commands at once can clash.)
for edge_target in aarch64-unknown-linux-musl x86_64-unknown-linux-musl \
    thumbv7neon-unknown-linux-gnueabihf; do
    rustup target list --installed | grep -qx "$edge_target" || rustup target add "$edge_target"
done
# The arm64 board binary rebuilds std (the edge profile): nightly's rust-src.
rustup component list --installed --toolchain nightly 2>/dev/null | grep -q '^rust-src' \
    || rustup component add rust-src --toolchain nightly
edge_log="$(mktemp -t tessera-edge-build.XXXXXX)"
setsid scripts/test-edge.sh --build-only > "$edge_log" 2>&1 &
edge_build=$!
# An EXIT trap runs under errexit: nothing in it may fail before the table is printed.
trap 'rc=$?; kill -- -"$edge_build" 2>/dev/null || true; tessera_print_steps "$rc"' EXIT

step "cuda kernels compiled by NVRTC" 600 scripts/check-cuda-kernels.sh

step "quantized suite: derive with onnxruntime's quantizer" 900 scripts/derive-quantized.sh

# cargo-nextest (where installed) runs the 26 test binaries side by side; `cargo test` runs them
# one after another while the slowest leave a core idle. nextest runs no doctests: cargo does.
native_tests() {
    if cargo nextest --version >/dev/null 2>&1; then
        cargo nextest run --workspace --release --locked --no-fail-fast --success-output immediate \
            && cargo test --workspace --release --locked --doc
    else
        cargo test --workspace --release --locked
    fi
}
export -f native_tests
native_log="$(mktemp)"
step "native tests (unit, CLI, node suite, real models)" 1800 \
    bash -c 'set -o pipefail; native_tests 2>&1 | tee "$0"' "$native_log"

# GPU tests skip only where no CUDA device is usable, and how many do is known: a new silent
# skip (or a skip where a device is present) fails here.
expected_gpu_skips=11
skips="$(grep -o 'skipped: no \(cuda\|CUDA\) device here' "$native_log" | wc -l)"
cuda_available="$("$target/release/tessera" devices --json \
    | python3 -c 'import json,sys; print(any(b["backend"] == "cuda" and b["available"] for b in json.load(sys.stdin)))')"
if [ "$cuda_available" = True ]; then expected_gpu_skips=0; fi
rm -f "$native_log"
if [ "$skips" -ne "$expected_gpu_skips" ]; then
    echo "error: $skips GPU test(s) skipped, expected $expected_gpu_skips (cuda available: $cuda_available)" >&2
    exit 1
fi
echo "GPU tests skipped: $skips, as expected (no CUDA device here)"

./scripts/test-web.sh
./scripts/test-server.sh
# Edge boards: the static arm64 and 32-bit ARM binaries (built beside the suites above) checked
# under qemu.
if ! wait "$edge_build"; then
    cat "$edge_log"
    echo "error: an edge build failed" >&2
    exit 1
fi
cat "$edge_log"
./scripts/test-edge.sh
# The serving image around the x86-64 musl binary, and deploy/kserve checked against it.
./scripts/test-image.sh
