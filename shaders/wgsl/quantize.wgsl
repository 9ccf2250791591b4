// Quantize, Dequantize and LookupTable, element-wise: y = {{EXPR}} of `v`, where {{EXPR}} is
// `quantize(v)`, `dequantize(v)` or `lookup(v)`; {{IN}}/{{OUT}}: the words they take and give.
// params, after [n]:
// - quantize (f32 -> u8 / i8 word bits as u32):
//   [n, inv_scale (f32 bits), zero_point (i32), lo (i32), hi (i32)]
//   y = clamp(i32(round_half_even(v * inv_scale)) + zero_point, lo, hi), the i32 conversion
//   saturating like Rust's `as` (NaN gives 0) and the addition wrapping.
// - dequantize (u8 / i8 / i32 words read as i32 -> f32): [n, scale (f32 bits), zero_point (i32)]
//   y = f32(v - zero_point) * scale (the subtraction wraps at 32 bits).
// - lookup (u8 / i8 words as u32 -> output words as u32): [n, table[256]]
//   y = table[v & 0xff]; the table holds output words (i8 entries sign-extended).

@group(0) @binding(1) var<storage, read> x: array<{{IN}}>;
@group(0) @binding(2) var<storage, read_write> y: array<{{OUT}}>;

// Saturating f32 -> i32 (NaN is detected from the bits: WGSL may assume it never occurs).
fn f32_to_i32(v: f32) -> i32 {
    if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return 0; }
    if (v >= 2147483648.0) { return 2147483647; }
    if (v <= -2147483648.0) { return -2147483647 - 1; }
    return i32(v);
}

fn quantize(v: f32) -> u32 {
    // WGSL's round() rounds half to even.
    // Clamp before adding the zero point, so a huge input saturates instead of wrapping.
    let zero = param_i32(2u);
    let q = clamp(f32_to_i32(round(v * param_f32(1u))), param_i32(3u) - zero, param_i32(4u) - zero);
    return bitcast<u32>(q + zero);
}

fn dequantize(v: i32) -> f32 {
    return f32(v - param_i32(2u)) * param_f32(1u);
}

fn lookup(v: u32) -> u32 {
    return params[1u + (v & 0xffu)];
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let v = x[i];
    y[i] = {{EXPR}};
}
