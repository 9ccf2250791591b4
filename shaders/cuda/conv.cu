// Grouped, strided, dilated, padded convolution (the channels-last path, and what im2col + GEMM
// cannot take; see crates/tessera-gpu/src/kernels/conv.rs). Each thread computes a block of
// outputs: TS_OCB output channels (8, 4, 2 or 1: the largest dividing a group's) times 4 consecutive
// positions along the last spatial axis, like shaders/wgsl/conv.wgsl.
// x: `N, C, spatial...` (or `N, spatial..., C` when channels_last); w: `O, I/group, kd, kh, kw`;
// bias: one value per output channel, or one for all (or absent).
// Spatial axes are padded to three (d, h, w) with unit axes in front.
// params: [threads, out_channels, in_per_group, out_per_group, kernel_size (kd * kh * kw),
//          channels_last, output_spatial_size, x_batch_stride, x_channel_stride,
//          bias_mode (0: none, 1: one value, 2: per channel),
//          then per axis d, h, w: input, output, kernel, stride, dilation, pad_before,
//          x_stride (element stride of the axis in x), pad_after]
// Threads: batch * groups * ceil(out_per_group / OCB) * out_d * out_h * ceil(out_w / 4), the
// block along w varying fastest.
// TS_T: element word, accumulated in it (f32, or i32 for integer convolutions, which wrap).
#define OCB TS_OCB

struct Kernel {
    const u32* params;
    TS_T* x;
    TS_T* w;
    TS_T* bias;
    TS_T* y;

    __device__ u32 axis_param(u32 axis, u32 field) {
        return params[10u + axis * 8u + field];
    }

    __device__ TS_T bias_of(u32 o) {
        switch (params[9]) {
            case 1u: return bias[0];
            case 2u: return bias[o];
            default: return TS_T(0);
        }
    }

    // Writes output channel `o` at positions ow0.. of row (nb, od, oh).
    __device__ void store(u32 nb, u32 o, u32 row, u32 ow0, u32 out_w, const TS_T* acc) {
        const auto channels = params[1];
        const auto spatial = params[6];
        const auto b = bias_of(o);
        for (auto j = 0u; j < 4u; j++) {
            const auto ow = ow0 + j;
            if (ow >= out_w) { return; }
            const auto s = row * out_w + ow;
            const auto at = params[5] != 0u ? (nb * spatial + s) * channels + o
                                            : (nb * channels + o) * spatial + s;
            y[at] = acc[j] + b;
        }
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto in_per_group = params[2];
        const auto out_per_group = params[3];
        const auto kernel_size = params[4];
        const auto in_d = axis_param(0u, 0u);
        const auto in_h = axis_param(1u, 0u);
        const auto in_w = axis_param(2u, 0u);
        const auto out_d = axis_param(0u, 1u);
        const auto out_h = axis_param(1u, 1u);
        const auto out_w = axis_param(2u, 1u);
        const auto k_d = axis_param(0u, 2u);
        const auto k_h = axis_param(1u, 2u);
        const auto k_w = axis_param(2u, 2u);
        const auto stride_d = axis_param(0u, 3u);
        const auto stride_h = axis_param(1u, 3u);
        const auto stride_w = axis_param(2u, 3u);
        const auto dil_d = axis_param(0u, 4u);
        const auto dil_h = axis_param(1u, 4u);
        const auto dil_w = axis_param(2u, 4u);
        const auto pad_d = axis_param(0u, 5u);
        const auto pad_h = axis_param(1u, 5u);
        const auto pad_w = axis_param(2u, 5u);
        const auto xs_d = axis_param(0u, 6u);
        const auto xs_h = axis_param(1u, 6u);
        const auto xs_w = axis_param(2u, 6u);

        const auto w_blocks = (out_w + 3u) / 4u;
        const auto c_blocks = params[1] / OCB;
        auto rest = i;
        const auto ow0 = (rest % w_blocks) * 4u;
        rest = rest / w_blocks;
        const auto oh = rest % out_h;
        rest = rest / out_h;
        const auto od = rest % out_d;
        rest = rest / out_d;
        const auto o0 = (rest % c_blocks) * OCB;
        const auto nb = rest / c_blocks;

        const auto x_cs = params[8];
        const auto group = o0 / out_per_group;
        const auto x_base = nb * params[7] + group * in_per_group * x_cs;
        // Weights of channel o0 + t start t * w_stride after those of o0.
        const auto w_stride = in_per_group * kernel_size;
        const auto w_base = o0 * w_stride;
        TS_T acc[OCB][4] = {};
        for (auto kd = 0u; kd < k_d; kd++) {
            // Unsigned: a tap in the padding before the axis is below pad_d.
            const auto zd = od * stride_d + kd * dil_d;
            if (zd < pad_d || zd - pad_d >= in_d) { continue; }
            const auto x_d = x_base + (zd - pad_d) * xs_d;
            for (auto kh = 0u; kh < k_h; kh++) {
                const auto zh = oh * stride_h + kh * dil_h;
                if (zh < pad_h || zh - pad_h >= in_h) { continue; }
                const auto x_h = x_d + (zh - pad_h) * xs_h;
                const auto w_h = w_base + (kd * k_h + kh) * k_w;
                for (auto kw = 0u; kw < k_w; kw++) {
                    bool inside[4];
                    u32 xi[4];
                    bool any = false;
                    for (auto j = 0u; j < 4u; j++) {
                        const auto zw = (ow0 + j) * stride_w + kw * dil_w;
                        inside[j] = zw >= pad_w && zw - pad_w < in_w;
                        // Positions in the padding read x[x_h] (in range) and are zeroed.
                        xi[j] = inside[j] ? x_h + (zw - pad_w) * xs_w : x_h;
                        any = any || inside[j];
                    }
                    if (!any) { continue; }
                    auto wi = w_h + kw;
                    for (auto c = 0u; c < in_per_group; c++) {
                        TS_T xv[4];
                        for (auto j = 0u; j < 4u; j++) {
                            xv[j] = inside[j] ? x[xi[j]] : TS_T(0);
                            xi[j] += x_cs;
                        }
                        for (auto t = 0u; t < OCB; t++) {
                            const auto wv = w[wi + t * w_stride];
                            for (auto j = 0u; j < 4u; j++) {
                                acc[t][j] += wv * xv[j];
                            }
                        }
                        wi += kernel_size;
                    }
                }
            }
        }
        const auto row = od * out_h + oh;
        for (auto t = 0u; t < OCB; t++) {
            store(nb, o0 + t, row, ow0, out_w, acc[t]);
        }
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* x, TS_T* w, TS_T* bias, TS_T* y) {
    Kernel kernel{params, x, w, bias, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
