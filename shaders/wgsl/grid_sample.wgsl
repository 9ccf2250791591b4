// GridSample (ONNX, as tract computes it): x (N, C, D1..Dk, k = 2 or 3) read at the normalized
// coordinates of grid (N, O1..Ok, k; its last axis x, y, z: reverse spatial order); one thread
// per output element. Coordinates are denormalized (align_corners or not); a position outside
// the input's bounds is padded (border: clamped, reflection: reflected) before interpolating;
// taps outside the input read 0 (zeros), the edge (border) or their reflection. f32.
// params: [n, channels, k, mode (0 nearest, 1 bilinear, 2 bicubic),
//          padding (0 zeros, 1 border, 2 reflection), align_corners, positions (O1 * .. * Ok),
//          size[0], size[1], size[2] (the input's spatial extents; 1 past k)]

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> grid: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

fn extent(d: u32) -> u32 { return params[7u + d]; }

fn low() -> f32 {
    if (params[5] != 0u) { return 0.0; }
    return -0.5;
}

fn high(size: u32) -> f32 {
    if (params[5] != 0u) { return f32(size) - 1.0; }
    return f32(size) - 0.5;
}

fn reflect_into(v: f32, lo: f32, hi: f32) -> f32 {
    let range = hi - lo;
    if (range == 0.0) { return lo; }
    if (v < lo) {
        let d = lo - v;
        let n = i32(d / range);
        let r = d - f32(n) * range;
        if (n % 2 == 0) { return lo + r; }
        return hi - r;
    }
    if (v > hi) {
        let d = v - hi;
        let n = i32(d / range);
        let r = d - f32(n) * range;
        if (n % 2 == 0) { return hi - r; }
        return lo + r;
    }
    return v;
}

fn pad_coordinate(c: f32, size: u32) -> f32 {
    let lo = low();
    let hi = high(size);
    if (params[4] == 1u) { return clamp(c, 0.0, hi + lo); }
    if (params[4] == 2u) { return reflect_into(c, lo, hi); }
    return c;
}

// The value at integer coordinates (a0, a1, a2) of the plane starting at `base`.
fn pixel(base: u32, a0: i32, a1: i32, a2: i32) -> f32 {
    var at = array<i32, 3>(a0, a1, a2);
    var offset = 0u;
    for (var d = 0u; d < params[2]; d++) {
        let size = extent(d);
        var v = at[d];
        if (params[4] == 0u) {
            if (v < 0 || v >= i32(size)) { return 0.0; }
        } else if (params[4] == 1u) {
            v = clamp(v, 0, i32(size) - 1);
        } else {
            v = clamp(i32(reflect_into(f32(v), low(), high(size))), 0, i32(size) - 1);
        }
        offset = offset * size + u32(v);
    }
    return x[base + offset];
}

fn cubic(t: f32, tap: u32) -> f32 {
    let a = -0.75;
    if (tap == 0u) { let p = t + 1.0; return ((a * p - 5.0 * a) * p + 8.0 * a) * p - 4.0 * a; }
    if (tap == 1u) { return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0; }
    if (tap == 2u) { let m = 1.0 - t; return ((a + 2.0) * m - (a + 3.0)) * m * m + 1.0; }
    let m = 2.0 - t;
    return ((a * m - 5.0 * a) * m + 8.0 * a) * m - 4.0 * a;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(wid, lid, nwg);
    if (i >= params[0]) { return; }
    let k = params[2];
    let mode = params[3];
    let positions = params[6];
    let o = i % positions;
    let plane_ix = i / positions;
    let b = plane_ix / params[1];
    let base = plane_ix * extent(0u) * extent(1u) * extent(2u);
    let g = (b * positions + o) * k;
    var c = array<f32, 3>(0.0, 0.0, 0.0);
    var outside = false;
    for (var d = 0u; d < k; d++) {
        let v = grid[g + k - 1u - d];
        let size = f32(extent(d));
        if (params[5] != 0u) {
            c[d] = (v + 1.0) / 2.0 * (size - 1.0);
        } else {
            c[d] = ((v + 1.0) * size - 1.0) / 2.0;
        }
        if (mode == 0u) { c[d] = round(c[d]); }
        if (c[d] < low() || c[d] > high(extent(d))) { outside = true; }
    }
    if (outside) {
        for (var d = 0u; d < k; d++) { c[d] = pad_coordinate(c[d], extent(d)); }
    }
    if (mode == 0u) {
        y[i] = pixel(base, i32(c[0]), i32(c[1]), i32(c[2]));
        return;
    }
    if (mode == 1u) {
        var acc = 0.0;
        for (var corner = 0u; corner < (1u << k); corner++) {
            var weight = 1.0;
            var at = array<i32, 3>(0, 0, 0);
            for (var d = 0u; d < k; d++) {
                let lo = floor(c[d]);
                if (((corner >> d) & 1u) == 0u) {
                    at[d] = i32(lo);
                    weight *= (lo + 1.0) - c[d];
                } else {
                    at[d] = i32(lo) + 1;
                    weight *= c[d] - lo;
                }
            }
            acc += weight * pixel(base, at[0], at[1], at[2]);
        }
        y[i] = acc;
        return;
    }
    let x0 = i32(floor(c[0])) - 1;
    let y0 = i32(floor(c[1])) - 1;
    let dx = c[0] - f32(x0) - 1.0;
    let dy = c[1] - f32(y0) - 1.0;
    var acc = 0.0;
    for (var h = 0u; h < 4u; h++) {
        var row = 0.0;
        for (var w = 0u; w < 4u; w++) {
            row += cubic(dx, w) * pixel(base, x0 + i32(w), y0 + i32(h), 0);
        }
        acc += cubic(dy, h) * row;
    }
    y[i] = acc;
}
