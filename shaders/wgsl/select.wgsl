// out = cond ? a : b (ONNX Where) with numpy broadcasting. Only bits move, so a, b and out
// are u32 words whatever their dtype; cond is a bool word (0 or 1).
// params: [n, rank, out_shape[rank], cond_strides[rank], a_strides[rank], b_strides[rank]]
// (stride 0 broadcasts)

@group(0) @binding(1) var<storage, read> cond: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<u32>;
@group(0) @binding(3) var<storage, read> b: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let rank = params[1];
    var rest = i;
    var ci = 0u;
    var ai = 0u;
    var bi = 0u;
    for (var axis = rank; axis > 1u; axis--) {
        let d = axis - 1u;
        let dim = params[2u + d];
        let coord = rest % dim;
        rest = rest / dim;
        ci += coord * params[2u + rank + d];
        ai += coord * params[2u + 2u * rank + d];
        bi += coord * params[2u + 3u * rank + d];
    }
    // The outermost axis: what is left is its coordinate.
    if (rank > 0u) {
        ci += rest * params[2u + rank];
        ai += rest * params[2u + 2u * rank];
        bi += rest * params[2u + 3u * rank];
    }
    if (cond[ci] != 0u) {
        out[i] = a[ai];
    } else {
        out[i] = b[bi];
    }
}
