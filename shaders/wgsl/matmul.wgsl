// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n], tiled: a 16x16 workgroup computes a 32x32 tile of
// C (each thread a 2x2 block: rows ly and ly + 16, columns lx and lx + 16), stepping through k
// 16 at a time with both operand tiles staged in workgroup memory.
// {{T}}: element word (accumulated in it: f32, or wrapping i32 / u32); {{WRAP}} narrows results.
// Every operand is addressed through its layout: element (b, r, c) of X is at
// X_off + sum_axis coord_axis * X_batch_stride_axis + r * X_rs + c * X_cs.
// params: [m, k, n, batch (count), rank (batch axes),
//          a_off, a_rs, a_cs, b_off, b_rs, b_cs, c_off, c_rs, c_cs,
//          batch_dims[rank], a_batch_strides[rank], b_batch_strides[rank], c_batch_strides[rank]]
// Grid: (ceil(n / 32), ceil(m / 32), batch), each capped at 65535: workgroups loop over the rest.

@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> c: array<{{T}}>;

const TILE: u32 = 32u;
const HALF: u32 = 16u;
const DEPTH: u32 = 16u;

// A tile: [TILE rows][DEPTH]; B tile: [DEPTH][TILE columns].
var<workgroup> tile_a: array<{{T}}, 512>;
var<workgroup> tile_b: array<{{T}}, 512>;

@compute @workgroup_size(16, 16)
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
                var acc00 = zero;
                var acc01 = zero;
                var acc10 = zero;
                var acc11 = zero;
                for (var k0 = 0u; k0 < k; k0 += DEPTH) {
                    // 512 elements of each tile, two per thread; consecutive threads read
                    // consecutive k of A and consecutive columns of B.
                    for (var e = lid; e < 512u; e += 256u) {
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
                        let a0 = tile_a[local.y * DEPTH + kk];
                        let a1 = tile_a[(local.y + HALF) * DEPTH + kk];
                        let b0 = tile_b[kk * TILE + local.x];
                        let b1 = tile_b[kk * TILE + local.x + HALF];
                        acc00 += a0 * b0;
                        acc01 += a0 * b1;
                        acc10 += a1 * b0;
                        acc11 += a1 * b1;
                    }
                    workgroupBarrier();
                }
                let r0 = row0 + local.y;
                let r1 = r0 + HALF;
                let c0 = col0 + local.x;
                let c1 = c0 + HALF;
                if (r0 < m && c0 < n) { c[co + r0 * c_rs + c0 * c_cs] = {{WRAP}}(acc00); }
                if (r0 < m && c1 < n) { c[co + r0 * c_rs + c1 * c_cs] = {{WRAP}}(acc01); }
                if (r1 < m && c0 < n) { c[co + r1 * c_rs + c0 * c_cs] = {{WRAP}}(acc10); }
                if (r1 < m && c1 < n) { c[co + r1 * c_rs + c1 * c_cs] = {{WRAP}}(acc11); }
            }
        }
    }
}
