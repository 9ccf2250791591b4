//! Quantized matrix products by constant weights (QLinearMatMul, MatMulInteger, QDQ MatMul: a
//! transformer's projections) as exact integer sums on AVX2, for x86-64 CPUs without VNNI. There
//! tract's integer kernel is 40–90× slower than f32 (see [`super::integer_products_pay`]), so these
//! products ran as f32 sums of centred integers, no faster than the float model (minilm's
//! 128×384×1536 products: 1.75 ms each on Zen 3, onnxruntime's integer ones 0.85).
//!
//! As the AVX2 tile of [`super::quantized_tap_products`]: two centred 8-bit values as i16 in each
//! 32-bit lane, `VPMADDWD` multiplies 8 lanes of pairs by 8 other pairs and adds each lane's 2
//! products, exactly in 32 bits: 16 products an instruction against an f32 FMA's 8. The weights,
//! centred on their zero points (any of `−255..=255`), are packed once per plan in panels of 16
//! columns, a pair of rows per lane; each run copies the left operand centred on its zero point as
//! i16 (rows padded to an even length: read as i32, a row is its pairs), and micro-tiles of 6
//! rows × 16 columns keep their 12 sums in registers over the whole depth. Unlike the f32 sums,
//! the sums are exact however deep (checked against i32's range when the op is built).

use super::quantized_tap_products::SharedSums;
use crate::parallel;
use std::cell::RefCell;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;

/// Columns per panel: two vectors of 8 lanes.
const PANEL: usize = 16;
/// Rows per micro-tile: with 2 sums each, the registers left for 2 weight vectors, a broadcast
/// pair and a product.
const TILE_ROWS: usize = 6;
/// Rows per parallel task: a block of the left operand that stays in L2 while each panel of
/// weights (in L1 for a depth of 384: 12 KB) serves all its tiles.
const TASK_ROWS: usize = 8 * TILE_ROWS;
/// Panels per parallel task.
const TASK_PANELS: usize = 8;

/// Whether the kernel runs on this CPU.
pub fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// `Σₖ (a[.., i, k] − a_zero) · w[k, j]`, exactly, as i32: `a` a computed u8 or i8 tensor whose
/// last axis is the depth, `w` centred constant weights.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastQuantizedMatMul {
    pub depth: usize,
    pub columns: usize,
    /// Centred weights as i16 pairs of rows `2p, 2p + 1`: panels of [`PANEL`] columns, each
    /// `depth pairs × PANEL`, the last padded with zeros (and so is the last pair of an odd
    /// depth).
    pub packed: Vec<i32>,
    /// `None`: the op's second input, known at run time (DynamicQuantizeLinear's).
    pub input_zero: Option<i32>,
    /// u8 or i8.
    pub input: DatumType,
}

impl FastQuantizedMatMul {
    /// The product by `centred` (`depth × columns`, row-major, each value within `−255..=255`)
    /// of inputs of type `input` (u8 or i8) centred on `input_zero` (`None`: computed), or `None`
    /// when this CPU lacks AVX2 or a sum could leave i32.
    pub fn for_weights(
        centred: &[i32],
        depth: usize,
        columns: usize,
        input: DatumType,
        input_zero: Option<i32>,
    ) -> Option<FastQuantizedMatMul> {
        let (low, high) = eight_bit_range(input)?;
        let weight_reach = centred.iter().map(|w| w.unsigned_abs()).max()? as i64;
        let input_reach = match input_zero {
            Some(zero) if (low..=high).contains(&zero) => (zero - low).max(high - zero) as i64,
            Some(_) => return None,
            None => (high - low) as i64,
        };
        let fits = weight_reach <= 255
            && (depth as i64).saturating_mul(weight_reach * input_reach) <= i32::MAX as i64;
        if !available() || depth == 0 || columns == 0 || centred.len() != depth * columns || !fits {
            return None;
        }
        Some(FastQuantizedMatMul {
            depth,
            columns,
            packed: pack(centred, depth, columns),
            input_zero,
            input,
        })
    }

    fn pairs(&self) -> usize {
        self.depth.div_ceil(2)
    }

    fn output_shape<D: DimLike>(&self, input: &[D]) -> TVec<D> {
        let mut shape: TVec<D> = input[..input.len() - 1].into();
        shape.push(D::from(self.columns));
        shape
    }

    fn eval_as<T: Datum + Copy + Into<i32> + Sync>(
        &self,
        input: &TValue,
        zero: i32,
    ) -> TractResult<Tensor> {
        let plain = input.try_as_plain_ram()?;
        let values = plain.as_slice::<T>()?;
        let rows = values.len() / self.depth;
        let pairs = self.pairs();
        let mut output = Tensor::zero::<i32>(&self.output_shape(input.shape()))?;
        let mut out_ram = output.try_as_plain_ram_mut()?;
        let out = out_ram.as_slice_mut::<i32>()?;
        with_kept(rows * pairs, |laid_out| {
            // SAFETY: the i16 halves of the buffer's own i32 values, little-endian on x86-64:
            // half 0 of pair `p` is column `2p`, as the kernel pairs them.
            let halves = unsafe {
                std::slice::from_raw_parts_mut(laid_out.as_mut_ptr() as *mut i16, rows * pairs * 2)
            };
            let depth = self.depth;
            parallel::par_chunks_mut(halves, pairs * 2, rows * depth, |first, block| {
                let rows = block.len() / (pairs * 2);
                let source = &values[first * depth..][..rows * depth];
                // SAFETY: AVX2 is present (checked by the caller).
                unsafe { centre(source, depth, zero, block) };
                Ok(())
            })?;
            let laid_out = &*laid_out;
            let row_blocks = rows.div_ceil(TASK_ROWS);
            let panels = self.columns.div_ceil(PANEL);
            let panel_blocks = panels.div_ceil(TASK_PANELS);
            let out_at = SharedSums(out.as_mut_ptr());
            parallel::for_each(row_blocks * panel_blocks, 0, |_, task| {
                let (row_block, panel_block) = (task / panel_blocks, task % panel_blocks);
                let rows = row_block * TASK_ROWS..((row_block + 1) * TASK_ROWS).min(rows);
                let panels =
                    panel_block * TASK_PANELS..((panel_block + 1) * TASK_PANELS).min(panels);
                // SAFETY: AVX2 is present (checked by the caller); the task reads rows of the
                // laid-out input and panels of the weights inside them, and writes its own rows
                // × columns of `out` (`rows × columns` long), which no other task writes.
                unsafe { self.products(laid_out, rows, panels, out_at.get()) };
                Ok(())
            })
        })?;
        Ok(output)
    }

    /// The sums of rows `rows` by the columns of `panels` into `out`.
    ///
    /// SAFETY: AVX2 must be present; `laid_out` must hold the rows' pairs; `out` must be the
    /// output (`rows × columns`), its part written here by no other thread meanwhile.
    #[target_feature(enable = "avx2")]
    unsafe fn products(
        &self,
        laid_out: &[i32],
        rows: std::ops::Range<usize>,
        panels: std::ops::Range<usize>,
        out: *mut i32,
    ) {
        let pairs = self.pairs();
        debug_assert!(rows.end * pairs <= laid_out.len());
        for panel in panels {
            let weights = self.packed[panel * pairs * PANEL..][..pairs * PANEL].as_ptr();
            let columns = (self.columns - panel * PANEL).min(PANEL);
            let mut row = rows.start;
            while row < rows.end {
                let count = (rows.end - row).min(TILE_ROWS);
                // SAFETY: the caller's, for this tile's rows and columns.
                unsafe {
                    let tile = (
                        laid_out.as_ptr().add(row * pairs),
                        pairs,
                        weights,
                        out.add(row * self.columns + panel * PANEL),
                        self.columns,
                        columns,
                    );
                    match count {
                        6 => avx2::tile::<6>(tile),
                        5 => avx2::tile::<5>(tile),
                        4 => avx2::tile::<4>(tile),
                        3 => avx2::tile::<3>(tile),
                        2 => avx2::tile::<2>(tile),
                        _ => avx2::tile::<1>(tile),
                    }
                }
                row += count;
            }
        }
    }
}

/// The values of u8 or i8.
fn eight_bit_range(dt: DatumType) -> Option<(i32, i32)> {
    if dt == u8::datum_type() {
        Some((0, 255))
    } else if dt == i8::datum_type() {
        Some((-128, 127))
    } else {
        None
    }
}

/// `centred` (`depth × columns`) as panels of i16 pairs of rows.
fn pack(centred: &[i32], depth: usize, columns: usize) -> Vec<i32> {
    let pairs = depth.div_ceil(2);
    let mut packed = vec![0i32; columns.div_ceil(PANEL) * pairs * PANEL];
    for (k, row) in centred.chunks_exact(columns).enumerate() {
        for (column, &w) in row.iter().enumerate() {
            let (panel, lane) = (column / PANEL, column % PANEL);
            let at = &mut packed[(panel * pairs + k / 2) * PANEL + lane];
            let half = (w as i16 as u16 as u32) << (16 * (k % 2));
            *at = (*at as u32 | half) as i32;
        }
    }
    packed
}

/// Rows of `source` (`depth` long) minus `zero` into `out` (rows of an even length, the last
/// value of an odd row's pair 0).
///
/// SAFETY: AVX2 must be present (it vectorizes the loop).
#[target_feature(enable = "avx2")]
unsafe fn centre<T: Copy + Into<i32>>(source: &[T], depth: usize, zero: i32, out: &mut [i16]) {
    let padded = depth.next_multiple_of(2);
    for (row, out) in source.chunks_exact(depth).zip(out.chunks_exact_mut(padded)) {
        for (o, &v) in out.iter_mut().zip(row) {
            *o = (v.into() - zero) as i16;
        }
        out[depth..].fill(0);
    }
}

thread_local! {
    /// Each thread's laid-out input, kept between runs so that no run allocates it.
    static KEPT: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
}

/// `f` with this thread's kept buffer, `len` long (contents left from earlier runs); a nested
/// call, should there be one, gets a buffer of its own.
fn with_kept<R>(len: usize, f: impl FnOnce(&mut [i32]) -> R) -> R {
    let use_buffer = |buffer: &mut Vec<i32>| {
        if buffer.len() < len {
            buffer.resize(len, 0);
        }
        f(&mut buffer[..len])
    };
    KEPT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut kept) => use_buffer(&mut kept),
        Err(_) => use_buffer(&mut Vec::new()),
    })
}

/// A micro-tile's arguments: its first row's pairs, the pairs per row, the panel's weights,
/// where its sums go, the distance between output rows, and how many columns to store.
type Tile = (*const i32, usize, *const i32, *mut i32, usize, usize);

mod avx2 {
    use super::{PANEL, Tile};
    use std::arch::x86_64::*;

    const LANES: usize = 8;

    /// `R` rows by a panel's 16 columns (the first `columns` stored), over every pair.
    #[target_feature(enable = "avx2")]
    #[inline]
    // Indexes over the register block: it must unroll into named registers.
    #[allow(clippy::needless_range_loop)]
    pub unsafe fn tile<const R: usize>((a, pairs, weights, out, out_row, columns): Tile) {
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for p in 0..pairs {
            // SAFETY: the caller's: pair `p` of each of the `R` rows, and the panel's 16
            // weights of pair `p`.
            unsafe {
                let w = weights.add(p * PANEL);
                let w0 = _mm256_loadu_si256(w as *const __m256i);
                let w1 = _mm256_loadu_si256(w.add(LANES) as *const __m256i);
                for r in 0..R {
                    let x = _mm256_set1_epi32(*a.add(r * pairs + p));
                    acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, w0));
                    acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, w1));
                }
            }
        }
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let masks = [0, LANES].map(|first| {
            _mm256_cmpgt_epi32(_mm256_set1_epi32(columns as i32 - first as i32), lanes)
        });
        for r in 0..R {
            for v in 0..2 {
                // SAFETY: the caller's: row `r`'s first `columns` values lie inside `out`.
                unsafe {
                    let at = out.add(r * out_row + v * LANES);
                    if columns == PANEL {
                        _mm256_storeu_si256(at as *mut __m256i, acc[r][v]);
                    } else if columns > v * LANES {
                        _mm256_maskstore_epi32(at, masks[v], acc[r][v]);
                    }
                }
            }
        }
    }
}

impl Op for FastQuantizedMatMul {
    fn name(&self) -> StaticName {
        "FastQuantizedMatMul".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "{} × {}, AVX2 16-bit pairs",
            self.depth, self.columns
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for FastQuantizedMatMul {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(
            available(),
            "a quantized matrix product built for AVX2, which this CPU lacks"
        );
        let input = inputs
            .first()
            .ok_or_else(|| format_err!("a quantized matrix product without input"))?;
        let zero = match (self.input_zero, inputs.get(1)) {
            (Some(zero), None) => zero,
            (None, Some(zero)) => {
                ensure!(
                    zero.len() == 1,
                    "a quantized matrix product's input zero point is one value, not {:?}",
                    zero.shape()
                );
                zero.cast_to_scalar::<i32>()?
            }
            _ => bail!("a quantized matrix product got {} inputs", inputs.len()),
        };
        let (low, high) = eight_bit_range(self.input)
            .ok_or_else(|| format_err!("a quantized matrix product of {:?}", self.input))?;
        ensure!(
            (low..=high).contains(&zero),
            "input zero point {zero} outside {:?}",
            self.input
        );
        ensure!(
            input.datum_type() == self.input
                && input.rank() >= 1
                && input.shape().last() == Some(&self.depth),
            "a quantized matrix product of depth {} over {:?} got {:?} {:?}",
            self.depth,
            self.input,
            input.datum_type(),
            input.shape()
        );
        let output = if self.input == u8::datum_type() {
            self.eval_as::<u8>(input, zero)?
        } else {
            self.eval_as::<i8>(input, zero)?
        };
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastQuantizedMatMul {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 1 + usize::from(self.input_zero.is_none()));
        let shape = &inputs[0].shape;
        ensure!(shape.rank() >= 1 && shape[shape.rank() - 1] == self.depth.to_dim());
        Ok(tvec!(i32::fact(self.output_shape(shape))))
    }

    fn cost(&self, inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let rows: TDim = inputs[0].shape.iter().rev().skip(1).product();
        Ok(tvec!((
            Cost::FMA(i32::datum_type()),
            rows * (self.depth * self.columns)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in `low..=high`.
    fn values(count: usize, seed: u64, low: i32, high: i32) -> Vec<i32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..count)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                low + ((state >> 33) % (high - low + 1) as u64) as i32
            })
            .collect()
    }

    fn run(op: &FastQuantizedMatMul, input: Tensor, zero: Option<i32>) -> TractResult<Vec<i32>> {
        let mut inputs = tvec![input.into_tvalue()];
        if let Some(zero) = zero {
            inputs.push(tensor0(zero as u8).into_tvalue());
        }
        let output = op.eval(&EvalContext::out_of_plan(), inputs)?.remove(0);
        Ok(output.try_as_plain_ram()?.as_slice::<i32>()?.to_vec())
    }

    /// Every shape class (a partial last tile of rows and panel of columns, an odd depth, several
    /// tasks), u8 and i8 inputs, extreme zero points and weights, at 1 and 2 threads, against
    /// the definition's sums.
    #[test]
    fn sums_match_the_definition_exactly() {
        if !available() {
            eprintln!("no AVX2: the quantized matrix product does not run here");
            return;
        }
        let shapes = [
            (&[1usize, 1][..], 1usize, 1usize),
            (&[7, 3], 5, 17),
            (&[2, 61, 7], 6, 40),
            (&[1, 128, 21], 21, 16),
            (&[130, 2], 384, 33),
        ];
        for threads in [1, 2] {
            let executor = tract_linalg::multithread::Executor::multithread(threads);
            tract_linalg::multithread::multithread_tract_scope(executor, || {
                for (seed, &(outer, depth, columns)) in shapes.iter().enumerate() {
                    let mut shape = outer.to_vec();
                    shape.push(depth);
                    let rows: usize = outer.iter().product();
                    for (input, zero) in [
                        (u8::datum_type(), 0),
                        (u8::datum_type(), 255),
                        (u8::datum_type(), 131),
                        (i8::datum_type(), -128),
                        (i8::datum_type(), 127),
                    ] {
                        let (low, high) = eight_bit_range(input).unwrap();
                        let a = values(rows * depth, seed as u64, low, high);
                        let w = values(depth * columns, seed as u64 + 7, -255, 255);
                        let want: Vec<i32> = (0..rows * columns)
                            .map(|ij| {
                                let (i, j) = (ij / columns, ij % columns);
                                (0..depth)
                                    .map(|k| (a[i * depth + k] - zero) * w[k * columns + j])
                                    .sum()
                            })
                            .collect();
                        let op =
                            FastQuantizedMatMul::for_weights(&w, depth, columns, input, Some(zero))
                                .unwrap();
                        let tensor = if input == u8::datum_type() {
                            let a: Vec<u8> = a.iter().map(|&v| v as u8).collect();
                            Tensor::from_shape(&shape, &a).unwrap()
                        } else {
                            let a: Vec<i8> = a.iter().map(|&v| v as i8).collect();
                            Tensor::from_shape(&shape, &a).unwrap()
                        };
                        let got = run(&op, tensor, None).unwrap();
                        assert_eq!(got, want, "{shape:?} × {columns}, {input:?} zero {zero}");
                    }
                }
            });
        }
    }

    #[test]
    fn a_computed_zero_point_is_read_and_checked() {
        if !available() {
            eprintln!("no AVX2: the quantized matrix product does not run here");
            return;
        }
        let w = [1, -2, 3, 4, 5, -6];
        let op = FastQuantizedMatMul::for_weights(&w, 3, 2, u8::datum_type(), None).unwrap();
        let a = Tensor::from_shape(&[1, 3], &[10u8, 20, 30]).unwrap();
        // (10−10)·1 + (20−10)·3 + (30−10)·5 = 130; (10−10)·−2 + 10·4 + 20·−6 = −80.
        assert_eq!(run(&op, a.clone(), Some(10)).unwrap(), [130, -80]);
        let i8_op = FastQuantizedMatMul::for_weights(&w, 3, 2, i8::datum_type(), Some(0)).unwrap();
        let i8_input = Tensor::from_shape(&[1, 3], &[1i8, 2, 3]).unwrap();
        assert_eq!(run(&i8_op, i8_input, None).unwrap(), [22, -12]);
        // Wrong depth, wrong type: errors, no panic.
        let short = Tensor::from_shape(&[1, 2], &[1u8, 2]).unwrap();
        assert!(run(&op, short, Some(0)).is_err());
        let wrong_type = Tensor::from_shape(&[1, 3], &[1i8, 2, 3]).unwrap();
        assert!(run(&op, wrong_type, Some(0)).is_err());
    }

    #[test]
    fn products_whose_sums_could_leave_i32_are_refused() {
        let depth = 33_100;
        let w = vec![255; depth];
        assert!(
            FastQuantizedMatMul::for_weights(&w, depth, 1, u8::datum_type(), Some(0)).is_none()
        );
        // Within range: 33_000 × 255 × 255 < 2³¹.
        let fits =
            FastQuantizedMatMul::for_weights(&w[..33_000], 33_000, 1, u8::datum_type(), Some(0));
        assert_eq!(fits.is_some(), available());
        // Weights that no 8-bit value centred on an 8-bit zero point gives.
        assert!(
            FastQuantizedMatMul::for_weights(&[256], 1, 1, u8::datum_type(), Some(0)).is_none()
        );
        assert!(
            FastQuantizedMatMul::for_weights(&[1], 1, 1, i8::datum_type(), Some(128)).is_none()
        );
    }
}
