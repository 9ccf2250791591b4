// The tail of an LSTM cell, one thread per state element (row r, unit j):
// i, o, f = sigmoid(gates), c~ = tanh(gate); c = f * c_prev + i * c~; h = o * tanh(c).
// pre: [rows, 4 * hidden] gate pre-activations in the order i, o, f, c~; c_prev: [rows, hidden].
// params: [total (rows * hidden), hidden]

@group(0) @binding(1) var<storage, read> pre: array<f32>;
@group(0) @binding(2) var<storage, read> c_prev: array<f32>;
@group(0) @binding(3) var<storage, read_write> h_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> c_out: array<f32>;

fn sigmoid_f32(x: f32) -> f32 {
    // exp of a non-positive number never overflows.
    let e = exp(-abs(x));
    return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

fn tanh_f32(x: f32) -> f32 {
    let e = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let hidden = params[1];
    let j = i % hidden;
    let at = (i / hidden) * 4u * hidden + j;
    let input_gate = sigmoid_f32(pre[at]);
    let output_gate = sigmoid_f32(pre[at + hidden]);
    let forget_gate = sigmoid_f32(pre[at + 2u * hidden]);
    let candidate = tanh_f32(pre[at + 3u * hidden]);
    let cell = forget_gate * c_prev[i] + input_gate * candidate;
    c_out[i] = cell;
    h_out[i] = output_gate * tanh_f32(cell);
}
