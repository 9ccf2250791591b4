// Local response normalization across channels (axis 1) of an f32 `N, C, ...` tensor, one
// thread per element: y = x / (bias + alpha / size * sum of x^2 over channels
// c - (size - 1) / 2 ..= c + ceil((size - 1) / 2))^beta.
// params: [total, channels, inner (product of the axes after C), size, alpha, beta, bias
//          (f32 bits)]

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let channels = params[1];
    let inner = params[2];
    let size = params[3];
    let c = (i / inner) % channels;
    let start = i - c * inner;
    let lo = c - min(c, (size - 1u) / 2u);
    let hi = min(c + size / 2u, channels - 1u);
    var squares = 0.0;
    for (var ch = lo; ch <= hi; ch++) {
        let v = x[start + ch * inner];
        squares += v * v;
    }
    let base = param_f32(6u) + param_f32(4u) / f32(size) * squares;
    // base^beta for base >= 0 (exp2(-inf) = 0 for a zero base).
    y[i] = x[i] / exp2(param_f32(5u) * log2(base));
}
