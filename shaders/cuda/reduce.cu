// Reduction of x over some axes: out[g] = op over the elements of row g. TS_T: input word (the
// accumulator too; f32 for floats); TS_OUT: output word; TS_OP: 0 Sum, 1 Prod, 2 Max, 3 Min,
// 4 MeanOfSquares, 5 ArgMax, 6 ArgMin, 7 All, 8 Any; TS_FLOAT: whether TS_T is f32 (NaN
// rules); TS_WRAP narrows integer results.
// A row's elements are spread over `threads_per_row` lanes (a power of two <= 64; 64 / it rows
// per workgroup), then combined in workgroup memory. Workgroups loop over the rows' blocks.
// params: [rows, row_size, threads_per_row, init (the accumulator's start as bits: the op's
//          identity, or the reference's value for an empty row) or, for ArgMax / ArgMin, `last`,
//          kept_rank, reduced_rank, kept_dims[kept_rank], kept_strides[kept_rank],
//          reduced_dims[reduced_rank], reduced_strides[reduced_rank]]
// Element j of row g is x[row_base(g) + row_offset(j)], both row-major over their dims.
__shared__ TS_T shared_value[64];
__shared__ u32 shared_index[64];

struct Kernel {
    const u32* params;
    TS_T* x;
    TS_OUT* out;


    static constexpr u32 OP = TS_OP;
    static constexpr bool FLOAT = TS_FLOAT;
    static constexpr bool IS_ARG = OP == 5u || OP == 6u;
    static constexpr u32 GROUP_SIZE = 64u;
    // The index of a lane that saw no element (it loses every comparison).
    static constexpr u32 NONE = 0xffffffffu;


    __device__ u32 row_base(u32 g) {
        const auto rank = params[4];
        auto rest = g;
        auto offset = 0u;
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[6u + d];
            offset += (rest % dim) * params[6u + rank + d];
            rest = rest / dim;
        }
        return offset;
    }

    __device__ u32 row_offset(u32 j) {
        const auto rank = params[5];
        const auto at = 6u + 2u * params[4];
        if (rank == 1u) { return j * params[at + 1u]; }
        auto rest = j;
        auto offset = 0u;
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[at + d];
            offset += (rest % dim) * params[at + rank + d];
            rest = rest / dim;
        }
        return offset;
    }

    __device__ bool is_nan(TS_T v) {
        return FLOAT && (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
    }

    // What an element contributes: its square for MeanOfSquares, a 0 / 1 flag for All / Any.
    __device__ TS_T contribution(TS_T v) {
        if (OP == 4u) { return v * v; }
        if (OP == 7u || OP == 8u) { return select(TS_T(0), TS_T(1), v != TS_T(0)); }
        return v;
    }

    // Folds `b` into `a` (element contributions and partial results alike).
    __device__ TS_T combine(TS_T a, TS_T b) {
        switch (OP) {
            case 1u: { return a * b; }
            // A NaN wins and then stays: `b > NaN` is false.
            case 2u: { return select(a, b, b > a || is_nan(b)); }
            case 3u: { return select(a, b, b < a || is_nan(b)); }
            case 7u: { return w_min(a, b); }
            case 8u: { return w_max(a, b); }
            default: { return a + b; }
        }
    }

    // Whether (v, vi) beats (b, bi) for ArgMax / ArgMin: the first NaN wins; otherwise the larger
    // (smaller) value; ties go to the lower index, or the higher one with `last` (params[3]).
    __device__ bool arg_beats(TS_T v, u32 vi, TS_T b, u32 bi) {
        if (vi == NONE) { return false; }
        if (bi == NONE) { return true; }
        const auto v_nan = is_nan(v);
        const auto b_nan = is_nan(b);
        if (v_nan || b_nan) { return v_nan && (!b_nan || vi < bi); }
        if (v == b) { return select((vi < bi), (vi > bi), params[3] != 0u); }
        return select((v < b), (v > b), OP == 5u);
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto rows = params[0];
        const auto size = params[1];
        const auto lanes = params[2];
        const auto lane = lid % lanes;
        const auto per_group = GROUP_SIZE / lanes;
        const auto blocks = (rows + per_group - 1u) / per_group;
        for (auto block = wid.y * nwg.x + wid.x; block < blocks; block += nwg.x * nwg.y) {
            const auto g = block * per_group + lid / lanes;
            auto acc = bitcast<TS_T>(params[3]);
            auto index = NONE;
            if (g < rows) {
                const auto base = row_base(g);
                for (auto j = lane; j < size; j += lanes) {
                    const auto v = x[base + row_offset(j)];
                    if (IS_ARG) {
                        if (arg_beats(v, j, acc, index)) {
                            acc = v;
                            index = j;
                        }
                    } else {
                        acc = combine(acc, contribution(v));
                    }
                }
            }
            shared_value[lid] = acc;
            shared_index[lid] = index;
            __syncthreads();
            for (auto step = lanes / 2u; step > 0u; step = step / 2u) {
                if (lane < step) {
                    const auto other = shared_value[lid + step];
                    if (IS_ARG) {
                        const auto other_index = shared_index[lid + step];
                        if (arg_beats(other, other_index, shared_value[lid], shared_index[lid])) {
                            shared_value[lid] = other;
                            shared_index[lid] = other_index;
                        }
                    } else {
                        shared_value[lid] = combine(shared_value[lid], other);
                    }
                }
                __syncthreads();
            }
            if (lane == 0u && g < rows) {
                const auto value = shared_value[lid];
                if (IS_ARG) {
                    const auto found = shared_index[lid];
                    out[g] = TS_OUT(select(found, 0u, found == NONE));
                } else if (OP == 4u) {
                    out[g] = TS_OUT(f32(value) / f32(size));
                } else {
                    out[g] = TS_WRAP(TS_OUT(value));
                }
            }
            __syncthreads();
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* x, TS_OUT* out) {
    Kernel kernel{params, x, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
