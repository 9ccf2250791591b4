// Local response normalization across channels (axis 1) of an f32 `N, C, ...` tensor, one
// thread per element: y = x / (bias + alpha / size * sum of x^2 over channels
// c - (size - 1) / 2 ..= c + ceil((size - 1) / 2))^beta.
// params: [total, channels, inner (product of the axes after C), size, alpha, beta, bias
//          (f32 bits)]
struct Kernel {
    const u32* params;
    f32* x;
    f32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto channels = params[1];
        const auto inner = params[2];
        const auto size = params[3];
        const auto c = (i / inner) % channels;
        const auto start = i - c * inner;
        const auto lo = c - w_min(c, (size - 1u) / 2u);
        const auto hi = w_min(c + size / 2u, channels - 1u);
        auto squares = 0.0f;
        for (auto ch = lo; ch <= hi; ch++) {
            const auto v = x[start + ch * inner];
            squares += v * v;
        }
        const auto base = param_f32(6u) + param_f32(4u) / f32(size) * squares;
        // base^beta for base >= 0 (exp2f(-inf) = 0 for a zero base).
        y[i] = x[i] / exp2f(param_f32(5u) * log2f(base));
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
