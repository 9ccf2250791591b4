// out = cond ? a : b (ONNX Where) with numpy broadcasting. Only bits move, so a, b and out
// are u32 words whatever their dtype; cond is a bool word (0 or 1).
// params: [n, rank, out_shape[rank], cond_strides[rank], a_strides[rank], b_strides[rank]]
// (stride 0 broadcasts)
struct Kernel {
    const u32* params;
    u32* cond;
    u32* a;
    u32* b;
    u32* out;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto rank = params[1];
        auto rest = i;
        auto ci = 0u;
        auto ai = 0u;
        auto bi = 0u;
        for (auto axis = rank; axis > 1u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[2u + d];
            const auto coord = rest % dim;
            rest = rest / dim;
            ci += coord * params[2u + rank + d];
            ai += coord * params[2u + 2u * rank + d];
            bi += coord * params[2u + 3u * rank + d];
        }
        // The outermost axis: what is left is its coordinate.
        if (rank > 0u) {
            ci += rest * params[2u + rank];
            ai += rest * params[2u + 2u * rank];
            bi += rest * params[2u + 3u * rank];
        }
        if (cond[ci] != 0u) {
            out[i] = a[ai];
        } else {
            out[i] = b[bi];
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* cond, u32* a, u32* b, u32* out) {
    Kernel kernel{params, cond, a, b, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
