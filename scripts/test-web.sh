#!/usr/bin/env bash
# The browser/Node.js package: builds the wasm module and the npm package (web/build.sh), then
# runs its tests in Node.js (cpu) and in headless Chromium (webgpu on SwiftShader, and cpu).
# Installs what a fresh machine lacks: Chromium, the wasm target (stable and nightly, with
# nightly's rust-src for the threaded module), wasm-bindgen-cli, npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/steps.sh

scripts/ensure-packages.sh chromium=chromium
wasm_toolchain() {
    rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
        || rustup target add wasm32-unknown-unknown
    # The threaded module rebuilds std with atomics: nightly, its rust-src and wasm target.
    rustup target list --installed --toolchain nightly 2>/dev/null | grep -qx wasm32-unknown-unknown \
        || rustup target add wasm32-unknown-unknown --toolchain nightly
    rustup component list --installed --toolchain nightly 2>/dev/null | grep -q '^rust-src' \
        || rustup component add rust-src --toolchain nightly
    # The CLI must match the wasm-bindgen crate exactly (the glue format changes between versions).
    local wanted
    wanted="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)"
    if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$wanted" ]; then
        echo "installing wasm-bindgen-cli $wanted"
        # Without its default TLS stack (rustls, ring): only wasm-bindgen-test-runner's driver
        # downloads use it. Measured cold: 122 -> 104 s, 236 -> 199 s of CPU.
        # One codegen unit: less CPU than 16 on a CPU-bound cold run (the edge builds measured
        # -13%).
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
            cargo install wasm-bindgen-cli --version "$wanted" --no-default-features --quiet
    fi
}
export -f wasm_toolchain
step "wasm toolchain (target on stable and nightly, nightly's rust-src, wasm-bindgen-cli)" 1800 bash -c wasm_toolchain
step "npm ci (web/)" 600 npm --prefix web ci --no-audit --no-fund --loglevel=error
# Native wasm-opt where the platform has one (web/tools/package.json): several times less CPU
# than npm's binaryen, the same version and output; web/build.sh uses npm's elsewhere.
if [ "$(uname -sm)" = "Linux x86_64" ]; then
    step "npm ci (web/tools/: native wasm-opt)" 300 \
        npm --prefix web/tools ci --no-audit --no-fund --loglevel=error
fi
# Each module's cargo build as a step of its own (the full web/build.sh then finds them up to
# date); the threaded one rebuilds std and every crate with atomics, in its own target directory.
step "wasm build (cargo, wasm-release)" 2400 web/build.sh --cargo-only single
step "wasm build, threaded (nightly, build-std)" 2400 web/build.sh --cargo-only threaded
step "wasm-bindgen + wasm-opt (web/build.sh)" 2400 web/build.sh
cd web
step "npm package tests (Node.js, Chromium, damaged models)" 1800 \
    node --test --test-reporter=spec test/size.test.mjs test/node.test.mjs test/browser.test.mjs test/damaged.test.mjs
# Last: it rebuilds dist/ (prepack), which the tests above load.
step "npm pack (prepack builds the package; refuses without the toolchain)" 1200 \
    node --test --test-reporter=spec test/pack.test.mjs
