// Reduction of x over some axes: out[g] = op over the elements of row g. {{T}}: input word (the
// accumulator too; f32 for floats); {{OUT}}: output word; {{OP}}: 0 Sum, 1 Prod, 2 Max, 3 Min,
// 4 MeanOfSquares, 5 ArgMax, 6 ArgMin, 7 All, 8 Any; {{FLOAT}}: whether {{T}} is f32 (NaN
// rules); {{WRAP}} narrows integer results.
// A row's elements are spread over `threads_per_row` lanes (a power of two <= 64; 64 / it rows
// per workgroup), then combined in workgroup memory. Workgroups loop over the rows' blocks.
// params: [rows, row_size, threads_per_row, init (the accumulator's start as bits: the op's
//          identity, or the reference's value for an empty row) or, for ArgMax / ArgMin, `last`,
//          kept_rank, reduced_rank, kept_dims[kept_rank], kept_strides[kept_rank],
//          reduced_dims[reduced_rank], reduced_strides[reduced_rank]]
// Element j of row g is x[row_base(g) + row_offset(j)], both row-major over their dims.

@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{OUT}}>;

const OP: u32 = {{OP}};
const FLOAT: bool = {{FLOAT}};
const IS_ARG: bool = OP == 5u || OP == 6u;
const GROUP_SIZE: u32 = 64u;
// The index of a lane that saw no element (it loses every comparison).
const NONE: u32 = 0xffffffffu;

var<workgroup> shared_value: array<{{T}}, 64>;
var<workgroup> shared_index: array<u32, 64>;

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

fn is_nan(v: {{T}}) -> bool {
    return FLOAT && (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// What an element contributes: its square for MeanOfSquares, a 0 / 1 flag for All / Any.
fn contribution(v: {{T}}) -> {{T}} {
    if (OP == 4u) { return v * v; }
    if (OP == 7u || OP == 8u) { return select({{T}}(0), {{T}}(1), v != {{T}}(0)); }
    return v;
}

// Folds `b` into `a` (element contributions and partial results alike).
fn combine(a: {{T}}, b: {{T}}) -> {{T}} {
    switch (OP) {
        case 1u: { return a * b; }
        // A NaN wins and then stays: `b > NaN` is false.
        case 2u: { return select(a, b, b > a || is_nan(b)); }
        case 3u: { return select(a, b, b < a || is_nan(b)); }
        case 7u: { return min(a, b); }
        case 8u: { return max(a, b); }
        default: { return a + b; }
    }
}

// Whether (v, vi) beats (b, bi) for ArgMax / ArgMin: the first NaN wins; otherwise the larger
// (smaller) value; ties go to the lower index, or the higher one with `last` (params[3]).
fn arg_beats(v: {{T}}, vi: u32, b: {{T}}, bi: u32) -> bool {
    if (vi == NONE) { return false; }
    if (bi == NONE) { return true; }
    let v_nan = is_nan(v);
    let b_nan = is_nan(b);
    if (v_nan || b_nan) { return v_nan && (!b_nan || vi < bi); }
    if (v == b) { return select((vi < bi), (vi > bi), params[3] != 0u); }
    return select((v < b), (v > b), OP == 5u);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let rows = params[0];
    let size = params[1];
    let lanes = params[2];
    let lane = lid % lanes;
    let per_group = GROUP_SIZE / lanes;
    let blocks = (rows + per_group - 1u) / per_group;
    for (var block = wid.y * nwg.x + wid.x; block < blocks; block += nwg.x * nwg.y) {
        let g = block * per_group + lid / lanes;
        var acc = bitcast<{{T}}>(params[3]);
        var index = NONE;
        if (g < rows) {
            let base = row_base(g);
            for (var j = lane; j < size; j += lanes) {
                let v = x[base + row_offset(j)];
                if (IS_ARG) {
                    if (arg_beats(v, j, acc, index)) {
                        acc = v;
                        index = j;
                    }
                } else {
                    acc = combine(acc, contribution(v));
                }
            }
        }
        shared_value[lid] = acc;
        shared_index[lid] = index;
        workgroupBarrier();
        for (var step = lanes / 2u; step > 0u; step = step / 2u) {
            if (lane < step) {
                let other = shared_value[lid + step];
                if (IS_ARG) {
                    let other_index = shared_index[lid + step];
                    if (arg_beats(other, other_index, shared_value[lid], shared_index[lid])) {
                        shared_value[lid] = other;
                        shared_index[lid] = other_index;
                    }
                } else {
                    shared_value[lid] = combine(shared_value[lid], other);
                }
            }
            workgroupBarrier();
        }
        if (lane == 0u && g < rows) {
            let value = shared_value[lid];
            if (IS_ARG) {
                let found = shared_index[lid];
                out[g] = {{OUT}}(select(found, 0u, found == NONE));
            } else if (OP == 4u) {
                out[g] = {{OUT}}(f32(value) / f32(size));
            } else {
                out[g] = {{WRAP}}({{OUT}}(value));
            }
        }
        workgroupBarrier();
    }
}
