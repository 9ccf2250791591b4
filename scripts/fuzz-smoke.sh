#!/usr/bin/env bash
# Bounded fuzzing of model loading (not part of CI: it needs cargo-fuzz and takes minutes).
# Seeds: the example model and a few node-suite models. Usage: scripts/fuzz-smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
corpus=fuzz/corpus/load_model
mkdir -p "$corpus"
cp examples/text-orientation/model.onnx "$corpus/text-orientation.onnx"
shared="${TESSERA_SHARED:-../shared}"
for t in test_abs test_conv_with_strides_padding test_if test_reshape_reordered_all_dims; do
    [ -f "$shared/onnx-tests/node/$t/model.onnx" ] && cp "$shared/onnx-tests/node/$t/model.onnx" "$corpus/$t.onnx"
done
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP lets the stable toolchain accept them.
RUSTC_BOOTSTRAP=1 cargo fuzz run load_model "$corpus" -- -max_total_time="$seconds" -rss_limit_mb=4096
