#!/usr/bin/env bash
# Builds the npm package into web/dist/: the wasm module (crates/tessera-wasm, size-optimised,
# SIMD128), its wasm-bindgen glue, shrunk by binaryen's wasm-opt, and the JS API from web/src/.
# Needs: the wasm32-unknown-unknown target, wasm-bindgen-cli at the crate's exact version, and
# `npm install` here (for binaryen). Prints the module's raw and gzipped sizes.
set -euo pipefail
cd "$(dirname "$0")"
root="$(cd .. && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

(cd "$root" && cargo build -p tessera-wasm --target wasm32-unknown-unknown --profile wasm-release --locked)

rm -rf dist && mkdir -p dist/wasm
wasm-bindgen --target web --no-typescript --out-dir dist/wasm \
    "$target_dir/wasm32-unknown-unknown/wasm-release/tessera_wasm.wasm"
# Debian's binaryen (108) breaks wasm-bindgen's glue; npm's is recent and works. wasm-opt takes
# minutes on 2 cores: its output is kept per exact input, wasm-opt version and flags.
opt_flags=(-Oz --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
    --enable-mutable-globals --enable-reference-types --enable-multivalue)
wasm_opt=node_modules/.bin/wasm-opt
key="$( { sha256sum < dist/wasm/tessera_wasm_bg.wasm; "$wasm_opt" --version; echo "${opt_flags[*]}"; } | sha256sum | cut -c1-32)"
cached="$target_dir/wasm-opt-cache/$key.wasm"
if [ ! -f "$cached" ]; then
    mkdir -p "$(dirname "$cached")"
    "$wasm_opt" "${opt_flags[@]}" dist/wasm/tessera_wasm_bg.wasm -o "$cached.tmp"
    mv "$cached.tmp" "$cached"
fi
cp "$cached" dist/wasm/tessera_wasm_bg.wasm
cp src/index.js src/index.d.ts dist/

wasm=dist/wasm/tessera_wasm_bg.wasm
echo "tessera wasm: $(stat -c %s "$wasm") bytes raw, $(gzip -9 -c "$wasm" | wc -c) bytes gzip -9"
