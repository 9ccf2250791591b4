// Direct convolution, one thread per output element (the channels-last path and the fallback;
// channels-first convolutions run as im2col + cuBLAS GEMM, see crates/tessera-cuda/src/kernels/conv.rs).
// Output o reads input q = o * stride + tap * dilation - pad_before where that is inside.
// x: `N, C, spatial...` (or `N, spatial..., C` when channels_last); w: `O, I/group, kd, kh, kw`;
// bias: one value per output channel, or one for all (or absent). Spatial axes are padded to
// three (d, h, w) with unit axes in front.
// params: [total, out_channels, in_per_group, out_per_group, kernel_size, channels_last,
//          output_spatial_size, x_batch_stride, x_channel_stride, bias_mode,
//          then per axis d, h, w: input, output, kernel, stride, dilation, pad_before, x_stride,
//          pad_after]
struct Kernel {
    const u32* params;
    f32* x;
    f32* w;
    f32* bias;
    f32* y;


    __device__ u32 axis_param(u32 axis, u32 field) {
        return params[10u + axis * 8u + field];
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto channels = params[1];
        const auto in_per_group = params[2];
        const auto out_per_group = params[3];
        const auto kernel_size = params[4];
        const auto spatial = params[6];
        u32 o{};
        u32 s{};
        u32 nb{};
        if (params[5] != 0u) {
            o = i % channels;
            s = (i / channels) % spatial;
            nb = i / (channels * spatial);
        } else {
            s = i % spatial;
            o = (i / spatial) % channels;
            nb = i / (spatial * channels);
        }
        const auto in_d = axis_param(0u, 0u);
        const auto in_h = axis_param(1u, 0u);
        const auto in_w = axis_param(2u, 0u);
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
        const auto xs_d = axis_param(0u, 6u);
        const auto xs_h = axis_param(1u, 6u);
        const auto xs_w = axis_param(2u, 6u);
        const auto ow = s % out_w;
        const auto oh = (s / out_w) % out_h;
        const auto od = s / (out_w * out_h);
        // Padded input coordinates of the window's first tap.
        const auto zd = od * stride_d;
        const auto zh = oh * stride_h;
        const auto zw = ow * stride_w;
        const auto pad_d = axis_param(0u, 5u);
        const auto pad_h = axis_param(1u, 5u);
        const auto pad_w = axis_param(2u, 5u);
        const auto x_cs = params[8];
        const auto group = o / out_per_group;
        const auto x_base = nb * params[7] + group * in_per_group * x_cs;
        const auto w_base = o * in_per_group * kernel_size;
        auto acc = 0.0f;
        for (auto kd = 0u; kd < k_d; kd++) {
            const auto pd = zd + kd * dil_d;
            if (pd < pad_d || pd - pad_d >= in_d) { continue; }
            const auto x_d = x_base + (pd - pad_d) * xs_d;
            for (auto kh = 0u; kh < k_h; kh++) {
                const auto ph = zh + kh * dil_h;
                if (ph < pad_h || ph - pad_h >= in_h) { continue; }
                const auto x_h = x_d + (ph - pad_h) * xs_h;
                const auto w_h = w_base + (kd * k_h + kh) * k_w;
                for (auto kw = 0u; kw < k_w; kw++) {
                    const auto pw = zw + kw * dil_w;
                    if (pw < pad_w || pw - pad_w >= in_w) { continue; }
                    auto xi = x_h + (pw - pad_w) * xs_w;
                    auto wi = w_h + kw;
                    for (auto c = 0u; c < in_per_group; c++) {
                        acc += x[xi] * w[wi];
                        xi += x_cs;
                        wi += kernel_size;
                    }
                }
            }
        }
        const auto bias_mode = params[9];
        if (bias_mode == 1u) {
            acc += bias[0];
        } else if (bias_mode == 2u) {
            acc += bias[o];
        }
        y[i] = acc;
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* w, f32* bias, f32* y) {
    Kernel kernel{params, x, w, bias, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
