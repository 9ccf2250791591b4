// Padding with a constant, a reflection (mirror without repeating the edge) or the edge
// repeated. Words of any dtype, moved as u32; the constant is given as the dtype's word bits.
// params: [n, rank, mode (0 constant, 1 reflect, 2 edge), fill (word bits),
//          out_shape[rank], in_shape[rank], in_strides[rank], pads_before[rank]]

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

// The input coordinate along an axis of `dim` for output coordinate `o` (`before` pads
// first), or 0xffffffff for the constant. Unsigned arithmetic only: below the input, the
// distance is `before - o`.
fn source(o: u32, dim: u32, before: u32, mode: u32) -> u32 {
    let below = o < before;
    let c = o - before;
    if (!below && c < dim) { return c; }
    if (mode == 0u) { return 0xffffffffu; }
    if (mode == 2u) { return select(dim - 1u, 0u, below); }
    if (dim < 2u) { return 0u; }
    // Reflect: the pattern repeats every 2 (dim - 1).
    let period = 2u * (dim - 1u);
    var m: u32;
    if (below) {
        m = (period - (before - o) % period) % period;
    } else {
        m = c % period;
    }
    return select(period - m, m, m < dim);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let rank = params[1];
    let mode = params[2];
    var rest = i;
    var src = 0u;
    for (var axis = rank; axis > 0u; axis--) {
        let d = axis - 1u;
        let dim = params[4u + d];
        let c = source(rest % dim, params[4u + rank + d], params[4u + 3u * rank + d], mode);
        rest = rest / dim;
        if (c == 0xffffffffu) {
            y[i] = params[3];
            return;
        }
        src += c * params[4u + 2u * rank + d];
    }
    y[i] = x[src];
}
