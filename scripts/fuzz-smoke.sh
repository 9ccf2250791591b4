#!/usr/bin/env bash
# Bounded fuzzing of everything Tessera reads from outside (not part of CI: it needs cargo-fuzz
# and takes minutes). Targets (fuzz/fuzz_targets/): load_model (model bytes), run_model (model
# bytes, then a cpu run on inputs of the declared shapes), oip_request (server request decoder:
# JSON and binary extension with its header), npy, npz, tensor_pb (input files).
#
# Usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET | --runs N] [TARGET…]
#   (default 60 s per target, every target; --runs N: N executions per target, however long)
# Seeds are copied into fuzz/corpus/TARGET (ignored by git) from examples/, the shared ONNX node
# tests ($TESSERA_SHARED, else ../shared), tests/data and fuzz/seeds/. Over-allocation is a crash:
# -rss_limit_mb=2048 -malloc_limit_mb=2048. Prints executions and crashes per target; crash
# inputs land in fuzz/artifacts/TARGET/. Exits 1 when any target crashed. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time="${1:-60}")
budget="${1:-60} s per target"
if [ "${1:-}" = --runs ]; then
    limit=(-runs="$2")
    budget="$2 executions per target"
    shift
fi
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(oip_request npy npz tensor_pb load_model run_model)
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
shared="${TESSERA_SHARED:-../shared}"
node="$shared/onnx-tests/node"

seed() { # seed TARGET FILE NAME
    mkdir -p "fuzz/corpus/$1"
    [ -f "$2" ] && cp "$2" "fuzz/corpus/$1/$3" || true
}

small_models=(test_abs test_add test_argmax_default_axis_example test_concat_1d_axis_0
    test_conv_with_strides_padding test_cumsum_1d test_einsum_batch_matmul test_expand_dim_changed
    test_gather_0 test_gemm_default_zero_bias test_if test_loop11 test_lstm_defaults test_matmul_2d
    test_nonzero_example test_onehot_with_axis test_range_float_type_positive_delta
    test_reduce_sum_default_axes_keepdims_example test_reshape_reordered_all_dims
    test_resize_upsample_scales_nearest test_scatter_elements_with_axis test_slice
    test_softmax_axis_1 test_tile test_transpose_default test_where_example)

seed load_model examples/text-orientation/model.onnx text-orientation.onnx
for t in "${small_models[@]}"; do
    seed load_model "$node/$t/model.onnx" "$t.onnx"
    seed run_model "$node/$t/model.onnx" "$t.onnx"
    for pb in "$node/$t"/test_data_set_0/*.pb; do
        seed tensor_pb "$pb" "$t-$(basename "$pb")"
    done
done
for pb in examples/*/test_data_set_0/*.pb; do
    seed tensor_pb "$pb" "example-$(basename "$pb")"
done
mkdir -p fuzz/corpus/oip_request
cp fuzz/seeds/oip_request/* fuzz/corpus/oip_request/
for f in $(find tests/data -name '*.npy' 2>/dev/null); do seed npy "$f" "$(basename "$f")"; done
# .npy files of every dtype and header version, and .npz archives of them (stored and deflated),
# written the way numpy writes them (numpy itself is not needed).
python3 - <<'PY'
import struct, zipfile, os
def npy(descr, shape, body, version=1, fortran=False):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", "(%s)" % "".join("%d, " % s for s in shape) if len(shape) != 1 else "(%d,)" % shape[0])
    pre = 10 if version == 1 else 12
    h = d.encode()
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    ln = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + h + body
arrays = {
    "f4": npy("<f4", [2, 3], struct.pack("<6f", *range(6))),
    "f8": npy("<f8", [3], struct.pack("<3d", 0.5, -1, 2)),
    "f2": npy("<f2", [2], b"\x00\x3c\x00\xc0"),
    "i8": npy("<i8", [1, 2], struct.pack("<2q", 7, -7)),
    "i4_v2": npy("<i4", [2], struct.pack("<2i", 1, 2), version=2),
    "u1": npy("|u1", [4], bytes([0, 1, 2, 255])),
    "b1": npy("|b1", [3], bytes([1, 0, 1])),
    "scalar": npy("<f4", [], struct.pack("<f", 3.5)),
    "empty": npy("<f4", [0, 4], b""),
    "fortran": npy("<f4", [2, 2], struct.pack("<4f", 1, 2, 3, 4), fortran=True),
    "big_endian": npy(">f4", [1], struct.pack(">f", 1.0)),
}
os.makedirs("fuzz/corpus/npy", exist_ok=True)
os.makedirs("fuzz/corpus/npz", exist_ok=True)
for name, data in arrays.items():
    open("fuzz/corpus/npy/%s.npy" % name, "wb").write(data)
for method, tag in [(zipfile.ZIP_STORED, "stored"), (zipfile.ZIP_DEFLATED, "deflated")]:
    with zipfile.ZipFile("fuzz/corpus/npz/%s.npz" % tag, "w", method) as z:
        for name in ["f4", "i8", "b1", "scalar"]:
            z.writestr(name + ".npy", arrays[name])
    with zipfile.ZipFile("fuzz/corpus/npz/%s_one.npz" % tag, "w", method) as z:
        z.writestr("x.npy", arrays["f2"])
PY

# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP lets the stable toolchain accept them.
export RUSTC_BOOTSTRAP=1
# -a: debug assertions on, so an arithmetic overflow is a crash rather than a silent wrap.
cargo fuzz build -a
report=()
failed=0
for target in "${targets[@]}"; do
    mkdir -p "fuzz/artifacts/$target" "fuzz/corpus/$target"
    log="fuzz/artifacts/$target/last-run.log"
    before=$(find "fuzz/artifacts/$target" -type f ! -name '*.log' | wc -l)
    start=$(date +%s)
    set +e
    cargo fuzz run -a "$target" "fuzz/corpus/$target" -- \
        "${limit[@]}" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -print_final_stats=1 -timeout=30 >"$log" 2>&1
    status=$?
    set -e
    took=$(( $(date +%s) - start ))
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
    after=$(find "fuzz/artifacts/$target" -type f ! -name '*.log' | wc -l)
    crashes=$(( after - before ))
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="1 (exit $status, see $log)"; fi
    [ "$status" -eq 0 ] || failed=1
    report+=("$(printf '%-12s %12s executions %6s s  crashes: %s' "$target" "${runs:-?}" "$took" "$crashes")")
    echo "${report[-1]}"
done
echo
echo "fuzz summary ($budget, $(lscpu | sed -n 's/^Model name: *//p'))"
printf '%s\n' "${report[@]}"
exit "$failed"
