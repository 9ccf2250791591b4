// Grouped, strided, dilated, padded convolution. Each thread computes a block of outputs:
// {{OCB}} output channels (8, 4, 2 or 1: the largest that divides a group's) times 4 consecutive
// positions along the last spatial axis, so one read of x serves {{OCB}} channels and one read of
// a weight serves 4 positions (12 reads per 32 products at 8). On software drivers every read is
// a per-lane gather: lavapipe ran a 3x3 256-channel convolution 1.35x faster at 8 than at 4.
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
// {{T}}: element word, accumulated in it (f32, or i32 for integer convolutions, which wrap).

@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read> w: array<{{T}}>;
// Without a bias the runtime binds x here; bias_mode 0 never reads it.
@group(0) @binding(3) var<storage, read> bias: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> y: array<{{T}}>;

const OCB: u32 = {{OCB}};

fn axis_param(axis: u32, field: u32) -> u32 {
    return params[10u + axis * 8u + field];
}

fn bias_of(o: u32) -> {{T}} {
    switch (params[9]) {
        case 1u: { return bias[0]; }
        case 2u: { return bias[o]; }
        default: { return {{T}}(0); }
    }
}

// Writes output channel `o` at positions ow0.. of row (nb, od, oh).
fn store(nb: u32, o: u32, row: u32, ow0: u32, out_w: u32, acc: vec4<{{T}}>) {
    let channels = params[1];
    let spatial = params[6];
    let b = bias_of(o);
    for (var j = 0u; j < 4u; j++) {
        let ow = ow0 + j;
        if (ow >= out_w) { return; }
        let s = row * out_w + ow;
        var at: u32;
        if (params[5] != 0u) {
            at = (nb * spatial + s) * channels + o;
        } else {
            at = (nb * channels + o) * spatial + s;
        }
        y[at] = acc[j] + b;
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let in_per_group = params[2];
    let out_per_group = params[3];
    let kernel_size = params[4];
    let in_d = axis_param(0u, 0u);
    let in_h = axis_param(1u, 0u);
    let in_w = axis_param(2u, 0u);
    let out_d = axis_param(0u, 1u);
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

    let w_blocks = (out_w + 3u) / 4u;
    let c_blocks = params[1] / OCB;
    var rest = i;
    let ow0 = (rest % w_blocks) * 4u;
    rest = rest / w_blocks;
    let oh = rest % out_h;
    rest = rest / out_h;
    let od = rest % out_d;
    rest = rest / out_d;
    let o0 = (rest % c_blocks) * OCB;
    let nb = rest / c_blocks;

    let x_cs = params[8];
    let group = o0 / out_per_group;
    let x_base = nb * params[7] + group * in_per_group * x_cs;
    // Weights of channel o0 + t start t * w_stride after those of o0.
    let w_stride = in_per_group * kernel_size;
    let w_base = o0 * w_stride;
    let lanes = vec4<u32>(0u, 1u, 2u, 3u);
    var acc0 = vec4<{{T}}>({{T}}(0));
    var acc1 = vec4<{{T}}>({{T}}(0));
    var acc2 = vec4<{{T}}>({{T}}(0));
    var acc3 = vec4<{{T}}>({{T}}(0));
    var acc4 = vec4<{{T}}>({{T}}(0));
    var acc5 = vec4<{{T}}>({{T}}(0));
    var acc6 = vec4<{{T}}>({{T}}(0));
    var acc7 = vec4<{{T}}>({{T}}(0));
    for (var kd = 0u; kd < k_d; kd++) {
        // Unsigned: a tap in the padding before the axis is below pad_d.
        let zd = od * stride_d + kd * dil_d;
        if (zd < pad_d || zd - pad_d >= in_d) { continue; }
        let x_d = x_base + (zd - pad_d) * xs_d;
        for (var kh = 0u; kh < k_h; kh++) {
            let zh = oh * stride_h + kh * dil_h;
            if (zh < pad_h || zh - pad_h >= in_h) { continue; }
            let x_h = x_d + (zh - pad_h) * xs_h;
            let w_h = w_base + (kd * k_h + kh) * k_w;
            for (var kw = 0u; kw < k_w; kw++) {
                let zw = (vec4<u32>(ow0) + lanes) * stride_w + vec4<u32>(kw * dil_w);
                let inside = (zw >= vec4<u32>(pad_w)) & (zw - vec4<u32>(pad_w) < vec4<u32>(in_w));
                if (!any(inside)) { continue; }
                // Positions in the padding read x[x_h] (in range) and are zeroed.
                var xi = select(vec4<u32>(x_h), x_h + (zw - vec4<u32>(pad_w)) * xs_w, inside);
                var wi = w_h + kw;
                for (var c = 0u; c < in_per_group; c++) {
                    let xv = select(vec4<{{T}}>({{T}}(0)),
                        vec4<{{T}}>(x[xi.x], x[xi.y], x[xi.z], x[xi.w]), inside);
                    // OCB is a constant: the branches not taken compile away.
                    acc0 += w[wi] * xv;
                    if (OCB >= 2u) {
                        acc1 += w[wi + w_stride] * xv;
                    }
                    if (OCB >= 4u) {
                        acc2 += w[wi + 2u * w_stride] * xv;
                        acc3 += w[wi + 3u * w_stride] * xv;
                    }
                    if (OCB == 8u) {
                        acc4 += w[wi + 4u * w_stride] * xv;
                        acc5 += w[wi + 5u * w_stride] * xv;
                        acc6 += w[wi + 6u * w_stride] * xv;
                        acc7 += w[wi + 7u * w_stride] * xv;
                    }
                    xi += vec4<u32>(x_cs);
                    wi += kernel_size;
                }
            }
        }
    }
    let row = od * out_h + oh;
    store(nb, o0, row, ow0, out_w, acc0);
    if (OCB >= 2u) {
        store(nb, o0 + 1u, row, ow0, out_w, acc1);
    }
    if (OCB >= 4u) {
        store(nb, o0 + 2u, row, ow0, out_w, acc2);
        store(nb, o0 + 3u, row, ow0, out_w, acc3);
    }
    if (OCB == 8u) {
        store(nb, o0 + 4u, row, ow0, out_w, acc4);
        store(nb, o0 + 5u, row, ow0, out_w, acc5);
        store(nb, o0 + 6u, row, ow0, out_w, acc6);
        store(nb, o0 + 7u, row, ow0, out_w, acc7);
    }
}
