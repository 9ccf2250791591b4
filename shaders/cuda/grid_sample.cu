// GridSample (ONNX, as tract computes it): x (N, C, D1..Dk, k = 2 or 3) read at the normalized
// coordinates of grid (N, O1..Ok, k; its last axis x, y, z: reverse spatial order); one thread
// per output element. Coordinates are denormalized (align_corners or not); a position outside
// the input's bounds is padded (border: clamped, reflection: reflected) before interpolating;
// taps outside the input read 0 (zeros), the edge (border) or their reflection. f32.
// params: [n, channels, k, mode (0 nearest, 1 bilinear, 2 bicubic),
//          padding (0 zeros, 1 border, 2 reflection), align_corners, positions (O1 * .. * Ok),
//          size[0], size[1], size[2] (the input's spatial extents; 1 past k)]
struct Kernel {
    const u32* params;
    f32* x;
    f32* grid;
    f32* y;

    __device__ u32 extent(u32 d) { return params[7u + d]; }

    __device__ f32 low() { return params[5] != 0u ? 0.0f : -0.5f; }

    __device__ f32 high(u32 size) {
        return params[5] != 0u ? f32(size) - 1.0f : f32(size) - 0.5f;
    }

    __device__ f32 reflect_into(f32 v, f32 lo, f32 hi) {
        const f32 range = hi - lo;
        if (range == 0.0f) { return lo; }
        if (v < lo) {
            const f32 d = lo - v;
            const int n = int(d / range);
            const f32 r = d - f32(n) * range;
            return n % 2 == 0 ? lo + r : hi - r;
        }
        if (v > hi) {
            const f32 d = v - hi;
            const int n = int(d / range);
            const f32 r = d - f32(n) * range;
            return n % 2 == 0 ? hi - r : lo + r;
        }
        return v;
    }

    __device__ f32 pad_coordinate(f32 c, u32 size) {
        const f32 lo = low();
        const f32 hi = high(size);
        if (params[4] == 1u) { return fminf(fmaxf(c, 0.0f), hi + lo); }
        if (params[4] == 2u) { return reflect_into(c, lo, hi); }
        return c;
    }

    // The value at integer coordinates (a0, a1, a2) of the plane starting at `base`.
    __device__ f32 pixel(u32 base, int a0, int a1, int a2) {
        const int at[3] = {a0, a1, a2};
        u32 offset = 0u;
        for (u32 d = 0u; d < params[2]; d++) {
            const u32 size = extent(d);
            int v = at[d];
            if (params[4] == 0u) {
                if (v < 0 || v >= int(size)) { return 0.0f; }
            } else if (params[4] == 1u) {
                v = min(max(v, 0), int(size) - 1);
            } else {
                v = min(max(int(reflect_into(f32(v), low(), high(size))), 0), int(size) - 1);
            }
            offset = offset * size + u32(v);
        }
        return x[base + offset];
    }

    __device__ f32 cubic(f32 t, u32 tap) {
        const f32 a = -0.75f;
        if (tap == 0u) { const f32 p = t + 1.0f; return ((a * p - 5.0f * a) * p + 8.0f * a) * p - 4.0f * a; }
        if (tap == 1u) { return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f; }
        if (tap == 2u) { const f32 m = 1.0f - t; return ((a + 2.0f) * m - (a + 3.0f)) * m * m + 1.0f; }
        const f32 m = 2.0f - t;
        return ((a * m - 5.0f * a) * m + 8.0f * a) * m - 4.0f * a;
    }

    __device__ void main_body(uint3 wid, u32 lid, uint3 nwg) {
        const auto i = thread_index(wid, lid, nwg);
        if (i >= params[0]) { return; }
        const u32 k = params[2];
        const u32 mode = params[3];
        const u32 positions = params[6];
        const u32 o = i % positions;
        const u32 plane_ix = i / positions;
        const u32 b = plane_ix / params[1];
        const u32 base = plane_ix * extent(0u) * extent(1u) * extent(2u);
        const u32 g = (b * positions + o) * k;
        f32 c[3] = {0.0f, 0.0f, 0.0f};
        bool outside = false;
        for (u32 d = 0u; d < k; d++) {
            const f32 v = grid[g + k - 1u - d];
            const f32 size = f32(extent(d));
            c[d] = params[5] != 0u ? (v + 1.0f) / 2.0f * (size - 1.0f)
                                   : ((v + 1.0f) * size - 1.0f) / 2.0f;
            if (mode == 0u) { c[d] = rintf(c[d]); }
            if (c[d] < low() || c[d] > high(extent(d))) { outside = true; }
        }
        if (outside) {
            for (u32 d = 0u; d < k; d++) { c[d] = pad_coordinate(c[d], extent(d)); }
        }
        if (mode == 0u) {
            y[i] = pixel(base, int(c[0]), int(c[1]), int(c[2]));
            return;
        }
        if (mode == 1u) {
            f32 acc = 0.0f;
            for (u32 corner = 0u; corner < (1u << k); corner++) {
                f32 weight = 1.0f;
                int at[3] = {0, 0, 0};
                for (u32 d = 0u; d < k; d++) {
                    const f32 lo = floorf(c[d]);
                    if (((corner >> d) & 1u) == 0u) {
                        at[d] = int(lo);
                        weight *= (lo + 1.0f) - c[d];
                    } else {
                        at[d] = int(lo) + 1;
                        weight *= c[d] - lo;
                    }
                }
                acc += weight * pixel(base, at[0], at[1], at[2]);
            }
            y[i] = acc;
            return;
        }
        const int x0 = int(floorf(c[0])) - 1;
        const int y0 = int(floorf(c[1])) - 1;
        const f32 dx = c[0] - f32(x0) - 1.0f;
        const f32 dy = c[1] - f32(y0) - 1.0f;
        f32 acc = 0.0f;
        for (u32 h = 0u; h < 4u; h++) {
            f32 row = 0.0f;
            for (u32 w = 0u; w < 4u; w++) {
                row += cubic(dx, w) * pixel(base, x0 + int(w), y0 + int(h), 0);
            }
            acc += cubic(dy, h) * row;
        }
        y[i] = acc;
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* x, f32* grid, f32* y) {
    Kernel kernel{params, x, grid, y};
    kernel.main_body(blockIdx, threadIdx.x, gridDim);
}
