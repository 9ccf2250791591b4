// NonMaxSuppression as tract computes it, in one workgroup (which keeps the selection order):
// per batch and class, the best remaining box (highest score, then lowest index) is taken and
// every remaining box whose IoU with it exceeds the threshold is removed, until none remains or
// the limit is reached. Selected (batch, class, box) rows go to `selected` in order (i64 as i32
// words); `counted` gets their number. `removed` is a work buffer of one word per box (left zeroed).
// params: [batches, classes, boxes, center_point_box, has_score_threshold]
// arguments: [max_output_boxes_per_class (0: no limit), iou_threshold, score_threshold]

@group(0) @binding(1) var<storage, read> boxes: array<f32>;
@group(0) @binding(2) var<storage, read> scores: array<f32>;
@group(0) @binding(3) var<storage, read> arguments: array<f32>;
@group(0) @binding(4) var<storage, read_write> selected: array<i32>;
@group(0) @binding(5) var<storage, read_write> counted: array<i32>;
@group(0) @binding(6) var<storage, read_write> removed: array<u32>;

const NONE: u32 = 0xffffffffu;

var<workgroup> best_score: array<f32, 64>;
var<workgroup> best_index: array<u32, 64>;

// Box i's (x_min, x_max, y_min, y_max), as tract reads it.
fn extent(i: u32, center: bool) -> vec4<f32> {
    let b = vec4<f32>(boxes[4u * i], boxes[4u * i + 1u], boxes[4u * i + 2u], boxes[4u * i + 3u]);
    if (center) {
        let half_size = vec2<f32>(b.z / 2.0, b.w / 2.0);
        return vec4<f32>(b.x - half_size.x, b.x + half_size.x, b.y - half_size.y, b.y + half_size.y);
    }
    return vec4<f32>(min(b.y, b.w), max(b.y, b.w), min(b.x, b.z), max(b.x, b.z));
}

fn negative(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x80000000u) != 0u;
}

// tract's should_suppress_by_iou.
fn suppresses(a: vec4<f32>, b: vec4<f32>, threshold: f32) -> bool {
    let y_min = max(a.z, b.z);
    let y_max = min(a.w, b.w);
    if (y_max <= y_min) { return false; }
    let x_min = max(a.x, b.x);
    let x_max = min(a.y, b.y);
    if (x_max <= x_min) { return false; }
    let intersection = (x_max - x_min) * (y_max - y_min);
    if (negative(intersection)) { return false; }
    let area_a = (a.y - a.x) * (a.w - a.z);
    let area_b = (b.y - b.x) * (b.w - b.z);
    let union_area = area_a + area_b - intersection;
    if (negative(area_a) || negative(area_b) || negative(union_area)) { return false; }
    return intersection / union_area > threshold;
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
    let batches = params[0];
    let classes = params[1];
    let n = params[2];
    let center = params[3] != 0u;
    let has_score_threshold = params[4] != 0u;
    let max_output = arguments[0];
    var limit = n;
    if (max_output != 0.0) { limit = u32(clamp(max_output, 0.0, f32(n))); }
    let iou_threshold = arguments[1];
    let score_threshold = arguments[2];
    var written = 0u;
    for (var bc = 0u; bc < batches * classes; bc++) {
        let batch = bc / classes;
        let class_scores = bc * n;
        let class_boxes = batch * n;
        for (var i = lid; i < n; i += WORKGROUP) {
            let out = has_score_threshold && !(scores[class_scores + i] > score_threshold);
            removed[i] = select(0u, 1u, out);
        }
        storageBarrier();
        for (var taken = 0u; taken < limit; taken++) {
            var score = 0.0;
            var index = NONE;
            for (var i = lid; i < n; i += WORKGROUP) {
                let s = scores[class_scores + i];
                if (removed[i] == 0u && (index == NONE || s > score)) {
                    score = s;
                    index = i;
                }
            }
            best_score[lid] = score;
            best_index[lid] = index;
            workgroupBarrier();
            for (var width = WORKGROUP / 2u; width > 0u; width = width / 2u) {
                if (lid < width) {
                    let other = best_index[lid + width];
                    let other_score = best_score[lid + width];
                    let mine = best_index[lid];
                    let better = other_score > best_score[lid]
                        || (other_score == best_score[lid] && other < mine);
                    if (other != NONE && (mine == NONE || better)) {
                        best_score[lid] = other_score;
                        best_index[lid] = other;
                    }
                }
                workgroupBarrier();
            }
            let winner = workgroupUniformLoad(&best_index[0]);
            if (winner == NONE) { break; }
            if (lid == 0u) {
                selected[3u * written] = i32(batch);
                selected[3u * written + 1u] = i32(bc % classes);
                selected[3u * written + 2u] = i32(winner);
            }
            written += 1u;
            let chosen = extent(class_boxes + winner, center);
            for (var i = lid; i < n; i += WORKGROUP) {
                if (removed[i] == 0u
                    && (i == winner || suppresses(extent(class_boxes + i, center), chosen, iou_threshold))) {
                    removed[i] = 1u;
                }
            }
            storageBarrier();
        }
    }
    // The work buffer left zeroed: every run's outputs are the same for the same inputs.
    for (var i = lid; i < n; i += WORKGROUP) { removed[i] = 0u; }
    if (lid == 0u) { counted[0] = i32(written); }
}
