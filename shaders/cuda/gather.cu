// out[o, j, k] = data[o, indices[j], k]: data viewed as [outer, dim, inner], the output as
// [outer, count, inner] (count = number of indices). Indices are 32-bit words (i64 indices are
// i32 on the device); when signed, negative ones count from the end. An index still outside
// 0..dim reads nothing and writes 0. Words of any dtype, moved as
// u32.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, inner, count, dim, signed (1: indices are i32 words, 0: u32 words)]
struct Kernel {
    const u32* params;
    u32* data;
    u32* indices;
    u32* out;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto inner = params[1];
        const auto count = params[2];
        const auto dim = params[3];
        const auto k = i % inner;
        const auto t = i / inner;
        const auto j = t % count;
        const auto o = t / count;
        auto ix = indices[j];
        // A negative i32 counts from the end: adding dim in wrapping u32 arithmetic gives
        // dim - |ix| when |ix| <= dim, and at least 2^31 > dim otherwise (out of range below).
        if (params[4] != 0u && bitcast<i32>(ix) < 0) {
            ix = ix + dim;
        }
        if (ix >= dim) {
            out[i] = 0u;
            return;
        }
        out[i] = data[(o * dim + ix) * inner + k];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* data, u32* indices, u32* out) {
    Kernel kernel{params, data, indices, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
