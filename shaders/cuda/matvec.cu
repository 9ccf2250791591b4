// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with one thread per element of C: for products
// where m or n is tiny (matrix-vector), which a 32x32 tile would mostly waste.
// TS_T: element word (accumulated in it); TS_WRAP narrows integer results.
// params: as matmul.cu: [m, k, n, batch, rank, a_off, a_rs, a_cs, b_off, b_rs, b_cs,
//          c_off, c_rs, c_cs, batch_dims[rank], a_batch_strides[rank], b_batch_strides[rank],
//          c_batch_strides[rank]]
// Grid: one thread per element of C (batch * m * n).
struct Kernel {
    const u32* params;
    TS_T* a;
    TS_T* b;
    TS_T* c;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto m = params[0];
        const auto k = params[1];
        const auto n = params[2];
        const auto rank = params[4];
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[3] * m * n) { return; }
        const auto col = i % n;
        const auto row = (i / n) % m;
        auto rest = i / (n * m);
        auto ao = params[5] + row * params[6];
        auto bo = params[8] + col * params[10];
        auto co = params[11] + row * params[12] + col * params[13];
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto coord = rest % params[14u + d];
            rest = rest / params[14u + d];
            ao += coord * params[14u + rank + d];
            bo += coord * params[14u + 2u * rank + d];
            co += coord * params[14u + 3u * rank + d];
        }
        const auto a_cs = params[7];
        const auto b_rs = params[9];
        auto acc = TS_T(0);
        for (auto kk = 0u; kk < k; kk++) {
            acc += a[ao + kk * a_cs] * b[bo + kk * b_rs];
        }
        c[co] = TS_WRAP(acc);
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* a, TS_T* b, TS_T* c) {
    Kernel kernel{params, a, b, c};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
