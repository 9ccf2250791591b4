// Prepended to every Tessera WGSL kernel.
//
// Conventions (see crates/tessera-wgpu/src/kernels/mod.rs):
// - binding 0 is `params`, the dispatch's u32 parameters (shapes, strides, f32 bit patterns);
// - then the step's tensors, read-only first, then the outputs; every element is one 32-bit word;
// - 1-D kernels run 64 threads per workgroup over a grid that may be 2-D (a dimension holds at
//   most 65535 workgroups): use `thread_index` and return when it is past the element count.

@group(0) @binding(0) var<storage, read> params: array<u32>;

const WORKGROUP: u32 = 64u;

fn thread_index(wid: vec3<u32>, lid: u32, nwg: vec3<u32>) -> u32 {
    return (wid.y * nwg.x + wid.x) * WORKGROUP + lid;
}

fn param_f32(ix: u32) -> f32 {
    return bitcast<f32>(params[ix]);
}

fn param_i32(ix: u32) -> i32 {
    return bitcast<i32>(params[ix]);
}

// Narrow integer types live in 32-bit words; these keep results at their width.
fn wrap_u8(x: u32) -> u32 { return x & 0xffu; }
fn wrap_u16(x: u32) -> u32 { return x & 0xffffu; }
fn wrap_i8(x: i32) -> i32 { return (x << 24u) >> 24u; }
fn wrap_i16(x: i32) -> i32 { return (x << 16u) >> 16u; }
fn wrap_bool(x: u32) -> u32 { return select(0u, 1u, x != 0u); }

// An index word along an axis of `dim` (i64 indices are i32 words): when `is_signed`, a negative
// i32 counts from the end. Anything still outside 0..dim gives `dim`. Adding dim in wrapping
// u32 arithmetic gives dim - |ix| when |ix| <= dim, and at least 2^31 > dim otherwise.
fn resolve_index(w: u32, is_signed: bool, dim: u32) -> u32 {
    var ix = w;
    if (is_signed && bitcast<i32>(w) < 0) {
        ix = w + dim;
    }
    return select(dim, ix, ix < dim);
}

// A float from its bits, as a run-time value: WGSL rejects infinities and NaNs in constant
// expressions (browsers refuse `bitcast<f32>(0x7f800000u)`), but a function call is not one.
fn f32_from_bits(bits: u32) -> f32 {
    return bitcast<f32>(bits);
}
