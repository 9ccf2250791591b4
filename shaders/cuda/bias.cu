// out[i] += bias[channel of i] for a channels-first [N, C, P] output (`conv.rs`), or
// bias[0] everywhere when the bias is one value.
// params: [n, P, C, per_channel (1: bias has C values, 0: one value)]

extern "C" __global__ void tessera_main(const u32* params, const f32* bias, f32* out) {
    const u32 i = thread_index(blockIdx, threadIdx.x, gridDim);
    if (i >= params[0]) { return; }
    const u32 channel = params[3] != 0u ? (i / params[1]) % params[2] : 0u;
    out[i] += bias[channel];
}
