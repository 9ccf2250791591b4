#!/usr/bin/env bash
# Builds the npm package into web/dist/: the wasm module (crates/tessera-wasm, size-optimised,
# SIMD128), its wasm-bindgen glue, shrunk by binaryen's wasm-opt, and the JS API from web/src/.
# Needs: the wasm32-unknown-unknown target, wasm-bindgen-cli at the crate's exact version, and
# `npm install` here (for binaryen). Prints the module's raw and gzipped sizes.
set -euo pipefail
cd "$(dirname "$0")"
root="$(cd .. && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

# What a fresh machine may lack, said before anything is built (`npm pack` runs this too).
missing=()
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
    || missing+=("the wasm32-unknown-unknown target (rustup target add wasm32-unknown-unknown)")
wanted="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$root/Cargo.lock")"
[ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" = "$wanted" ] \
    || missing+=("wasm-bindgen-cli $wanted (cargo install wasm-bindgen-cli --version $wanted)")
[ -x node_modules/.bin/wasm-opt ] || missing+=("binaryen's wasm-opt (npm ci in web/)")
if [ ${#missing[@]} -gt 0 ]; then
    printf 'web/build.sh cannot build the package; missing:\n' >&2
    printf '  - %s\n' "${missing[@]}" >&2
    printf 'scripts/test-web.sh installs all of them.\n' >&2
    exit 1
fi

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
