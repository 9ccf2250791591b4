// GatherElements: out[c] = data[c with c[axis] = indices[c]] for every coordinate c of the
// indices (the output has their shape). Indices are 32-bit words (i64 indices are i32 on the
// device); when signed, negative ones count from the end. An index still outside 0..dim
// reads nothing and writes 0. Words of any dtype, moved as u32.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, rank, axis, signed (1: i32 index words, 0: u32), dim (data's axis),
//          indices_shape[rank], data_strides[rank]]
struct Kernel {
    const u32* params;
    u32* data;
    u32* indices;
    u32* out;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto rank = params[1];
        const auto axis = params[2];
        const auto dim = params[4];
        // The data offset of this coordinate, without its `axis` component.
        auto rest = i;
        auto at = 0u;
        for (auto a = rank; a > 0u; a = a - 1u) {
            const auto extent = params[5u + a - 1u];
            const auto c = rest % extent;
            rest = rest / extent;
            if (a - 1u != axis) {
                at = at + c * params[5u + rank + a - 1u];
            }
        }
        const auto ix = resolve_index(indices[i], params[3] != 0u, dim);
        if (ix >= dim) {
            out[i] = 0u;
            return;
        }
        out[i] = data[at + ix * params[5u + rank + axis]];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* data, u32* indices, u32* out) {
    Kernel kernel{params, data, indices, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
