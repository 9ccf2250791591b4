// Max pooling (TS_MAX = true; padded taps are ignored, a window of padding only gives the
// lowest value) or sum / average pooling (TS_MAX = false, f32 only); one thread per output
// element. TS_T: element word (max pooling also runs on integers).
// x: `N, C, spatial...` (or `N, spatial..., C` when channels_last). Spatial axes are padded to
// three (d, h, w) with unit axes in front.
// Averages with count_include_pad divide by the taps inside the padded input: the whole
// window, except where ONNX's ceil mode lets the last window run past pad_after.
// params: [total, channels, lowest (bits of the type's lowest value), 0,
//          kernel_size (kd * kh * kw), channels_last, output_spatial_size, x_batch_stride,
//          x_channel_stride, flags (bit 0: normalize, bit 1: count_include_pad),
//          then per axis d, h, w: input, output, kernel, stride, dilation, pad_before,
//          x_stride (element stride of the axis in x), pad_after]
struct Kernel {
    const u32* params;
    TS_T* x;
    TS_T* y;


    static constexpr bool IS_MAX = TS_MAX;

    __device__ u32 axis_param(u32 axis, u32 field) {
        return params[10u + axis * 8u + field];
    }

    // Taps of a window starting at `start` (padded coordinates) inside the padded extent.
    __device__ u32 taps_inside(u32 axis, u32 start) {
        const auto padded = axis_param(axis, 0u) + axis_param(axis, 5u) + axis_param(axis, 7u);
        if (start >= padded) { return 0u; }
        const auto dilation = axis_param(axis, 4u);
        return w_min(axis_param(axis, 2u), (padded - start + dilation - 1u) / dilation);
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto channels = params[1];
        const auto spatial = params[6];
        u32 ch{};
        u32 s{};
        u32 nb{};
        if (params[5] != 0u) {
            ch = i % channels;
            s = (i / channels) % spatial;
            nb = i / (channels * spatial);
        } else {
            s = i % spatial;
            ch = (i / spatial) % channels;
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
        const auto pad_d = axis_param(0u, 5u);
        const auto pad_h = axis_param(1u, 5u);
        const auto pad_w = axis_param(2u, 5u);
        const auto xs_d = axis_param(0u, 6u);
        const auto xs_h = axis_param(1u, 6u);
        const auto xs_w = axis_param(2u, 6u);
        const auto ow = s % out_w;
        const auto oh = (s / out_w) % out_h;
        const auto od = s / (out_w * out_h);
        const auto x_base = nb * params[7] + ch * params[8];
        auto best = bitcast<TS_T>(params[2]);
        auto found = false;
        auto sum = TS_T(0);
        auto real = 0u;
        for (auto kd = 0u; kd < k_d; kd++) {
            const auto zd = od * stride_d + kd * dil_d;
            if (zd < pad_d || zd - pad_d >= in_d) { continue; }
            const auto x_d = x_base + (zd - pad_d) * xs_d;
            for (auto kh = 0u; kh < k_h; kh++) {
                const auto zh = oh * stride_h + kh * dil_h;
                if (zh < pad_h || zh - pad_h >= in_h) { continue; }
                const auto x_h = x_d + (zh - pad_h) * xs_h;
                for (auto kw = 0u; kw < k_w; kw++) {
                    const auto zw = ow * stride_w + kw * dil_w;
                    if (zw < pad_w || zw - pad_w >= in_w) { continue; }
                    const auto v = x[x_h + (zw - pad_w) * xs_w];
                    if (IS_MAX) {
                        // The first real tap starts the max (a NaN there stays, as in the reference).
                        if (!found || v > best) { best = v; }
                        found = true;
                    } else {
                        sum += v;
                        real += 1u;
                    }
                }
            }
        }
        if (IS_MAX) {
            y[i] = best;
            return;
        }
        const auto flags = params[9];
        if ((flags & 1u) == 0u) {
            y[i] = sum;
            return;
        }
        auto count = w_max(real, 1u);
        if ((flags & 2u) != 0u) {
            count = w_max(taps_inside(0u, od * stride_d) * taps_inside(1u, oh * stride_h)
                * taps_inside(2u, ow * stride_w), 1u);
        }
        y[i] = TS_T(f32(sum) / f32(count));
    }
};

extern "C" __global__ void tessera_main(const u32* params, TS_T* x, TS_T* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
