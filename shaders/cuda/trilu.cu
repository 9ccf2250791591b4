// Trilu: keeps the upper (c - r >= k) or lower (c - r <= k) triangle of each matrix in the last
// two axes, zeroing the rest. Words of any dtype, moved as u32 (0u is zero for every type).
// `k` is one i32 word (an i64 on the host).
// params: [n, rows, cols, upper (1) or lower (0)]
struct Kernel {
    const u32* params;
    u32* x;
    i32* k;
    u32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto cols = params[2];
        const auto c = i % cols;
        const auto r = (i / cols) % params[1];
        const auto diagonal = i32(c) - i32(r);
        bool keep{};
        if (params[3] != 0u) {
            keep = diagonal >= k[0];
        } else {
            keep = diagonal <= k[0];
        }
        y[i] = select(0u, x[i], keep);
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* x, i32* k, u32* y) {
    Kernel kernel{params, x, k, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
