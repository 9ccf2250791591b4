// The discrete Fourier transform along one axis of complex values stored as [re, im] pairs on
// the last axis: y[k] = sum over n of x[n] * e^(-+2 pi i k n / len) (+ when inverse, not
// normalized). One thread per output pair. The twiddles e^(-+2 pi i r / len) come with the
// parameters, computed in f64 on the host (a GPU's sin and cos can be far less exact). f32.
// params: [pairs (outer * len * inner / 2), len, inner (elements after the axis, the pair
//          included), then cos bits[len], sin bits[len] (r = k n mod len)]

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let len = params[1];
    let inner = params[2];
    let pairs = inner / 2u;
    let pair = i % pairs;
    let k = (i / pairs) % len;
    let outer = i / (pairs * len);
    var re = 0.0;
    var im = 0.0;
    for (var n = 0u; n < len; n++) {
        let r = (k * n) % len;
        let c = param_f32(3u + r);
        let s = param_f32(3u + len + r);
        let at = (outer * len + n) * inner + 2u * pair;
        let xr = x[at];
        let xi = x[at + 1u];
        re += xr * c - xi * s;
        im += xr * s + xi * c;
    }
    let out = (outer * len + k) * inner + 2u * pair;
    y[out] = re;
    y[out + 1u] = im;
}
