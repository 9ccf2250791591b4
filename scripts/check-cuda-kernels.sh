#!/usr/bin/env bash
# Compiles every CUDA kernel (shaders/cuda/*.cu, with each set of defines the kernel table
# instantiates it with) to PTX with NVRTC, through the cuda crate's own compile path. NVRTC
# needs no GPU or driver: it comes from the nvidia-cuda-nvrtc-cu12 wheel, installed into a
# cached virtual environment. TESSERA_REQUIRE_NVRTC=1 makes a missing libnvrtc a failure, so
# this check cannot pass by skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${TESSERA_NVRTC_VENV:-$HOME/.cache/tessera-ci/venv-nvrtc}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
lib="$("$venv/bin/python" - <<'PY' 2>/dev/null || true
import pathlib, nvidia.cuda_nvrtc as m
print(pathlib.Path(list(m.__path__)[0]) / "lib")
PY
)"
if [ -z "$lib" ] || ! ls "$lib"/libnvrtc.so.* >/dev/null 2>&1; then
    echo "installing nvidia-cuda-nvrtc-cu12 (NVRTC, for compiling the cuda kernels) into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "nvidia-cuda-nvrtc-cu12>=12.8,<13"
    lib="$("$venv/bin/python" -c 'import pathlib, nvidia.cuda_nvrtc as m; print(pathlib.Path(list(m.__path__)[0]) / "lib")')"
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
echo "compiling every cuda kernel to PTX with NVRTC from $lib"
# --workspace (running only the cuda crate's `nvrtc_tests`): the same feature set as the
# workspace test run that follows, so nothing is built twice.
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TESSERA_REQUIRE_NVRTC=1 \
    cargo test --release --locked --workspace --lib -- nvrtc_tests:: 2>&1 | tee "$log"
# A renamed test module must not turn this check into a no-op.
grep -q "nvrtc_tests::.* ok$" "$log" || { echo "error: no NVRTC kernel test ran" >&2; exit 1; }
