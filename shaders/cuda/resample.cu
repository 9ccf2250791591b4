// Resampling along one axis (ONNX Resize, one launch per resized axis): output position p
// of the axis is bias[p] + sum over taps k of weight[p, k] * x[.., index[p, k], ..], taps of
// weight 0 skipped (as on cpu: a 0 weight must not turn an infinite input into NaN). f32.
// params: [n, len_in, len_out, inner, window, then index[len_out * window],
//          weight bits[len_out * window], bias bits[len_out]]
struct Kernel {
    const u32* params;
    f32* x;
    f32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto len_in = params[1];
        const auto len_out = params[2];
        const auto inner = params[3];
        const auto window = params[4];
        const auto within = i % inner;
        const auto p = (i / inner) % len_out;
        const auto outer = i / (inner * len_out);
        const auto taps = 5u + p * window;
        const auto weights = 5u + len_out * window + p * window;
        auto acc = param_f32(5u + 2u * len_out * window + p);
        for (auto k = 0u; k < window; k++) {
            const auto w = param_f32(weights + k);
            if (w != 0.0f) {
                acc += w * x[(outer * len_in + params[taps + k]) * inner + within];
            }
        }
        y[i] = acc;
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
