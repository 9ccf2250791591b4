// Resampling along one axis (ONNX Resize, one dispatch per resized axis): output position p
// of the axis is bias[p] + sum over taps k of weight[p, k] * x[.., index[p, k], ..], taps of
// weight 0 skipped (as on cpu: a 0 weight must not turn an infinite input into NaN). f32.
// params: [n, len_in, len_out, inner, window, then index[len_out * window],
//          weight bits[len_out * window], bias bits[len_out]]

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let len_in = params[1];
    let len_out = params[2];
    let inner = params[3];
    let window = params[4];
    let within = i % inner;
    let p = (i / inner) % len_out;
    let outer = i / (inner * len_out);
    let taps = 5u + p * window;
    let weights = 5u + len_out * window + p * window;
    var acc = param_f32(5u + 2u * len_out * window + p);
    for (var k = 0u; k < window; k++) {
        let w = param_f32(weights + k);
        if (w != 0.0) {
            acc += w * x[(outer * len_in + params[taps + k]) * inner + within];
        }
    }
    y[i] = acc;
}
