// Quantize, Dequantize and LookupTable, element-wise: y = TS_EXPR of `v`, where TS_EXPR is
// `quantize(v)`, `dequantize(v)` or `lookup(v)`; TS_IN/TS_OUT: the words they take and give.
// params, after [n]:
// - quantize (f32 -> u8 / i8 word bits as u32):
//   [n, inv_scale (f32 bits), zero_point (i32), lo (i32), hi (i32)]
//   y = clamp(i32(round_half_even(v * inv_scale)) + zero_point, lo, hi), the i32 conversion
//   saturating like Rust's `as` (NaN gives 0) and the addition wrapping.
// - dequantize (u8 / i8 / i32 words read as i32 -> f32): [n, scale (f32 bits), zero_point (i32)]
//   y = f32(v - zero_point) * scale (the subtraction wraps at 32 bits).
// - lookup (u8 / i8 words as u32 -> output words as u32): [n, table[256]]
//   y = table[v & 0xff]; the table holds output words (i8 entries sign-extended).
struct Kernel {
    const u32* params;
    TS_IN* x;
    TS_OUT* y;


    // Saturating f32 -> i32 (NaN is detected from the bits).
    __device__ i32 f32_to_i32(f32 v) {
        if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return 0; }
        if (v >= 2147483648.0f) { return 2147483647; }
        if (v <= -2147483648.0f) { return -2147483647 - 1; }
        return i32(v);
    }

    __device__ u32 quantize(f32 v) {
        // rintf rounds half to even.
        // Clamp before adding the zero point, so a huge input saturates instead of wrapping.
        const auto zero = param_i32(2u);
        const auto q = w_clamp(f32_to_i32(rintf(v * param_f32(1u))), param_i32(3u) - zero, param_i32(4u) - zero);
        return bitcast<u32>(q + zero);
    }

    __device__ f32 dequantize(i32 v) {
        return f32(v - param_i32(2u)) * param_f32(1u);
    }

    __device__ u32 lookup(u32 v) {
        return params[1u + (v & 0xffu)];
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
