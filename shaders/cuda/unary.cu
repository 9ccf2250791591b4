// y = f(x), element-wise. TS_IN/TS_OUT: device words; TS_EXPR: f applied to `v`
// (a builtin, or one of the functions below); TS_WRAP: narrows integer results.
// params: [n, extra (f32 bits: LeakyRelu alpha, PowConst exponent, IsInf flags)]
struct Kernel {
    const u32* params;
    TS_IN* x;
    TS_OUT* y;


    // erf: Taylor series below |x| = 0.5f (error < 2e-8), else 1 - erfc with Numerical Recipes'
    // erfcc (fractional error < 1.2e-7f).
    __device__ f32 erf_f32(f32 x) {
        const auto a = w_abs(x);
        if (a < 0.5f) {
            const auto t = x * x;
            const auto s = 1.0f - t * (1.0f / 3.0f - t * (0.1f - t * (1.0f / 42.0f - t * (1.0f / 216.0f - t / 1320.0f))));
            return 1.1283791671f * x * s;
        }
        const auto t = 1.0f / (1.0f + 0.5f * a);
        const auto r = t * expf(-a * a - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f
            + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f
            + t * (-0.82215223f + t * 0.17087277f)))))))));
        return w_sign(x) * (1.0f - r);
    }

    __device__ f32 sigmoid_f32(f32 x) {
        // exp of a non-positive number never overflows.
        const auto e = expf(-w_abs(x));
        return select(e / (1.0f + e), 1.0f / (1.0f + e), x >= 0.0f);
    }

    __device__ f32 tanh_f32(f32 x) {
        const auto e = expf(-2.0f * w_abs(x));
        return w_sign(x) * (1.0f - e) / (1.0f + e);
    }

    __device__ f32 round_half_away_f32(f32 x) {
        return w_sign(x) * floorf(w_abs(x) + 0.5f);
    }

    // pow with C semantics for negative bases and integer exponents (powf's own rules differ).
    __device__ f32 pow_f32(f32 b, f32 e) {
        if (e == 0.0f) { return 1.0f; }
        if (b == 0.0f) { return select(bitcast<f32>(0x7f800000u), 0.0f, e > 0.0f); }
        const auto r = exp2f(e * log2f(w_abs(b)));
        if (b > 0.0f) { return r; }
        if (floorf(e) != e) { return bitcast<f32>(0x7fc00000u); }
        const auto odd = fmodf(w_abs(e), 2.0f) == 1.0f;
        return select(r, -r, odd);
    }

    __device__ u32 is_nan_f32(f32 x) {
        return select(0u, 1u, (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u);
    }

    // params[1] bit 0: detect +inf, bit 1: detect -inf.
    __device__ u32 is_inf_f32(f32 x) {
        const auto bits = bitcast<u32>(x);
        const auto pos = bits == 0x7f800000u && (params[1] & 1u) != 0u;
        const auto neg = bits == 0xff800000u && (params[1] & 2u) != 0u;
        return select(0u, 1u, pos || neg);
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto v = x[i];
        y[i] = TS_WRAP(TS_EXPR);
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_IN* x, TS_OUT* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
