#!/usr/bin/env bash
# Derives the quantized conformance suite (tests/quantized_models.rs) from the shared float models
# with onnxruntime's own quantizer (tests/quantized/derive.py, versions pinned in
# tests/quantized/requirements.txt), into ~/.cache/tessera-ci/quantized. Cached: derived again
# only when derive.py, the pinned versions or the shared models' manifest change.
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${TESSERA_SHARED:-$(cd .. && pwd)/shared}"
cache="$HOME/.cache/tessera-ci"
out="$cache/quantized"
venv="$cache/venv-quantized"
key="$(cat tests/quantized/derive.py tests/quantized/requirements.txt "$shared/models/MANIFEST.tsv" | sha256sum | cut -c1-32)"
if [ -f "$out/key" ] && [ "$(cat "$out/key")" = "$key" ] && [ -f "$out/manifest.json" ]; then
    echo "quantized suite: cached in $out ($(ls -d "$out"/*__* | wc -l) cases)"
    exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/quantized/requirements.txt
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
"$venv/bin/python" tests/quantized/derive.py "$shared/models" "$out.tmp" > "$out.tmp/derive.log" 2>&1 \
    || { tail -30 "$out.tmp/derive.log" >&2; exit 1; }
cp tests/quantized/derive.py "$out.tmp/derive.py"
echo "$key" > "$out.tmp/key"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "quantized suite: derived into $out ($(ls -d "$out"/*__* | wc -l) cases)"
