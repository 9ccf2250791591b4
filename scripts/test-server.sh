#!/usr/bin/env bash
# `tessera serve` with the stock Triton HTTP client: every shared real model through the
# server, then SIGTERM with a request in flight (tests/server/test_tritonclient.py).
# Needs the release binary that `cargo test --workspace --release` builds; makes (or reuses) a
# Python venv with tritonclient[http] beside the cargo target dir.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/steps.sh
export TESSERA_SHARED="${TESSERA_SHARED:-$(cd .. && pwd)/shared}"
target="${CARGO_TARGET_DIR:-target}"
binary="$target/release/tessera"
if [ ! -x "$binary" ]; then
    # The same build as the workspace tests (same features), so nothing is compiled twice.
    cargo test --workspace --release --locked --no-run
fi

source scripts/lib/server-venv.sh
server_venv

step "server: 20 models through tritonclient" 600 \
    "$venv/bin/python" tests/server/test_tritonclient.py --tessera "$binary" --models "$TESSERA_SHARED/models"
