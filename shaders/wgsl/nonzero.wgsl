// NonZero into a buffer sized for the largest result, in one workgroup (which keeps the
// elements' order): first the count, then the input 64 elements at a time, each non-zero
// element writing its coordinates at its rank among them (an inclusive scan of the 64 flags).
// The coordinates are laid out [rank, count] at the front of `coords` (i64 as i32 words); `counted`
// gets the count. {{T}}: the element word.
// params: [n, rank, dims[rank]]

@group(0) @binding(1) var<storage, read> x: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> coords: array<i32>;
@group(0) @binding(3) var<storage, read_write> counted: array<i32>;

var<workgroup> flags: array<u32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
    let n = params[0];
    let rank = params[1];
    var mine = 0u;
    for (var i = lid; i < n; i += WORKGROUP) {
        if (x[i] != {{T}}(0)) { mine += 1u; }
    }
    flags[lid] = mine;
    workgroupBarrier();
    for (var width = WORKGROUP / 2u; width > 0u; width = width / 2u) {
        if (lid < width) { flags[lid] += flags[lid + width]; }
        workgroupBarrier();
    }
    let total = flags[0];
    workgroupBarrier();
    if (lid == 0u) { counted[0] = i32(total); }

    var before = 0u;
    for (var start = 0u; start < n; start += WORKGROUP) {
        let i = start + lid;
        var flag = 0u;
        if (i < n && x[i] != {{T}}(0)) { flag = 1u; }
        flags[lid] = flag;
        workgroupBarrier();
        for (var offset = 1u; offset < WORKGROUP; offset = offset * 2u) {
            var add = 0u;
            if (lid >= offset) { add = flags[lid - offset]; }
            workgroupBarrier();
            flags[lid] += add;
            workgroupBarrier();
        }
        if (flag == 1u) {
            let at = before + flags[lid] - 1u;
            var rest = i;
            for (var axis = rank; axis > 0u; axis--) {
                let dim = params[1u + axis];
                coords[(axis - 1u) * total + at] = i32(rest % dim);
                rest = rest / dim;
            }
        }
        before += flags[WORKGROUP - 1u];
        workgroupBarrier();
    }
}
