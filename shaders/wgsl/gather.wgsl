// out[o, j, k] = data[o, indices[j], k]: data viewed as [outer, dim, inner], the output as
// [outer, count, inner] (count = number of indices). Indices are 32-bit words (i64 indices are
// i32 on the device); when signed, negative ones count from the end. An index still outside
// 0..dim reads nothing and writes 0. Words of any dtype, moved as
// u32.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, inner, count, dim, signed (1: indices are i32 words, 0: u32 words)]

@group(0) @binding(1) var<storage, read> data: array<u32>;
@group(0) @binding(2) var<storage, read> indices: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let inner = params[1];
    let count = params[2];
    let dim = params[3];
    let k = i % inner;
    let t = i / inner;
    let j = t % count;
    let o = t / count;
    var ix = indices[j];
    // A negative i32 counts from the end: adding dim in wrapping u32 arithmetic gives
    // dim - |ix| when |ix| <= dim, and at least 2^31 > dim otherwise (out of range below).
    if (params[4] != 0u && bitcast<i32>(ix) < 0) {
        ix = ix + dim;
    }
    if (ix >= dim) {
        out[i] = 0u;
        return;
    }
    out[i] = data[(o * dim + ix) * inner + k];
}
