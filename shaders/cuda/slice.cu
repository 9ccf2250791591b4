// Strided slice along one axis: the input is viewed as [outer, dim, inner] and the output as
// [outer, len, inner], with out[o, j, k] = in[o, start + j * step, k]. Words of any dtype,
// moved as u32.
// params: [n, inner, len, dim, start, step]
struct Kernel {
    const u32* params;
    u32* x;
    u32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto inner = params[1];
        const auto len = params[2];
        const auto k = i % inner;
        const auto t = i / inner;
        const auto j = t % len;
        const auto o = t / len;
        y[i] = x[(o * params[3] + params[4] + j * params[5]) * inner + k];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* x, u32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
