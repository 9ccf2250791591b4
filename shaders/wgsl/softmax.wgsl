// (Log-)softmax of f32 x over rows: y = exp(x - max) / sum(exp(x - max)), or with `log`
// x - max - ln(sum(exp(x - max))). The max ignores NaNs, as the reference does.
// A row's elements are spread over `threads_per_row` lanes (a power of two <= 64; 64 / it rows
// per workgroup), combined in workgroup memory. Workgroups loop over the rows' blocks.
// params: [rows, row_size, threads_per_row, log (0 / 1), kept_rank, reduced_rank,
//          kept_dims[kept_rank], kept_strides[kept_rank], reduced_dims[reduced_rank],
//          reduced_strides[reduced_rank]]
// Element j of row g is at row_base(g) + row_offset(j) in x and y, both row-major over their dims.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

const GROUP_SIZE: u32 = 64u;

var<workgroup> shared_value: array<f32, 64>;

fn row_base(g: u32) -> u32 {
    let rank = params[4];
    var rest = g;
    var offset = 0u;
    for (var axis = rank; axis > 0u; axis--) {
        let d = axis - 1u;
        let dim = params[6u + d];
        offset += (rest % dim) * params[6u + rank + d];
        rest = rest / dim;
    }
    return offset;
}

fn row_offset(j: u32) -> u32 {
    let rank = params[5];
    let at = 6u + 2u * params[4];
    if (rank == 1u) { return j * params[at + 1u]; }
    var rest = j;
    var offset = 0u;
    for (var axis = rank; axis > 0u; axis--) {
        let d = axis - 1u;
        let dim = params[at + d];
        offset += (rest % dim) * params[at + rank + d];
        rest = rest / dim;
    }
    return offset;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = params[0];
    let size = params[1];
    let lanes = params[2];
    let log_softmax = params[3] != 0u;
    let lane = lid % lanes;
    let first = lid - lane;
    let per_group = GROUP_SIZE / lanes;
    let blocks = (rows + per_group - 1u) / per_group;
    for (var block = wid.y * nwg.x + wid.x; block < blocks; block += nwg.x * nwg.y) {
        let g = block * per_group + lid / lanes;
        let live = g < rows;
        var base = 0u;
        if (live) { base = row_base(g); }

        var row_max = f32_from_bits(0xff800000u);
        if (live) {
            for (var j = lane; j < size; j += lanes) {
                let v = x[base + row_offset(j)];
                if (v > row_max) { row_max = v; }
            }
        }
        shared_value[lid] = row_max;
        workgroupBarrier();
        for (var step = lanes / 2u; step > 0u; step = step / 2u) {
            if (lane < step && shared_value[lid + step] > shared_value[lid]) {
                shared_value[lid] = shared_value[lid + step];
            }
            workgroupBarrier();
        }
        row_max = shared_value[first];
        workgroupBarrier();

        var sum = 0.0;
        if (live) {
            for (var j = lane; j < size; j += lanes) {
                sum += exp(x[base + row_offset(j)] - row_max);
            }
        }
        shared_value[lid] = sum;
        workgroupBarrier();
        for (var step = lanes / 2u; step > 0u; step = step / 2u) {
            if (lane < step) {
                shared_value[lid] += shared_value[lid + step];
            }
            workgroupBarrier();
        }
        sum = shared_value[first];
        workgroupBarrier();

        if (live) {
            let log_sum = log(sum);
            for (var j = lane; j < size; j += lanes) {
                let at = base + row_offset(j);
                let shifted = x[at] - row_max;
                y[at] = select(exp(shifted) / sum, shifted - log_sum, log_softmax);
            }
        }
    }
}
