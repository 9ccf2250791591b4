// Trilu: keeps the upper (c - r >= k) or lower (c - r <= k) triangle of each matrix in the last
// two axes, zeroing the rest. Words of any dtype, moved as u32 (0u is zero for every type).
// `k` is one i32 word (an i64 on the host).
// params: [n, rows, cols, upper (1) or lower (0)]

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<i32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let cols = params[2];
    let c = i % cols;
    let r = (i / cols) % params[1];
    let diagonal = i32(c) - i32(r);
    var keep: bool;
    if (params[3] != 0u) {
        keep = diagonal >= k[0];
    } else {
        keep = diagonal <= k[0];
    }
    y[i] = select(0u, x[i], keep);
}
