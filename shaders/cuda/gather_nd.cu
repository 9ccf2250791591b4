// GatherND: each row of the indices (every axis but the last) holds k coordinates into data
// axes batch_dims..batch_dims + k; out[row, t] = the data element there, t running over the
// `slice` elements of the data axes after them, in the row's batch. Indices are 32-bit words
// (i64 indices are i32 on the device); when signed, negative ones count from the end. A row
// with a coordinate still outside its axis writes 0. Words of any dtype, moved as u32.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, k, slice, rows_per_batch, batch_stride (data words per batch),
//          signed (1: i32 index words, 0: u32), dims[k], strides[k] (of those data axes)]
struct Kernel {
    const u32* params;
    u32* data;
    u32* indices;
    u32* out;

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto k = params[1];
        const auto slice = params[2];
        const auto row = i / slice;
        auto at = (row / params[3]) * params[4] + i % slice;
        for (auto j = 0u; j < k; j = j + 1u) {
            const auto dim = params[6u + j];
            const auto ix = resolve_index(indices[row * k + j], params[5] != 0u, dim);
            if (ix >= dim) {
                out[i] = 0u;
                return;
            }
            at = at + ix * params[6u + k + j];
        }
        out[i] = data[at];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* data, u32* indices, u32* out) {
    Kernel kernel{params, data, indices, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
