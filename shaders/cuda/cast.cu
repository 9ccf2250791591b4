// y = cast(x), element-wise. TS_IN/TS_OUT: device words of the source and target types;
// TS_EXPR: the conversion of `v` (a bitcast and wrap, or one of the functions below).
// Floats to integers truncate toward zero and saturate at the target's range, NaN gives 0
// (Rust's `as`, which the reference uses); floats to bool test the bits, so -0.0 is false
// and NaN true. NaN is detected from the bits, as in the WGSL twin.
// params: [n]
struct Kernel {
    const u32* params;
    TS_IN* x;
    TS_OUT* y;


    __device__ bool nan_f32(f32 v) {
        return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
    }

    __device__ u32 f32_to_bool(f32 v) {
        return select(0u, 1u, (bitcast<u32>(v) & 0x7fffffffu) != 0u);
    }

    // The i32 bounds are not both f32 values, so compare against the powers of two.
    __device__ i32 f32_to_i32(f32 v) {
        if (nan_f32(v)) { return 0; }
        if (v >= 2147483648.0f) { return 2147483647; }
        if (v <= -2147483648.0f) { return -2147483647 - 1; }
        return i32(v);
    }

    // For i8 and i16, whose bounds `lo`, `hi` are f32 values.
    __device__ i32 f32_to_narrow_i32(f32 v, f32 lo, f32 hi) {
        if (nan_f32(v)) { return 0; }
        return i32(w_clamp(v, lo, hi));
    }

    __device__ u32 f32_to_u32(f32 v) {
        if (nan_f32(v) || v <= 0.0f) { return 0u; }
        if (v >= 4294967296.0f) { return 0xffffffffu; }
        return u32(v);
    }

    // For u8 and u16, whose bound `hi` is an f32 value.
    __device__ u32 f32_to_narrow_u32(f32 v, f32 hi) {
        if (nan_f32(v)) { return 0u; }
        return u32(w_clamp(v, 0.0f, hi));
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto v = x[i];
        y[i] = TS_EXPR;
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_IN* x, TS_OUT* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
