// Nearest upsampling by an integer factor per axis, out[c] = in[c / factor], or (TS_TILED =
// true) tiling, the input repeated along each axis, out[c] = in[c mod factor] with the input's
// shape as factors. Words of any dtype, moved as u32.
// params: [n, rank, out_shape[rank], factors[rank], in_strides[rank]] (row-major strides)
struct Kernel {
    const u32* params;
    u32* x;
    u32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto rank = params[1];
        auto rest = i;
        auto src = 0u;
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[2u + d];
            const auto coord = rest % dim;
            rest = rest / dim;
            const auto factor = params[2u + rank + d];
            const auto at = TS_TILED ? coord % factor : coord / factor;
            src += at * params[2u + 2u * rank + d];
        }
        y[i] = x[src];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* x, u32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
