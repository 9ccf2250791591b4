// y = cast(x), element-wise. {{IN}}/{{OUT}}: device words of the source and target types;
// {{EXPR}}: the conversion of `v` (a bitcast and wrap, or one of the functions below).
// Floats to integers truncate toward zero and saturate at the target's range, NaN gives 0
// (Rust's `as`, which the reference uses); floats to bool test the bits, so -0.0 is false
// and NaN true. WGSL may assume NaN never occurs, so NaN is detected from the bits.
// params: [n]

@group(0) @binding(1) var<storage, read> x: array<{{IN}}>;
@group(0) @binding(2) var<storage, read_write> y: array<{{OUT}}>;

fn nan_f32(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn f32_to_bool(v: f32) -> u32 {
    return select(0u, 1u, (bitcast<u32>(v) & 0x7fffffffu) != 0u);
}

// The i32 bounds are not both f32 values, so compare against the powers of two.
fn f32_to_i32(v: f32) -> i32 {
    if (nan_f32(v)) { return 0; }
    if (v >= 2147483648.0) { return 2147483647; }
    if (v <= -2147483648.0) { return -2147483647 - 1; }
    return i32(v);
}

// For i8 and i16, whose bounds `lo`, `hi` are f32 values.
fn f32_to_narrow_i32(v: f32, lo: f32, hi: f32) -> i32 {
    if (nan_f32(v)) { return 0; }
    return i32(clamp(v, lo, hi));
}

fn f32_to_u32(v: f32) -> u32 {
    if (nan_f32(v) || v <= 0.0) { return 0u; }
    if (v >= 4294967296.0) { return 0xffffffffu; }
    return u32(v);
}

// For u8 and u16, whose bound `hi` is an f32 value.
fn f32_to_narrow_u32(v: f32, hi: f32) -> u32 {
    if (nan_f32(v)) { return 0u; }
    return u32(clamp(v, 0.0, hi));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let v = x[i];
    y[i] = {{EXPR}};
}
