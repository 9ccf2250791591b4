// ScatterElements, one thread per output element, deterministic: out = data, then every update
// whose coordinate off `axis` is this element's and whose index along `axis` lands on it is
// combined in, in row-major order of the updates (for a fixed element they differ only along
// `axis`, so that is ascending j). TS_T: the data word; TS_COMBINE: the reduction of the
// current value `a` and the update `b`; TS_WRAP narrows integer results. Indices are 32-bit
// words (signed: negative ones count from the end); one still out of range hits nothing.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, rank, axis, signed (1: i32 index words, 0: u32), dim (data's axis),
//          count (indices' axis), data_shape[rank], indices_shape[rank], indices_strides[rank]]
struct Kernel {
    const u32* params;
    TS_T* data;
    u32* indices;
    TS_T* updates;
    TS_T* out;


    __device__ TS_T combine(TS_T a, TS_T b) {
        return TS_COMBINE;
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto rank = params[1];
        const auto axis = params[2];
        const auto signed_ix = params[3] != 0u;
        const auto dim = params[4];
        const auto count = params[5];
        auto cur = data[i];
        // This element's coordinate along `axis`, and the offset in the indices of its row along
        // `axis` (when the indices reach it off `axis`).
        auto rest = i;
        auto base = 0u;
        auto inside = true;
        auto own = 0u;
        for (auto a = rank; a > 0u; a = a - 1u) {
            const auto extent = params[6u + a - 1u];
            const auto c = rest % extent;
            rest = rest / extent;
            if (a - 1u == axis) {
                own = c;
            } else {
                if (c >= params[6u + rank + a - 1u]) {
                    inside = false;
                }
                base = base + c * params[6u + 2u * rank + a - 1u];
            }
        }
        if (inside) {
            const auto step = params[6u + 2u * rank + axis];
            for (auto j = 0u; j < count; j = j + 1u) {
                const auto t = base + j * step;
                if (resolve_index(indices[t], signed_ix, dim) == own) {
                    cur = combine(cur, updates[t]);
                }
            }
        }
        out[i] = TS_WRAP(cur);
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* data, u32* indices, TS_T* updates, TS_T* out) {
    Kernel kernel{params, data, indices, updates, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
