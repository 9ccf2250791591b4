// ScatterND, one thread per output element, deterministic: out = data, then every row of the
// indices whose k coordinates address this element's slice of the first k data axes combines
// its update for this element in, rows in order. TS_T: the data word; TS_COMBINE: the
// reduction of the current value `a` and the update `b`; TS_WRAP narrows integer results.
// Indices are 32-bit words (signed: negative ones count from the end); a row with a
// coordinate still out of range hits nothing.
// Host and constant indices are checked before upload (out of range: an error), so only an
// index computed on the device can be out of range here (docs/robustness.md).
// params: [n, k, slice (data elements after the first k axes), rows,
//          signed (1: i32 index words, 0: u32), dims[k] (the first k data axes)]
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
        const auto k = params[1];
        const auto slice = params[2];
        const auto signed_ix = params[4] != 0u;
        const auto own = i / slice;
        const auto t = i % slice;
        auto cur = data[i];
        for (auto r = 0u; r < params[3]; r = r + 1u) {
            auto at = 0u;
            auto inside = true;
            for (auto j = 0u; j < k; j = j + 1u) {
                const auto dim = params[5u + j];
                const auto ix = resolve_index(indices[r * k + j], signed_ix, dim);
                if (ix >= dim) { inside = false; }
                at = at * dim + ix;
            }
            if (inside && at == own) {
                cur = combine(cur, updates[r * slice + t]);
            }
        }
        out[i] = TS_WRAP(cur);
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* data, u32* indices, TS_T* updates, TS_T* out) {
    Kernel kernel{params, data, indices, updates, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
