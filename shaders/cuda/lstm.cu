// The tail of an LSTM cell, one thread per state element (row r, unit j):
// i, o, f = sigmoid(gates), c~ = tanh(gate); c = f * c_prev + i * c~; h = o * tanh(c).
// pre: [rows, 4 * hidden] gate pre-activations in the order i, o, f, c~; c_prev: [rows, hidden].
// params: [total (rows * hidden), hidden]
struct Kernel {
    const u32* params;
    f32* pre;
    f32* c_prev;
    f32* h_out;
    f32* c_out;


    __device__ f32 sigmoid_f32(f32 x) {
        // exp of a non-positive number never overflows.
        const auto e = expf(-w_abs(x));
        return select(e / (1.0f + e), 1.0f / (1.0f + e), x >= 0.0f);
    }

    __device__ f32 tanh_f32(f32 x) {
        const auto e = expf(-2.0f * w_abs(x));
        return w_sign(x) * (1.0f - e) / (1.0f + e);
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto hidden = params[1];
        const auto j = i % hidden;
        const auto at = (i / hidden) * 4u * hidden + j;
        const auto input_gate = sigmoid_f32(pre[at]);
        const auto output_gate = sigmoid_f32(pre[at + hidden]);
        const auto forget_gate = sigmoid_f32(pre[at + 2u * hidden]);
        const auto candidate = tanh_f32(pre[at + 3u * hidden]);
        const auto cell = forget_gate * c_prev[i] + input_gate * candidate;
        c_out[i] = cell;
        h_out[i] = output_gate * tanh_f32(cell);
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* pre, f32* c_prev, f32* h_out, f32* c_out) {
    Kernel kernel{params, pre, c_prev, h_out, c_out};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
