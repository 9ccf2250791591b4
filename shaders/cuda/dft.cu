// The discrete Fourier transform along one axis of complex values stored as [re, im] pairs on
// the last axis: y[k] = sum over n of x[n] * e^(-+2 pi i k n / len) (+ when inverse, not
// normalized). One thread per output pair. The twiddles e^(-+2 pi i r / len) come with the
// parameters, computed in f64 on the host (a GPU's sin and cos can be far less exact). f32.
// params: [pairs (outer * len * inner / 2), len, inner (elements after the axis, the pair
//          included), then cos bits[len], sin bits[len] (r = k n mod len)]
struct Kernel {
    const u32* params;
    f32* x;
    f32* y;


    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const u32 len = params[1];
        const u32 inner = params[2];
        const u32 pairs = inner / 2u;
        const u32 pair = i % pairs;
        const u32 k = (i / pairs) % len;
        const u32 outer = i / (pairs * len);
        f32 re = 0.0f;
        f32 im = 0.0f;
        for (u32 n = 0u; n < len; n++) {
            const u32 r = (k * n) % len;
            const f32 c = param_f32(3u + r);
            const f32 s = param_f32(3u + len + r);
            const u32 at = (outer * len + n) * inner + 2u * pair;
            const f32 xr = x[at];
            const f32 xi = x[at + 1u];
            re += xr * c - xi * s;
            im += xr * s + xi * c;
        }
        const u32 out = (outer * len + k) * inner + 2u * pair;
        y[out] = re;
        y[out + 1u] = im;
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
