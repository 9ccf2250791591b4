// C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with one thread per element of C: for products
// where m or n is tiny (matrix-vector), which a 32x32 tile would mostly waste.
// {{T}}: element word (accumulated in it); {{WRAP}} narrows integer results.
// params: as matmul.wgsl: [m, k, n, batch, rank, a_off, a_rs, a_cs, b_off, b_rs, b_cs,
//          c_off, c_rs, c_cs, batch_dims[rank], a_batch_strides[rank], b_batch_strides[rank],
//          c_batch_strides[rank]]
// Grid: one thread per element of C (batch * m * n).

@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> c: array<{{T}}>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let m = params[0];
    let k = params[1];
    let n = params[2];
    let rank = params[4];
    let i = thread_index(wid, lid, nwg);
    if (i >= params[3] * m * n) { return; }
    let col = i % n;
    let row = (i / n) % m;
    var rest = i / (n * m);
    var ao = params[5] + row * params[6];
    var bo = params[8] + col * params[10];
    var co = params[11] + row * params[12] + col * params[13];
    for (var axis = rank; axis > 0u; axis--) {
        let d = axis - 1u;
        let coord = rest % params[14u + d];
        rest = rest / params[14u + d];
        ao += coord * params[14u + rank + d];
        bo += coord * params[14u + 2u * rank + d];
        co += coord * params[14u + 3u * rank + d];
    }
    let a_cs = params[7];
    let b_rs = params[9];
    var acc = {{T}}(0);
    for (var kk = 0u; kk < k; kk++) {
        acc += a[ao + kk * a_cs] * b[bo + kk * b_rs];
    }
    c[co] = {{WRAP}}(acc);
}
