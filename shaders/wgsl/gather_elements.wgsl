// GatherElements: out[c] = data[c with c[axis] = indices[c]] for every coordinate c of the
// indices (the output has their shape). Indices are 32-bit words (i64 indices are i32 on the
// device); when signed, negative ones count from the end. An index still outside 0..dim
// reads nothing and writes 0. Words of any dtype, moved as u32.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, rank, axis, signed (1: i32 index words, 0: u32), dim (data's axis),
//          indices_shape[rank], data_strides[rank]]

@group(0) @binding(1) var<storage, read> data: array<u32>;
@group(0) @binding(2) var<storage, read> indices: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let rank = params[1];
    let axis = params[2];
    let dim = params[4];
    // The data offset of this coordinate, without its `axis` component.
    var rest = i;
    var at = 0u;
    for (var a = rank; a > 0u; a = a - 1u) {
        let extent = params[5u + a - 1u];
        let c = rest % extent;
        rest = rest / extent;
        if (a - 1u != axis) {
            at = at + c * params[5u + rank + a - 1u];
        }
    }
    let ix = resolve_index(indices[i], params[3] != 0u, dim);
    if (ix >= dim) {
        out[i] = 0u;
        return;
    }
    out[i] = data[at + ix * params[5u + rank + axis]];
}
