// OneHot: the output viewed as [outer, depth, inner] and the indices as [outer, inner];
// out[o, d, k] = indices[o, k] == d ? on : off. Index words: kind 0 u32, 1 i32 (i64 on the
// host), 2 f32 (truncated toward zero); a negative index counts from the end, one outside
// -depth..depth matches no d. `on` and `off` are words of the output dtype.
// params: [n, depth, inner, kind, off, on]
struct Kernel {
    const u32* params;
    u32* indices;
    u32* out;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto depth = params[1];
        const auto inner = params[2];
        const auto k = i % inner;
        const auto t = i / inner;
        const auto d = t % depth;
        const auto o = t / depth;
        auto w = indices[o * inner + k];
        const auto kind = params[3];
        if (kind == 2u) {
            w = bitcast<u32>(i32(bitcast<f32>(w)));
        }
        const auto ix = resolve_index(w, kind != 0u, depth);
        out[i] = select(params[4], params[5], ix == d);
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* indices, u32* out) {
    Kernel kernel{params, indices, out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
