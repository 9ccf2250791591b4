// One input's slab of a concatenation (one dispatch per input). Per outer index, the input
// holds `chunk` contiguous words, which go `offset` words into the output's `out_chunk`.
// Words of any dtype, moved as u32.
// params: [n (the input's length), chunk, out_chunk, offset]

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let chunk = params[1];
    y[(i / chunk) * params[2] + params[3] + i % chunk] = x[i];
}
