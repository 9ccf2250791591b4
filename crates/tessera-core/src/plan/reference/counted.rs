//! Ops whose result size depends on values, as a staged plan's first stage computes them
//! (`crate::lower::stages`): the result at the front of a buffer sized for the largest one,
//! the rest zero, and the count.

use super::{Arg, fail};
use crate::{Result, TensorData};

/// The coordinates of the non-zero elements (row-major order) as `[rank, count]` at the front
/// of a `[rank, len]` buffer, and `count`.
pub(super) fn non_zero(x: Arg) -> Result<Vec<TensorData>> {
    let values = x.data.to_f64_vec();
    let (rank, len) = (x.shape.len(), values.len());
    let found: Vec<usize> = (values.iter().enumerate())
        .filter(|(_, v)| **v != 0.0)
        .map(|(i, _)| i)
        .collect();
    let count = found.len();
    let mut coords = vec![0i64; rank * len];
    for (k, &flat) in found.iter().enumerate() {
        let mut rest = flat;
        for (axis, &dim) in x.shape.iter().enumerate().rev() {
            coords[axis * count + k] = (rest % dim.max(1)) as i64;
            rest /= dim.max(1);
        }
    }
    Ok(vec![
        TensorData::I64(coords),
        TensorData::I64(vec![count as i64]),
    ])
}

/// A box's extent: `(x_min, x_max, y_min, y_max)`, as tract reads it.
fn extent(b: &[f32], center_point_box: bool) -> [f32; 4] {
    let ordered = |a: f32, b: f32| if a >= b { (b, a) } else { (a, b) };
    if center_point_box {
        let (half_width, half_height) = (b[2] / 2.0, b[3] / 2.0);
        [
            b[0] - half_width,
            b[0] + half_width,
            b[1] - half_height,
            b[1] + half_height,
        ]
    } else {
        let (x_min, x_max) = ordered(b[1], b[3]);
        let (y_min, y_max) = ordered(b[0], b[2]);
        [x_min, x_max, y_min, y_max]
    }
}

/// tract's `should_suppress_by_iou`, in f32.
fn suppresses(a: [f32; 4], b: [f32; 4], iou_threshold: f32) -> bool {
    let (y_min, y_max) = (a[2].max(b[2]), a[3].min(b[3]));
    if y_max <= y_min {
        return false;
    }
    let (x_min, x_max) = (a[0].max(b[0]), a[1].min(b[1]));
    if x_max <= x_min {
        return false;
    }
    let intersection = (x_max - x_min) * (y_max - y_min);
    if intersection.is_sign_negative() {
        return false;
    }
    let area_a = (a[1] - a[0]) * (a[3] - a[2]);
    let area_b = (b[1] - b[0]) * (b[3] - b[2]);
    let union = area_a + area_b - intersection;
    if area_a.is_sign_negative() || area_b.is_sign_negative() || union.is_sign_negative() {
        return false;
    }
    intersection / union > iou_threshold
}

/// Greedy non-maximum suppression per batch and class, as tract's op: the selected
/// `(batch, class, box)` rows at the front of `[batches · classes · boxes, 3]`, their count, and
/// the (zeroed) work buffer.
pub(super) fn non_max_suppression(
    (boxes, scores, arguments): (Arg, Arg, Arg),
    (batches, classes, count): (usize, usize, usize),
    center_point_box: bool,
    has_score_threshold: bool,
) -> Result<Vec<TensorData>> {
    let floats = |a: Arg| -> Vec<f32> { a.data.to_f64_vec().iter().map(|&v| v as f32).collect() };
    let (boxes, scores, arguments) = (floats(boxes), floats(scores), floats(arguments));
    let [max_output, iou_threshold, score_threshold] = arguments[..] else {
        return Err(fail("NonMaxSuppression takes 3 arguments"));
    };
    if boxes.len() != batches * count * 4 || scores.len() != batches * classes * count {
        return Err(fail("NonMaxSuppression: boxes or scores of the wrong size"));
    }
    let limit = if max_output == 0.0 {
        count
    } else {
        max_output.clamp(0.0, count as f32) as usize
    };
    let mut selected = vec![];
    for batch in 0..batches {
        let extent_of = |i: usize| {
            let at = (batch * count + i) * 4;
            extent(&boxes[at..at + 4], center_point_box)
        };
        for class in 0..classes {
            let row = &scores[(batch * classes + class) * count..][..count];
            let mut candidates: Vec<usize> = (0..count)
                .filter(|&i| !has_score_threshold || row[i] > score_threshold)
                .collect();
            // Stable: equal scores keep their order, as tract's sort.
            candidates.sort_by(|&a, &b| {
                (row[b].partial_cmp(&row[a])).unwrap_or(std::cmp::Ordering::Equal)
            });
            let mut taken: Vec<usize> = vec![];
            for i in candidates {
                if taken.len() >= limit {
                    break;
                }
                let box_i = extent_of(i);
                if !taken
                    .iter()
                    .any(|&j| suppresses(box_i, extent_of(j), iou_threshold))
                {
                    taken.push(i);
                    selected.extend([batch as i64, class as i64, i as i64]);
                }
            }
        }
    }
    let found = selected.len() / 3;
    selected.resize(batches * classes * count * 3, 0);
    Ok(vec![
        TensorData::I64(selected),
        TensorData::I64(vec![found as i64]),
        TensorData::U32(vec![0; count.max(1)]),
    ])
}
