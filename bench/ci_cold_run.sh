#!/usr/bin/env bash
# Times a cold CI run the way a fresh machine sees it: a clean clone of main beside a copy of
# shared/, an empty target directory, empty cargo/npm/pip/wasm-opt caches and venvs, the wasm
# and musl targets (and nightly's wasm target and rust-src) and wasm-bindgen-cli removed, and
# the Debian packages .ci/run installs purged. Then `bash .ci/run` with CI=true; its step table
# and the total land in LOG.
# DESTRUCTIVE for this machine's caches: run it on a CI-like machine, not a workstation.
# Usage: bench/ci_cold_run.sh [REPO (default: this checkout)] [LOG (default: /tmp/ci-cold.log)]
set -euo pipefail
repo="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
log="${2:-/tmp/ci-cold.log}"
shared="${TESSERA_SHARED:-$(cd "$repo/.." && pwd)/shared}"
work="$(mktemp -d /tmp/ci-cold.XXXXXX)"

echo "emptying caches and removing what .ci/run installs"
rm -rf "$HOME/.cache/tessera-ci" "$HOME/.npm" "$HOME/.cache/pip" \
    "$HOME/.cargo/registry" "$HOME/.cargo/git" "$HOME/.cargo/bin/wasm-bindgen" \
    "$HOME/.cargo/bin/wasm-bindgen-test-runner" "$HOME/.cargo/bin/wasm2es6js"
rustup target remove wasm32-unknown-unknown aarch64-unknown-linux-musl x86_64-unknown-linux-musl \
    thumbv7neon-unknown-linux-gnueabihf 2>/dev/null || true
# The threaded wasm module's nightly parts (the nightly toolchain itself comes with the machine).
rustup target remove wasm32-unknown-unknown --toolchain nightly 2>/dev/null || true
rustup component remove rust-src --toolchain nightly 2>/dev/null || true
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq mesa-vulkan-drivers chromium chromium-common \
    gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf qemu-user buildah >/dev/null 2>&1 || true
DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -qq >/dev/null 2>&1 || true
rm -rf /var/lib/apt/lists/*

git clone -q --no-local "$repo" "$work/main"
cp -r "$shared" "$work/shared"
chmod -R a-w "$work/shared"
echo "cold run of $(git -C "$work/main" rev-parse --short HEAD) in $work/main on $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
start=$SECONDS
rc=0
# The cores' use every 30 s beside the step table's per-step share: where the run idles.
vmstat -n -t 30 > "$log.vmstat" &
sampler=$!
(cd "$work/main" && env -u TESSERA_SHARED -u CARGO_TARGET_DIR CI=true bash .ci/run < /dev/null) > "$log" 2>&1 || rc=$?
kill "$sampler" 2>/dev/null || true
echo "exit $rc after $((SECONDS - start)) s ($(( (SECONDS - start) / 60 )) min); log: $log, cores every 30 s: $log.vmstat"
tail -30 "$log"
exit "$rc"
