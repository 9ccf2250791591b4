// OneHot: the output viewed as [outer, depth, inner] and the indices as [outer, inner];
// out[o, d, k] = indices[o, k] == d ? on : off. Index words: kind 0 u32, 1 i32 (i64 on the
// host), 2 f32 (truncated toward zero); a negative index counts from the end, one outside
// -depth..depth matches no d. `on` and `off` are words of the output dtype.
// params: [n, depth, inner, kind, off, on]

@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let depth = params[1];
    let inner = params[2];
    let k = i % inner;
    let t = i / inner;
    let d = t % depth;
    let o = t / depth;
    var w = indices[o * inner + k];
    let kind = params[3];
    if (kind == 2u) {
        w = bitcast<u32>(i32(bitcast<f32>(w)));
    }
    let ix = resolve_index(w, kind != 0u, depth);
    out[i] = select(params[4], params[5], ix == d);
}
