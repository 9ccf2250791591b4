// ScatterElements, one thread per output element, deterministic: out = data, then every update
// whose coordinate off `axis` is this element's and whose index along `axis` lands on it is
// combined in, in row-major order of the updates (for a fixed element they differ only along
// `axis`, so that is ascending j). {{T}}: the data word; {{COMBINE}}: the reduction of the
// current value `a` and the update `b`; {{WRAP}} narrows integer results. Indices are 32-bit
// words (signed: negative ones count from the end); one still out of range hits nothing.
// Host and constant indices are checked before upload (out of range: an error, as on cpu), so
// only an index computed on the device can be out of range here (docs/robustness.md).
// params: [n, rank, axis, signed (1: i32 index words, 0: u32), dim (data's axis),
//          count (indices' axis), data_shape[rank], indices_shape[rank], indices_strides[rank]]

@group(0) @binding(1) var<storage, read> data: array<{{T}}>;
@group(0) @binding(2) var<storage, read> indices: array<u32>;
@group(0) @binding(3) var<storage, read> updates: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> out: array<{{T}}>;

fn combine(a: {{T}}, b: {{T}}) -> {{T}} {
    return {{COMBINE}};
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let rank = params[1];
    let axis = params[2];
    let signed_ix = params[3] != 0u;
    let dim = params[4];
    let count = params[5];
    var cur = data[i];
    // This element's coordinate along `axis`, and the offset in the indices of its row along
    // `axis` (when the indices reach it off `axis`).
    var rest = i;
    var base = 0u;
    var inside = true;
    var own = 0u;
    for (var a = rank; a > 0u; a = a - 1u) {
        let extent = params[6u + a - 1u];
        let c = rest % extent;
        rest = rest / extent;
        if (a - 1u == axis) {
            own = c;
        } else {
            if (c >= params[6u + rank + a - 1u]) {
                inside = false;
            }
            base = base + c * params[6u + 2u * rank + a - 1u];
        }
    }
    if (inside) {
        let step = params[6u + 2u * rank + axis];
        for (var j = 0u; j < count; j = j + 1u) {
            let t = base + j * step;
            if (resolve_index(indices[t], signed_ix, dim) == own) {
                cur = combine(cur, updates[t]);
            }
        }
    }
    out[i] = {{WRAP}}(cur);
}
