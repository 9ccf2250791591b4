// ScatterND, one thread per output element, deterministic: out = data, then every row of the
// indices whose k coordinates address this element's slice of the first k data axes combines
// its update for this element in, rows in order. {{T}}: the data word; {{COMBINE}}: the
// reduction of the current value `a` and the update `b`; {{WRAP}} narrows integer results.
// Indices are 32-bit words (signed: negative ones count from the end); a row with a
// coordinate still out of range hits nothing.
// Host and constant indices are checked before upload (out of range: an error), so only an
// index computed on the device can be out of range here (docs/robustness.md).
// params: [n, k, slice (data elements after the first k axes), rows,
//          signed (1: i32 index words, 0: u32), dims[k] (the first k data axes)]

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
    let k = params[1];
    let slice = params[2];
    let signed_ix = params[4] != 0u;
    let own = i / slice;
    let t = i % slice;
    var cur = data[i];
    for (var r = 0u; r < params[3]; r = r + 1u) {
        var at = 0u;
        var inside = true;
        for (var j = 0u; j < k; j = j + 1u) {
            let dim = params[5u + j];
            let ix = resolve_index(indices[r * k + j], signed_ix, dim);
            if (ix >= dim) { inside = false; }
            at = at * dim + ix;
        }
        if (inside && at == own) {
            cur = combine(cur, updates[r * slice + t]);
        }
    }
    out[i] = {{WRAP}}(cur);
}
