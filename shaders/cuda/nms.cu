// NonMaxSuppression as tract computes it, in one workgroup (which keeps the selection order):
// per batch and class, the best remaining box (highest score, then lowest index) is taken and
// every remaining box whose IoU with it exceeds the threshold is removed, until none remains or
// the limit is reached. Selected (batch, class, box) rows go to `selected` in order (i64 as i32
// words); `counted` gets their number. `removed` is a work buffer of one word per box (left zeroed).
// params: [batches, classes, boxes, center_point_box, has_score_threshold]
// arguments: [max_output_boxes_per_class (0: no limit), iou_threshold, score_threshold]
__shared__ f32 best_score[64];
__shared__ u32 best_index[64];

struct Extent { f32 x_min, x_max, y_min, y_max; };

struct Kernel {
    const u32* params;
    f32* boxes;
    f32* scores;
    f32* arguments;
    i32* selected;
    i32* counted;
    u32* removed;

    static constexpr u32 GROUP_SIZE = 64u;
    static constexpr u32 NONE = 0xffffffffu;

    // Box i's extent, as tract reads it.
    __device__ Extent extent(u32 i, bool center) {
        const f32 b0 = boxes[4u * i], b1 = boxes[4u * i + 1u];
        const f32 b2 = boxes[4u * i + 2u], b3 = boxes[4u * i + 3u];
        if (center) {
            const f32 half_width = b2 / 2.0f, half_height = b3 / 2.0f;
            return Extent{b0 - half_width, b0 + half_width, b1 - half_height, b1 + half_height};
        }
        return Extent{fminf(b1, b3), fmaxf(b1, b3), fminf(b0, b2), fmaxf(b0, b2)};
    }

    // tract's should_suppress_by_iou (no contraction into FMA: tract rounds each product).
    __device__ bool suppresses(Extent a, Extent b, f32 threshold) {
        const f32 y_min = fmaxf(a.y_min, b.y_min), y_max = fminf(a.y_max, b.y_max);
        if (y_max <= y_min) { return false; }
        const f32 x_min = fmaxf(a.x_min, b.x_min), x_max = fminf(a.x_max, b.x_max);
        if (x_max <= x_min) { return false; }
        const f32 intersection = __fmul_rn(x_max - x_min, y_max - y_min);
        if (signbit(intersection)) { return false; }
        const f32 area_a = __fmul_rn(a.x_max - a.x_min, a.y_max - a.y_min);
        const f32 area_b = __fmul_rn(b.x_max - b.x_min, b.y_max - b.y_min);
        const f32 union_area = area_a + area_b - intersection;
        if (signbit(area_a) || signbit(area_b) || signbit(union_area)) { return false; }
        return __fdiv_rn(intersection, union_area) > threshold;
    }

    __device__ void main_body(u32 lid) {
        const auto batches = params[0];
        const auto classes = params[1];
        const auto n = params[2];
        const bool center = params[3] != 0u;
        const bool has_score_threshold = params[4] != 0u;
        const f32 max_output = arguments[0];
        auto limit = n;
        if (max_output != 0.0f) { limit = (u32)fminf(fmaxf(max_output, 0.0f), (f32)n); }
        const f32 iou_threshold = arguments[1];
        const f32 score_threshold = arguments[2];
        auto written = 0u;
        for (auto bc = 0u; bc < batches * classes; bc++) {
            const auto batch = bc / classes;
            const auto class_scores = bc * n;
            const auto class_boxes = batch * n;
            for (auto i = lid; i < n; i += GROUP_SIZE) {
                const bool out = has_score_threshold && !(scores[class_scores + i] > score_threshold);
                removed[i] = out ? 1u : 0u;
            }
            __syncthreads();
            for (auto taken = 0u; taken < limit; taken++) {
                f32 score = 0.0f;
                auto index = NONE;
                for (auto i = lid; i < n; i += GROUP_SIZE) {
                    const f32 s = scores[class_scores + i];
                    if (removed[i] == 0u && (index == NONE || s > score)) {
                        score = s;
                        index = i;
                    }
                }
                best_score[lid] = score;
                best_index[lid] = index;
                __syncthreads();
                for (auto width = GROUP_SIZE / 2u; width > 0u; width = width / 2u) {
                    if (lid < width) {
                        const auto other = best_index[lid + width];
                        const f32 other_score = best_score[lid + width];
                        const auto mine = best_index[lid];
                        const bool better = other_score > best_score[lid]
                            || (other_score == best_score[lid] && other < mine);
                        if (other != NONE && (mine == NONE || better)) {
                            best_score[lid] = other_score;
                            best_index[lid] = other;
                        }
                    }
                    __syncthreads();
                }
                const auto winner = best_index[0];
                __syncthreads();
                if (winner == NONE) { break; }
                if (lid == 0u) {
                    selected[3u * written] = (i32)batch;
                    selected[3u * written + 1u] = (i32)(bc % classes);
                    selected[3u * written + 2u] = (i32)winner;
                }
                written += 1u;
                const Extent chosen = extent(class_boxes + winner, center);
                for (auto i = lid; i < n; i += GROUP_SIZE) {
                    if (removed[i] == 0u
                        && (i == winner || suppresses(extent(class_boxes + i, center), chosen, iou_threshold))) {
                        removed[i] = 1u;
                    }
                }
                __syncthreads();
            }
        }
        // The work buffer left zeroed: every run's outputs are the same for the same inputs.
        for (auto i = lid; i < n; i += GROUP_SIZE) { removed[i] = 0u; }
        if (lid == 0u) { counted[0] = (i32)written; }
    }
};

extern "C" __global__ void tessera_main(const u32* params, f32* boxes, f32* scores, f32* arguments,
                                        i32* selected, i32* counted, u32* removed) {
    Kernel kernel{params, boxes, scores, arguments, selected, counted, removed};
    kernel.main_body(threadIdx.x);
}
