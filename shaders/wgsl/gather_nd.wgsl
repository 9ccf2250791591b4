// GatherND: each row of the indices (every axis but the last) holds k coordinates into data
// axes batch_dims..batch_dims + k; out[row, t] = the data element there, t running over the
// `slice` elements of the data axes after them, in the row's batch. Indices are 32-bit words
// (i64 indices are i32 on the device); when signed, negative ones count from the end. A row
// with a coordinate still outside its axis writes 0. Words of any dtype, moved as u32.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, k, slice, rows_per_batch, batch_stride (data words per batch),
//          signed (1: i32 index words, 0: u32), dims[k], strides[k] (of those data axes)]

@group(0) @binding(1) var<storage, read> data: array<u32>;
@group(0) @binding(2) var<storage, read> indices: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let k = params[1];
    let slice = params[2];
    let row = i / slice;
    var at = (row / params[3]) * params[4] + i % slice;
    for (var j = 0u; j < k; j = j + 1u) {
        let dim = params[6u + j];
        let ix = resolve_index(indices[row * k + j], params[5] != 0u, dim);
        if (ix >= dim) {
            out[i] = 0u;
            return;
        }
        at = at + ix * params[6u + k + j];
    }
    out[i] = data[at];
}
