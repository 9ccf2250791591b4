//! [ONNX `Softmax`] over trailing rows of f32, replacing tract's `Softmax` in cpu plans. tract
//! calls three vector kernels per row (max, exp-sum, scale), each with its own set-up: on
//! mtcnn_pnet's 4,125 rows of 2 the calls were a third of the model's run natively (0.33 of
//! 1.0 ms) and 0.55 ms in browsers; on minilm's attention (1,536 rows of 128) 2.3 ms per run
//! against onnxruntime's 0.43 (Intel Xeon, AVX-512, one thread). Here each row is three passes
//! while it sits in L1 (max, exponentials and their sum, scale), in lanes LLVM vectorizes for the
//! CPU's widest registers, with an exponential it can vectorize ([`exp_of_shifted`]); rows are
//! the pool's tasks. In browsers long rows stay with tract's wasm kernel (not measured against
//! this one there).
//!
//! [ONNX `Softmax`]: https://onnx.ai/onnx/operators/onnx__Softmax.html

use crate::parallel::par_chunks_mut;
use crate::simd::F32_LANES as LANES;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

/// In browsers, rows at least this long stay with tract's wasm kernel.
#[cfg(target_family = "wasm")]
const LONGEST_WASM_ROW: usize = 15;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastSoftmax {
    /// Values per row: the product of the softmax axes, which are the trailing ones.
    pub row_len: usize,
}

/// `e^x` for `x = value − row max` (at most 0, or NaN), in arithmetic LLVM vectorizes: Cephes'
/// `expf` (`x = k·ln 2 + r`, `e^r` by a polynomial, `2^k` from its exponent bits), within 2 ulp
/// of the exact value. Below `ln(2⁻¹²⁶)` it is 0 (f32's normals end there; a softmax of such
/// values has a 1 in its row); NaN stays NaN.
#[inline(always)]
fn exp_of_shifted(x: f32) -> f32 {
    const LOWEST: f32 = -87.336_54;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5·2²³ rounds to the nearest integer k (ties to even) and leaves k in the low bits
    // of the sum: no rounding instruction (x86-64's baseline has none: a libm call) and no
    // float-to-int conversion (Rust's saturates: one lane at a time).
    const ROUND: f32 = 12_582_912.0;
    const ROUND_BITS: i32 = 0x4B40_0000;
    let clamped = if x < LOWEST { LOWEST } else { x };
    let rounded = clamped * std::f32::consts::LOG2_E + ROUND;
    let k = rounded - ROUND;
    let k_bits = (rounded.to_bits() as i32).wrapping_sub(ROUND_BITS);
    let r = clamped - k * LN2_HI - k * LN2_LO;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_65;
    p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    // k is in -126..=0: a normal power of two.
    let two_to_k = f32::from_bits((k_bits.wrapping_add(127) as u32) << 23);
    if x < LOWEST { 0.0 } else { e_r * two_to_k }
}

/// One row (not empty) replaced by its softmax. A NaN in the row makes every value NaN, as the
/// definition. Plain loops over lane groups: iterator adaptors here may stay out of line,
/// compiled without the wide registers [`crate::simd::widest`] enables.
#[inline(always)]
fn softmax_row(row: &mut [f32]) {
    let groups = row.len() / LANES * LANES;
    // Its own max, not `reduce_extremum`'s: that one carries NaN along (a second comparison per
    // value, 0.60 → 0.82 ms on minilm's softmax); here a NaN value turns the row NaN anyway.
    let mut maxes = [f32::NEG_INFINITY; LANES];
    for group in row[..groups].chunks_exact(LANES) {
        for lane in 0..LANES {
            if group[lane] > maxes[lane] {
                maxes[lane] = group[lane];
            }
        }
    }
    let mut max = f32::NEG_INFINITY;
    for &v in maxes.iter().chain(&row[groups..]) {
        if v > max {
            max = v;
        }
    }
    let mut sums = [0f32; LANES];
    for group in row[..groups].chunks_exact_mut(LANES) {
        for lane in 0..LANES {
            group[lane] = exp_of_shifted(group[lane] - max);
            sums[lane] += group[lane];
        }
    }
    let mut sum = 0f32;
    for lane_sum in sums {
        sum += lane_sum;
    }
    for x in &mut row[groups..] {
        *x = exp_of_shifted(*x - max);
        sum += *x;
    }
    let scale = sum.recip();
    for x in row.iter_mut() {
        *x *= scale;
    }
}

/// Rows shorter than a lane group (`n` values each, a whole number of them) replaced by their
/// softmax: each row's max taken out, then the exponentials over the whole block in lane groups
/// (a row-at-a-time loop left them scalar: mtcnn_pnet's 4,125 rows of 2 took 0.14 ms of a
/// 3.3 ms run in browsers), then each row scaled by its sum. A NaN spreads over its row as in
/// [`softmax_row`].
#[inline(always)]
fn softmax_short_rows(rows: &mut [f32], n: usize) {
    for row in rows.chunks_exact_mut(n) {
        let mut max = f32::NEG_INFINITY;
        for &v in row.iter() {
            if v > max {
                max = v;
            }
        }
        for x in row.iter_mut() {
            *x -= max;
        }
    }
    let groups = rows.len() / LANES * LANES;
    for group in rows[..groups].chunks_exact_mut(LANES) {
        for x in group {
            *x = exp_of_shifted(*x);
        }
    }
    for x in &mut rows[groups..] {
        *x = exp_of_shifted(*x);
    }
    for row in rows.chunks_exact_mut(n) {
        let mut sum = 0f32;
        for &v in row.iter() {
            sum += v;
        }
        let scale = sum.recip();
        for x in row.iter_mut() {
            *x *= scale;
        }
    }
}

impl FastSoftmax {
    /// The fast version of `op` on an f32 input of `shape`, when it applies: a plain softmax
    /// (not log, not quantized) over trailing axes.
    pub fn for_op(op: &Softmax, shape: &[usize]) -> Option<FastSoftmax> {
        if op.kind != SoftmaxKind::Softmax || op.quant_output_dt.is_some() || op.axes.is_empty() {
            return None;
        }
        let mut axes = op.axes.to_vec();
        axes.sort_unstable();
        let first = shape.len().checked_sub(axes.len())?;
        let trailing = axes.iter().enumerate().all(|(i, &a)| a == first + i);
        let row_len: usize = shape[first..].iter().product();
        #[cfg(target_family = "wasm")]
        if row_len > LONGEST_WASM_ROW {
            return None;
        }
        (trailing && row_len > 0).then_some(FastSoftmax { row_len })
    }

    /// Each row of `data` (a whole number of rows) replaced by its softmax.
    pub fn compute_in_place(&self, data: &mut [f32]) -> TractResult<()> {
        let n = self.row_len;
        ensure!(
            n > 0 && data.len().is_multiple_of(n),
            "softmax rows of {n} do not tile {} values",
            data.len()
        );
        // A few dozen operations per value.
        let work = data.len() * 16;
        par_chunks_mut(data, n, work, |_, rows| {
            crate::simd::widest(
                #[inline(always)]
                || {
                    if n < LANES {
                        softmax_short_rows(rows, n);
                    } else {
                        for row in rows.chunks_exact_mut(n) {
                            softmax_row(row);
                        }
                    }
                },
            );
            Ok(())
        })
    }
}

impl Op for FastSoftmax {
    fn name(&self) -> StaticName {
        "FastSoftmax".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastSoftmax {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        // In place, as tract's softmax: the input is copied only when another op still reads it.
        let mut output = args_1!(inputs).into_tensor();
        self.compute_in_place(output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?)?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastSoftmax {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(inputs[0].without_value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn softmax(axes: &[usize]) -> Softmax {
        Softmax::new(axes.into(), None, SoftmaxKind::Softmax)
    }

    /// The definition, in f64: exp(x - max) / sum over the row.
    fn reference(input: &[f32], n: usize) -> Vec<f32> {
        input
            .chunks(n)
            .flat_map(|row| {
                let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
                let exps: Vec<f64> = row.iter().map(|&x| (x as f64 - max).exp()).collect();
                let sum: f64 = exps.iter().sum();
                exps.into_iter().map(move |e| (e / sum) as f32)
            })
            .collect()
    }

    #[test]
    fn trailing_rows_only() {
        let pnet = [1, 55, 75, 2];
        assert_eq!(
            FastSoftmax::for_op(&softmax(&[3]), &pnet).map(|s| s.row_len),
            Some(2)
        );
        assert_eq!(
            FastSoftmax::for_op(&softmax(&[2, 3]), &[1, 4, 3, 5]).map(|s| s.row_len),
            Some(15)
        );
        #[cfg(not(target_family = "wasm"))]
        assert_eq!(
            FastSoftmax::for_op(&softmax(&[3]), &[1, 12, 128, 128]).map(|s| s.row_len),
            Some(128)
        );
        // A leading axis, log-softmax: tract's.
        assert!(FastSoftmax::for_op(&softmax(&[1]), &[1, 2, 55, 75]).is_none());
        let log = Softmax::new(tvec![3], None, SoftmaxKind::LogSoftmax);
        assert!(FastSoftmax::for_op(&log, &pnet).is_none());
    }

    #[test]
    fn matches_the_definition_on_rows_short_and_long() {
        // Every length up to two lane groups and one past them, then minilm's attention rows.
        for n in (1..=2 * LANES + 1).chain([128, 200]) {
            // Large and negative values: the row's max is taken out before exp.
            let input: Vec<f32> = (0..n * 37)
                .map(|i| ((i * 7919) % 97) as f32 * 1.7 - 60.0)
                .collect();
            let op = FastSoftmax { row_len: n };
            let mut output = input.clone();
            op.compute_in_place(&mut output).unwrap();
            for (got, want) in output.iter().zip(reference(&input, n)) {
                assert!(
                    (got - want).abs() <= 1e-6 + 1e-5 * want.abs(),
                    "n {n}: {got} vs {want}"
                );
            }
            for row in output.chunks(n) {
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
        }
        let op = FastSoftmax { row_len: 3 };
        assert!(
            op.compute_in_place(&mut [0.0; 7]).is_err(),
            "not a whole number of rows"
        );
    }

    #[test]
    fn the_exponential_is_within_two_ulp_down_to_the_smallest_normal() {
        let mut worst = 0f64;
        for i in 0..=200_000 {
            let x = -87.3 * i as f32 / 200_000.0;
            let want = (x as f64).exp();
            let got = exp_of_shifted(x) as f64;
            // One ulp of the f32 nearest to the true value.
            let ulp = f64::from((want as f32).abs()) * f64::EPSILON.max(f32::EPSILON as f64);
            worst = worst.max((got - want).abs() / ulp);
        }
        assert!(worst <= 2.0, "{worst} ulp");
        assert_eq!(exp_of_shifted(0.0), 1.0);
        assert_eq!(exp_of_shifted(-88.0), 0.0);
        assert_eq!(exp_of_shifted(f32::NEG_INFINITY), 0.0);
        assert!(exp_of_shifted(f32::NAN).is_nan());
    }

    #[test]
    fn short_rows_mask_and_spread_a_nan_like_long_ones() {
        // pnet's rows of 2: a masked value, a row of -inf (0/0: NaN, as the definition), a NaN.
        let mut data = vec![
            0.5,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1.0,
            3.0,
            -1.0,
        ];
        FastSoftmax { row_len: 2 }
            .compute_in_place(&mut data)
            .unwrap();
        assert_eq!(data[..2], [1.0, 0.0]);
        assert!(data[2..6].iter().all(|v| v.is_nan()), "{data:?}");
        let want = reference(&[3.0, -1.0], 2);
        assert!((data[6] - want[0]).abs() < 1e-6 && (data[7] - want[1]).abs() < 1e-6);
    }

    #[test]
    fn masked_values_get_nothing_and_a_nan_spreads_over_its_row() {
        // An attention row with masked positions (-inf, or a large negative bias), then one with NaN.
        let n = 2 * LANES + 3;
        let mut data: Vec<f32> = (0..2 * n).map(|i| (i % 7) as f32 * 0.5).collect();
        for i in [1, 5, LANES + 2, n - 1] {
            data[i] = f32::NEG_INFINITY;
        }
        data[3] = -10000.0;
        data[n + LANES + 1] = f32::NAN;
        FastSoftmax { row_len: n }
            .compute_in_place(&mut data)
            .unwrap();
        let (row, nan_row) = data.split_at(n);
        for i in [1, 3, 5, LANES + 2, n - 1] {
            assert_eq!(row[i], 0.0, "position {i}");
        }
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(nan_row.iter().all(|v| v.is_nan()), "{nan_row:?}");
    }
}
