// y = f(x), element-wise. {{IN}}/{{OUT}}: device words; {{EXPR}}: f applied to `v`
// (a builtin, or one of the functions below); {{WRAP}}: narrows integer results.
// params: [n, extra (f32 bits: LeakyRelu alpha, PowConst exponent, IsInf flags)]

@group(0) @binding(1) var<storage, read> x: array<{{IN}}>;
@group(0) @binding(2) var<storage, read_write> y: array<{{OUT}}>;

// erf: Taylor series below |x| = 0.5 (error < 2e-8), else 1 - erfc with Numerical Recipes'
// erfcc (fractional error < 1.2e-7).
fn erf_f32(x: f32) -> f32 {
    let a = abs(x);
    if (a < 0.5) {
        let t = x * x;
        let s = 1.0 - t * (1.0 / 3.0 - t * (0.1 - t * (1.0 / 42.0 - t * (1.0 / 216.0 - t / 1320.0))));
        return 1.1283791671 * x * s;
    }
    let t = 1.0 / (1.0 + 0.5 * a);
    let r = t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277)))))))));
    return sign(x) * (1.0 - r);
}

fn sigmoid_f32(x: f32) -> f32 {
    // exp of a non-positive number never overflows.
    let e = exp(-abs(x));
    return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

fn tanh_f32(x: f32) -> f32 {
    let e = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}

fn round_half_away_f32(x: f32) -> f32 {
    return sign(x) * floor(abs(x) + 0.5);
}

// pow with C semantics for negative bases and integer exponents (WGSL's pow is undefined there).
fn pow_f32(b: f32, e: f32) -> f32 {
    if (e == 0.0) { return 1.0; }
    if (b == 0.0) { return select(f32_from_bits(0x7f800000u), 0.0, e > 0.0); }
    let r = exp2(e * log2(abs(b)));
    if (b > 0.0) { return r; }
    if (floor(e) != e) { return f32_from_bits(0x7fc00000u); }
    let odd = (abs(e) % 2.0) == 1.0;
    return select(r, -r, odd);
}

fn is_nan_f32(x: f32) -> u32 {
    return select(0u, 1u, (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u);
}

// params[1] bit 0: detect +inf, bit 1: detect -inf.
fn is_inf_f32(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    let pos = bits == 0x7f800000u && (params[1] & 1u) != 0u;
    let neg = bits == 0xff800000u && (params[1] & 2u) != 0u;
    return select(0u, 1u, pos || neg);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let v = x[i];
    y[i] = {{WRAP}}({{EXPR}});
}
