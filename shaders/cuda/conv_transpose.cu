// Transposed convolution in gather form: one thread per output element sums the input taps
// that reach it. Input position q reaches output q * stride + tap * dilation - pad_before, so
// output o reads q = (o + pad_before - tap * dilation) / stride where that divides exactly.
// x: `N, C, spatial...` (or `N, spatial..., C` when channels_last), the small input;
// w: `O, I/group, kd, kh, kw`; bias: one value per output channel, or one for all (or absent).
// Spatial axes are padded to three (d, h, w) with unit axes in front. `output` already
// includes output_padding (ONNX adjustments): positions no tap reaches get the bias alone.
// params: as conv.cu: [total, out_channels, in_per_group, out_per_group, kernel_size,
//          channels_last, output_spatial_size, x_batch_stride, x_channel_stride, bias_mode,
//          then per axis d, h, w: input, output, kernel, stride, dilation, pad_before, x_stride,
//          pad_after]
struct Kernel {
    const u32* params;
    f32* x;
    f32* w;
    f32* bias;
    f32* y;

    // Without a bias the runtime binds x here; bias_mode 0 never reads it.

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
        // Output coordinates shifted by the padding: q * stride + tap * dilation.
        const auto zd = od + axis_param(0u, 5u);
        const auto zh = oh + axis_param(1u, 5u);
        const auto zw = ow + axis_param(2u, 5u);
        const auto x_cs = params[8];
        const auto group = o / out_per_group;
        const auto x_base = nb * params[7] + group * in_per_group * x_cs;
        const auto w_base = o * in_per_group * kernel_size;
        auto acc = 0.0f;
        for (auto kd = 0u; kd < k_d; kd++) {
            if (zd < kd * dil_d) { break; }
            const auto qd = zd - kd * dil_d;
            if (qd % stride_d != 0u || qd / stride_d >= in_d) { continue; }
            const auto x_d = x_base + (qd / stride_d) * xs_d;
            for (auto kh = 0u; kh < k_h; kh++) {
                if (zh < kh * dil_h) { break; }
                const auto qh = zh - kh * dil_h;
                if (qh % stride_h != 0u || qh / stride_h >= in_h) { continue; }
                const auto x_h = x_d + (qh / stride_h) * xs_h;
                const auto w_h = w_base + (kd * k_h + kh) * k_w;
                for (auto kw = 0u; kw < k_w; kw++) {
                    if (zw < kw * dil_w) { break; }
                    const auto qw = zw - kw * dil_w;
                    if (qw % stride_w != 0u || qw / stride_w >= in_w) { continue; }
                    auto xi = x_h + (qw / stride_w) * xs_w;
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
