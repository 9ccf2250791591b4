// One input's slab of a concatenation (one dispatch per input). Per outer index, the input
// holds `chunk` contiguous words, which go `offset` words into the output's `out_chunk`.
// Words of any dtype, moved as u32.
// params: [n (the input's length), chunk, out_chunk, offset]
struct Kernel {
    const u32* params;
    u32* x;
    u32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto chunk = params[1];
        y[(i / chunk) * params[2] + params[3] + i % chunk] = x[i];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* x, u32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
