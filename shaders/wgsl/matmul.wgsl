// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n], tiled: an 8x8 workgroup computes a 32x32 tile of
// C, each thread a 4x4 block (rows ly + 8i, columns lx + 8j), stepping through k 16 at a time
// with both operand tiles staged in workgroup memory. 16 products per 8 tile reads keeps
// software drivers (lavapipe) and GPUs alike busy with arithmetic rather than loads.
// {{T}}: element word (accumulated in it: f32, or wrapping i32 / u32); {{WRAP}} narrows results.
// Every operand is addressed through its layout: element (b, r, c) of X is at
// X_off + sum_axis coord_axis * X_batch_stride_axis + r * X_rs + c * X_cs.
// params: [m, k, n, batch (count), rank (batch axes),
//          a_off, a_rs, a_cs, b_off, b_rs, b_cs, c_off, c_rs, c_cs,
//          batch_dims[rank], a_batch_strides[rank], b_batch_strides[rank], c_batch_strides[rank]]
// Grid: (ceil(n / 32), ceil(m / 32), batch), each capped at 65535: workgroups loop over the rest.

@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{T}}>;

const TILE: u32 = 32u;
const THREADS: u32 = 64u;
const DEPTH: u32 = 16u;

// A tile: [TILE rows][DEPTH]; B tile: [DEPTH][TILE columns].
var<workgroup> tile_a: array<{{T}}, 512>;
var<workgroup> tile_b: array<{{T}}, 512>;

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
    let m = params[0];
    let k = params[1];
    let n = params[2];
    let batch = params[3];
    let rank = params[4];
    let a_rs = params[6];
    let a_cs = params[7];
    let b_rs = params[9];
    let b_cs = params[10];
    let c_rs = params[12];
    let c_cs = params[13];
    let tiles_m = (m + TILE - 1u) / TILE;
    let tiles_n = (n + TILE - 1u) / TILE;
    let zero = {{T}}(0);
    let lx = local.x;
    let ly = local.y;
    for (var bz = wid.z; bz < batch; bz += nwg.z) {
        var ao = params[5];
        var bo = params[8];
        var co = params[11];
        var rest = bz;
        for (var axis = rank; axis > 0u; axis--) {
            let d = axis - 1u;
            let coord = rest % params[14u + d];
            rest = rest / params[14u + d];
            ao += coord * params[14u + rank + d];
            bo += coord * params[14u + 2u * rank + d];
            co += coord * params[14u + 3u * rank + d];
        }
        for (var ty = wid.y; ty < tiles_m; ty += nwg.y) {
            for (var tx = wid.x; tx < tiles_n; tx += nwg.x) {
                let row0 = ty * TILE;
                let col0 = tx * TILE;
                // acc_i: row ly + 8i, columns lx, lx + 8, lx + 16, lx + 24.
                var acc0 = vec4<{{T}}>(zero);
                var acc1 = vec4<{{T}}>(zero);
                var acc2 = vec4<{{T}}>(zero);
                var acc3 = vec4<{{T}}>(zero);
                for (var k0 = 0u; k0 < k; k0 += DEPTH) {
                    // 512 elements of each tile, eight per thread; consecutive threads read
                    // consecutive k of A and consecutive columns of B.
                    for (var e = lid; e < 512u; e += THREADS) {
                        let r = row0 + e / DEPTH;
                        let ka = k0 + e % DEPTH;
                        var va = zero;
                        if (r < m && ka < k) {
                            va = a[ao + r * a_rs + ka * a_cs];
                        }
                        tile_a[e] = va;
                        let kb = k0 + e / TILE;
                        let col = col0 + e % TILE;
                        var vb = zero;
                        if (kb < k && col < n) {
                            vb = b[bo + kb * b_rs + col * b_cs];
                        }
                        tile_b[e] = vb;
                    }
                    workgroupBarrier();
                    for (var kk = 0u; kk < DEPTH; kk++) {
                        let at = kk * TILE + lx;
                        let bv = vec4<{{T}}>(tile_b[at], tile_b[at + 8u], tile_b[at + 16u],
                            tile_b[at + 24u]);
                        acc0 += tile_a[ly * DEPTH + kk] * bv;
                        acc1 += tile_a[(ly + 8u) * DEPTH + kk] * bv;
                        acc2 += tile_a[(ly + 16u) * DEPTH + kk] * bv;
                        acc3 += tile_a[(ly + 24u) * DEPTH + kk] * bv;
                    }
                    workgroupBarrier();
                }
                store(co, row0 + ly, col0 + lx, acc0, m, n, c_rs, c_cs);
                store(co, row0 + ly + 8u, col0 + lx, acc1, m, n, c_rs, c_cs);
                store(co, row0 + ly + 16u, col0 + lx, acc2, m, n, c_rs, c_cs);
                store(co, row0 + ly + 24u, col0 + lx, acc3, m, n, c_rs, c_cs);
            }
        }
    }
}

// Writes one row of a thread's block: columns col, col + 8, col + 16, col + 24.
fn store(co: u32, row: u32, col: u32, v: vec4<{{T}}>, m: u32, n: u32, c_rs: u32, c_cs: u32) {
    if (row >= m) { return; }
    let at = co + row * c_rs;
    for (var j = 0u; j < 4u; j++) {
        let c = col + 8u * j;
        if (c < n) { out[at + c * c_cs] = {{WRAP}}(v[j]); }
    }
}
