// Strided slice along one axis: the input is viewed as [outer, dim, inner] and the output as
// [outer, len, inner], with out[o, j, k] = in[o, start + j * step, k]. Words of any dtype,
// moved as u32.
// params: [n, inner, len, dim, start, step]

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let inner = params[1];
    let len = params[2];
    let k = i % inner;
    let t = i / inner;
    let j = t % len;
    let o = t / len;
    y[i] = x[(o * params[3] + params[4] + j * params[5]) * inner + k];
}
