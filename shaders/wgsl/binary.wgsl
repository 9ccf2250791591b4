// out = a op b with numpy broadcasting. {{A}}: operand word, {{OUT}}: result word,
// {{EXPR}}: the op on `a` and `b`; {{WRAP}} narrows integer results.
// params: [n, rank, out_shape[rank], a_strides[rank], b_strides[rank]] (stride 0 broadcasts)

@group(0) @binding(1) var<storage, read> lhs: array<{{A}}>;
@group(0) @binding(2) var<storage, read> rhs: array<{{A}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{OUT}}>;

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

fn pow_i32(b: i32, e: i32) -> i32 {
    var r = 1;
    var p = b;
    var k = u32(max(e, 0));
    loop {
        if (k == 0u) { break; }
        if ((k & 1u) != 0u) { r = r * p; }
        p = p * p;
        k = k >> 1u;
    }
    return r;
}

fn pow_u32(b: u32, e: u32) -> u32 {
    var r = 1u;
    var p = b;
    var k = e;
    loop {
        if (k == 0u) { break; }
        if ((k & 1u) != 0u) { r = r * p; }
        p = p * p;
        k = k >> 1u;
    }
    return r;
}

// C's fmodf: the remainder truncated toward zero (what `%` computes on f32).
fn fmod_f32(a: f32, b: f32) -> f32 {
    return a % b;
}

fn flag(c: bool) -> u32 {
    return select(0u, 1u, c);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let rank = params[1];
    var rest = i;
    var ai = 0u;
    var bi = 0u;
    for (var axis = rank; axis > 1u; axis--) {
        let d = axis - 1u;
        let dim = params[2u + d];
        let coord = rest % dim;
        rest = rest / dim;
        ai += coord * params[2u + rank + d];
        bi += coord * params[2u + 2u * rank + d];
    }
    // The outermost axis: what is left is its coordinate.
    if (rank > 0u) {
        ai += rest * params[2u + rank];
        bi += rest * params[2u + 2u * rank];
    }
    let a = lhs[ai];
    let b = rhs[bi];
    out[i] = {{WRAP}}({{EXPR}});
}
