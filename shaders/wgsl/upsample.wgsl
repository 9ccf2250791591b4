// Nearest upsampling by an integer factor per axis, out[c] = in[c / factor], or ({{TILED}} =
// true) tiling, the input repeated along each axis, out[c] = in[c mod factor] with the input's
// shape as factors. Words of any dtype, moved as u32.
// params: [n, rank, out_shape[rank], factors[rank], in_strides[rank]] (row-major strides)

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

const TILED: bool = {{TILED}};

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let rank = params[1];
    var rest = i;
    var src = 0u;
    for (var axis = rank; axis > 0u; axis--) {
        let d = axis - 1u;
        let dim = params[2u + d];
        let coord = rest % dim;
        rest = rest / dim;
        let factor = params[2u + rank + d];
        let at = select(coord / factor, coord % factor, TILED);
        src += at * params[2u + 2u * rank + d];
    }
    y[i] = x[src];
}
