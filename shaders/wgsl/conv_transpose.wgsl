// Transposed convolution in gather form: one thread per output element sums the input taps
// that reach it. Input position q reaches output q * stride + tap * dilation - pad_before, so
// output o reads q = (o + pad_before - tap * dilation) / stride where that divides exactly.
// x: `N, C, spatial...` (or `N, spatial..., C` when channels_last), the small input;
// w: `O, I/group, kd, kh, kw`; bias: one value per output channel, or one for all (or absent).
// Spatial axes are padded to three (d, h, w) with unit axes in front. `output` already
// includes output_padding (ONNX adjustments): positions no tap reaches get the bias alone.
// params: as conv.wgsl: [total, out_channels, in_per_group, out_per_group, kernel_size,
//          channels_last, output_spatial_size, x_batch_stride, x_channel_stride, bias_mode,
//          then per axis d, h, w: input, output, kernel, stride, dilation, pad_before, x_stride]

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
// Without a bias the runtime binds x here; bias_mode 0 never reads it.
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn axis_param(axis: u32, field: u32) -> u32 {
    return params[10u + axis * 7u + field];
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let channels = params[1];
    let in_per_group = params[2];
    let out_per_group = params[3];
    let kernel_size = params[4];
    let spatial = params[6];
    var o: u32;
    var s: u32;
    var nb: u32;
    if (params[5] != 0u) {
        o = i % channels;
        s = (i / channels) % spatial;
        nb = i / (channels * spatial);
    } else {
        s = i % spatial;
        o = (i / spatial) % channels;
        nb = i / (spatial * channels);
    }
    let in_d = axis_param(0u, 0u);
    let in_h = axis_param(1u, 0u);
    let in_w = axis_param(2u, 0u);
    let out_h = axis_param(1u, 1u);
    let out_w = axis_param(2u, 1u);
    let k_d = axis_param(0u, 2u);
    let k_h = axis_param(1u, 2u);
    let k_w = axis_param(2u, 2u);
    let stride_d = axis_param(0u, 3u);
    let stride_h = axis_param(1u, 3u);
    let stride_w = axis_param(2u, 3u);
    let dil_d = axis_param(0u, 4u);
    let dil_h = axis_param(1u, 4u);
    let dil_w = axis_param(2u, 4u);
    let xs_d = axis_param(0u, 6u);
    let xs_h = axis_param(1u, 6u);
    let xs_w = axis_param(2u, 6u);
    let ow = s % out_w;
    let oh = (s / out_w) % out_h;
    let od = s / (out_w * out_h);
    // Output coordinates shifted by the padding: q * stride + tap * dilation.
    let zd = od + axis_param(0u, 5u);
    let zh = oh + axis_param(1u, 5u);
    let zw = ow + axis_param(2u, 5u);
    let x_cs = params[8];
    let group = o / out_per_group;
    let x_base = nb * params[7] + group * in_per_group * x_cs;
    let w_base = o * in_per_group * kernel_size;
    var acc = 0.0;
    for (var kd = 0u; kd < k_d; kd++) {
        if (zd < kd * dil_d) { break; }
        let qd = zd - kd * dil_d;
        if (qd % stride_d != 0u || qd / stride_d >= in_d) { continue; }
        let x_d = x_base + (qd / stride_d) * xs_d;
        for (var kh = 0u; kh < k_h; kh++) {
            if (zh < kh * dil_h) { break; }
            let qh = zh - kh * dil_h;
            if (qh % stride_h != 0u || qh / stride_h >= in_h) { continue; }
            let x_h = x_d + (qh / stride_h) * xs_h;
            let w_h = w_base + (kd * k_h + kh) * k_w;
            for (var kw = 0u; kw < k_w; kw++) {
                if (zw < kw * dil_w) { break; }
                let qw = zw - kw * dil_w;
                if (qw % stride_w != 0u || qw / stride_w >= in_w) { continue; }
                var xi = x_h + (qw / stride_w) * xs_w;
                var wi = w_h + kw;
                for (var c = 0u; c < in_per_group; c++) {
                    acc += x[xi] * w[wi];
                    xi += x_cs;
                    wi += kernel_size;
                }
            }
        }
    }
    let bias_mode = params[9];
    if (bias_mode == 1u) {
        acc += bias[0];
    } else if (bias_mode == 2u) {
        acc += bias[o];
    }
    y[i] = acc;
}
