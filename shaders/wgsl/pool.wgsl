// Max pooling ({{MAX}} = true; padded taps are ignored, a window of padding only gives -inf) or
// sum / average pooling ({{MAX}} = false); one thread per output element.
// x: `N, C, spatial...` (or `N, spatial..., C` when channels_last). Spatial axes are padded to
// three (d, h, w) with unit axes in front.
// params: [total, channels, 0, 0, kernel_size (kd * kh * kw), channels_last,
//          output_spatial_size, x_batch_stride, x_channel_stride,
//          flags (bit 0: normalize, bit 1: count_include_pad),
//          then per axis d, h, w: input, output, kernel, stride, dilation, pad_before,
//          x_stride (element stride of the axis in x)]

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

const IS_MAX: bool = {{MAX}};

fn axis_param(axis: u32, field: u32) -> u32 {
    return params[10u + axis * 7u + field];
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let channels = params[1];
    let spatial = params[6];
    var ch: u32;
    var s: u32;
    var nb: u32;
    if (params[5] != 0u) {
        ch = i % channels;
        s = (i / channels) % spatial;
        nb = i / (channels * spatial);
    } else {
        s = i % spatial;
        ch = (i / spatial) % channels;
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
    let pad_d = axis_param(0u, 5u);
    let pad_h = axis_param(1u, 5u);
    let pad_w = axis_param(2u, 5u);
    let xs_d = axis_param(0u, 6u);
    let xs_h = axis_param(1u, 6u);
    let xs_w = axis_param(2u, 6u);
    let ow = s % out_w;
    let oh = (s / out_w) % out_h;
    let od = s / (out_w * out_h);
    let x_base = nb * params[7] + ch * params[8];
    var best = bitcast<f32>(0xff800000u);
    var found = false;
    var sum = 0.0;
    var real = 0u;
    for (var kd = 0u; kd < k_d; kd++) {
        let zd = od * stride_d + kd * dil_d;
        if (zd < pad_d || zd - pad_d >= in_d) { continue; }
        let x_d = x_base + (zd - pad_d) * xs_d;
        for (var kh = 0u; kh < k_h; kh++) {
            let zh = oh * stride_h + kh * dil_h;
            if (zh < pad_h || zh - pad_h >= in_h) { continue; }
            let x_h = x_d + (zh - pad_h) * xs_h;
            for (var kw = 0u; kw < k_w; kw++) {
                let zw = ow * stride_w + kw * dil_w;
                if (zw < pad_w || zw - pad_w >= in_w) { continue; }
                let v = x[x_h + (zw - pad_w) * xs_w];
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
    let flags = params[9];
    if ((flags & 1u) == 0u) {
        y[i] = sum;
    } else if ((flags & 2u) != 0u) {
        y[i] = sum / f32(params[4]);
    } else {
        y[i] = sum / f32(max(real, 1u));
    }
}
