// Padding with a constant, a reflection (mirror without repeating the edge) or the edge
// repeated. Words of any dtype, moved as u32; the constant is given as the dtype's word bits.
// params: [n, rank, mode (0 constant, 1 reflect, 2 edge), fill (word bits),
//          out_shape[rank], in_shape[rank], in_strides[rank], pads_before[rank]]
struct Kernel {
    const u32* params;
    u32* x;
    u32* y;


    // The input coordinate along an axis of `dim` for output coordinate `o` (`before` pads
    // first), or 0xffffffff for the constant. Unsigned arithmetic only: below the input, the
    // distance is `before - o`.
    __device__ u32 source(u32 o, u32 dim, u32 before, u32 mode) {
        const auto below = o < before;
        const auto c = o - before;
        if (!below && c < dim) { return c; }
        if (mode == 0u) { return 0xffffffffu; }
        if (mode == 2u) { return select(dim - 1u, 0u, below); }
        if (dim < 2u) { return 0u; }
        // Reflect: the pattern repeats every 2 (dim - 1).
        const auto period = 2u * (dim - 1u);
        u32 m{};
        if (below) {
            m = (period - (before - o) % period) % period;
        } else {
            m = c % period;
        }
        return select(period - m, m, m < dim);
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const auto rank = params[1];
        const auto mode = params[2];
        auto rest = i;
        auto src = 0u;
        for (auto axis = rank; axis > 0u; axis--) {
            const auto d = axis - 1u;
            const auto dim = params[4u + d];
            const auto c = source(rest % dim, params[4u + rank + d], params[4u + 3u * rank + d], mode);
            rest = rest / dim;
            if (c == 0xffffffffu) {
                y[i] = params[3];
                return;
            }
            src += c * params[4u + 2u * rank + d];
        }
        y[i] = x[src];
    }
};

extern "C" __global__ void tessera_main(const u32* params, u32* x, u32* y) {
    Kernel kernel{params, x, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
