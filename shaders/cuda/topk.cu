// TopK, one thread per input element: its rank in its row along the axis (how many elements
// come before it: larger, or smaller when !largest, or equal at a lower index), and when the
// rank is below k it writes itself at that rank: values[rank] and indices[rank] (its index
// along the axis; i64 indices are i32 words). TS_T: the element word.
// params: [n, len (the axis), inner (elements after the axis), k, largest (1 or 0)]
struct Kernel {
    const u32* params;
    TS_T* x;
    TS_T* values;
    i32* indices;

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto len = params[1];
        const auto inner = params[2];
        const auto k = params[3];
        const auto largest = params[4] != 0u;
        const auto own = (i / inner) % len;
        const auto base = (i / (inner * len)) * len * inner + i % inner;
        const auto v = x[i];
        auto rank = 0u;
        for (auto j = 0u; j < len; j = j + 1u) {
            const auto w = x[base + j * inner];
            const auto before = (largest ? w > v : w < v) || (w == v && j < own);
            if (before) { rank = rank + 1u; }
        }
        if (rank < k) {
            const auto at = (i / (inner * len)) * k * inner + rank * inner + i % inner;
            values[at] = v;
            indices[at] = (i32)own;
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* x, TS_T* values, i32* indices) {
    Kernel kernel{params, x, values, indices};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
