// out = a op b with numpy broadcasting. TS_A: operand word, TS_OUT: result word,
// TS_EXPR: the op on `a` and `b`; TS_WRAP narrows integer results.
// params: [n, rank, out_shape[rank], a_strides[rank], b_strides[rank]] (stride 0 broadcasts)
struct Kernel {
    const u32* params;
    TS_A* lhs;
    TS_A* rhs;
    TS_OUT* out;


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

    __device__ i32 pow_i32(i32 b, i32 e) {
        auto r = 1;
        auto p = b;
        auto k = u32(w_max(e, 0));
        for (;;) {
            if (k == 0u) { break; }
            if ((k & 1u) != 0u) { r = r * p; }
            p = p * p;
            k = k >> 1u;
        }
        return r;
    }

    __device__ u32 pow_u32(u32 b, u32 e) {
        auto r = 1u;
        auto p = b;
        auto k = e;
        for (;;) {
            if (k == 0u) { break; }
            if ((k & 1u) != 0u) { r = r * p; }
            p = p * p;
            k = k >> 1u;
        }
        return r;
    }

    __device__ f32 fmod_f32(f32 a, f32 b) { return fmodf(a, b); }

    __device__ u32 flag(bool c) {
        return select(0u, 1u, c);
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto rank = params[1];
        auto rest = i;
        auto ai = 0u;
        auto bi = 0u;
        for (auto axis = rank; axis > 1u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[2u + d];
            const auto coord = rest % dim;
            rest = rest / dim;
            ai += coord * params[2u + rank + d];
            bi += coord * params[2u + 2u * rank + d];
        }
        // The outermost axis: what is left is its coordinate.
        if (rank > 0u) {
            ai += rest * params[2u + rank];
            bi += rest * params[2u + 2u * rank];
        }
        const auto a = lhs[ai];
        const auto b = rhs[bi];
        out[i] = TS_WRAP(TS_EXPR);
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_A* lhs, TS_A* rhs, TS_OUT* out) {
    Kernel kernel{params, lhs, rhs, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
