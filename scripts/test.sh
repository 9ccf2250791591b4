#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, the CLI driven as a user would, the ONNX node
# suite and the 20 shared real models. Installs what a fresh machine lacks first.
set -euo pipefail
cd "$(dirname "$0")/.."

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
rustup component add rustfmt >/dev/null 2>&1 || true

# The wgpu tests run for real on Mesa's software Vulkan driver (lavapipe) where no GPU exists.
if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing mesa-vulkan-drivers (lavapipe) for the wgpu tests"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers >/dev/null
    else
        echo "error: the wgpu tests need a Vulkan driver: install mesa-vulkan-drivers (lavapipe)" >&2
        exit 1
    fi
fi

# The diagnostics tests render the placement pictures and bench pages in headless Chromium.
scripts/ensure-packages.sh chromium=chromium
cargo fmt --all -- --check
./scripts/check-cuda-kernels.sh
# Release: the same build the README's main command uses, and the suites run in seconds.
cargo test --workspace --release --locked
./scripts/test-web.sh
./scripts/test-server.sh
# Edge boards: static arm64/armv7 binaries checked on real models under qemu.
./scripts/test-edge.sh
