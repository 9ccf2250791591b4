// TopK, one thread per input element: its rank in its row along the axis (how many elements
// come before it: larger, or smaller when !largest, or equal at a lower index), and when the
// rank is below k it writes itself at that rank: values[rank] and indices[rank] (its index
// along the axis; i64 indices are i32 words). {{T}}: the element word.
// params: [n, len (the axis), inner (elements after the axis), k, largest (1 or 0)]

@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> values: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> indices: array<i32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let len = params[1];
    let inner = params[2];
    let k = params[3];
    let largest = params[4] != 0u;
    let own = (i / inner) % len;
    let base = (i / (inner * len)) * len * inner + i % inner;
    let v = x[i];
    var rank = 0u;
    for (var j = 0u; j < len; j = j + 1u) {
        let w = x[base + j * inner];
        let before = select((w < v), (w > v), largest) || (w == v && j < own);
        if (before) { rank = rank + 1u; }
    }
    if (rank < k) {
        let at = (i / (inner * len)) * k * inner + rank * inner + i % inner;
        values[at] = v;
        indices[at] = i32(own);
    }
}
