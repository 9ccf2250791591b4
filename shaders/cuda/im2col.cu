// Columns for a channels-first convolution as a GEMM (`conv.rs`): for image b, channel c,
// kernel tap t and output position p, cols[((b * C + c) * taps + t) * P + p] is the input
// element the tap reads at that position, or 0 in the padding. Up to 3 spatial axes.
// params: [total, rank, C, P, taps, input[rank], output[rank], kernel[rank], strides[rank],
//          dilations[rank], pads_before[rank]]

extern "C" __global__ void tessera_main(const u32* params, const f32* x, f32* cols) {
    const u32 i = thread_index(blockIdx, threadIdx.x, gridDim);
    if (i >= params[0]) { return; }
    const u32 rank = params[1];
    const u32 channels = params[2];
    const u32 positions = params[3];
    const u32 taps = params[4];
    const u32* input = params + 5;
    const u32* output = input + rank;
    const u32* kernel = output + rank;
    const u32* strides = kernel + rank;
    const u32* dilations = strides + rank;
    const u32* pads = dilations + rank;
    u32 p = i % positions;
    u32 t = (i / positions) % taps;
    const u32 image_channel = i / positions / taps;
    (void)channels;
    u32 in_spatial = 1u;
    for (u32 d = 0u; d < rank; d++) { in_spatial *= input[d]; }
    u32 offset = 0u;
    u32 scale = 1u;
    bool inside = true;
    for (u32 axis = rank; axis > 0u; axis--) {
        const u32 d = axis - 1u;
        const u32 o = p % output[d];
        p /= output[d];
        const u32 k = t % kernel[d];
        t /= kernel[d];
        // Unsigned wrap-around puts taps in the leading padding past the end too.
        const u32 at = o * strides[d] + k * dilations[d] - pads[d];
        const bool before = o * strides[d] + k * dilations[d] < pads[d];
        if (before || at >= input[d]) { inside = false; }
        offset += at * scale;
        scale *= input[d];
    }
    cols[i] = inside ? x[image_channel * in_spatial + offset] : 0.0f;
}
