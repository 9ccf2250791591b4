//! What Tessera's matrix-product ops ([`FastConv`](super::FastConv),
//! [`FastConvTranspose`](super::FastConvTranspose), [`FastMatMul`](super::FastMatMul)) share: the
//! call into gemm's kernel, the output their tasks (see [`crate::parallel`]) write at disjoint
//! places, and the element-wise epilogue fused after the product.

pub use super::tap_products::RowFinish;
use std::sync::Arc;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::{bail, ensure};

/// The output, written by tasks at disjoint places (each op's SAFETY note says why).
pub struct SharedOutput(*mut f32);
// SAFETY: tasks write disjoint elements and the slice outlives the parallel loop.
unsafe impl Sync for SharedOutput {}
unsafe impl Send for SharedOutput {}

impl SharedOutput {
    pub fn new(output: &mut [f32]) -> SharedOutput {
        SharedOutput(output.as_mut_ptr())
    }

    /// SAFETY: `offset` must lie inside the output.
    pub unsafe fn at(&self, offset: usize) -> *mut f32 {
        unsafe { self.0.add(offset) }
    }
}

/// `dst = lhs · rhs` (`dst` is written, not read), or `dst += lhs · rhs` when `accumulate`, for
/// an `m × k` by `k × n` product, on the calling thread, through the kernel gemm-f32 picked for
/// this CPU. Strides are in elements: `*_cs` between columns, `*_rs` between rows.
///
/// SAFETY: every element the strides reach must lie inside its buffer; no other thread may
/// touch the part of `dst` written.
#[allow(clippy::too_many_arguments)]
pub unsafe fn product(
    (m, n, k): (usize, usize, usize),
    dst: *mut f32,
    (dst_cs, dst_rs): (usize, usize),
    lhs: *const f32,
    (lhs_cs, lhs_rs): (usize, usize),
    rhs: *const f32,
    (rhs_cs, rhs_rs): (usize, usize),
    accumulate: bool,
) {
    let kernel = gemm_f32::gemm::f32::get_gemm_fn();
    // The microkernel writes columns: a row-major `dst` is computed as `dstᵀ = rhsᵀ · lhsᵀ`
    // (swapped roles and strides, no copy), as the `gemm` crate's own entry point does.
    let ((m, n), (dst_cs, dst_rs), (lhs, lhs_cs, lhs_rs), (rhs, rhs_cs, rhs_rs)) =
        if dst_cs < dst_rs {
            (
                (n, m),
                (dst_rs, dst_cs),
                (rhs, rhs_rs, rhs_cs),
                (lhs, lhs_rs, lhs_cs),
            )
        } else {
            (
                (m, n),
                (dst_cs, dst_rs),
                (lhs, lhs_cs, lhs_rs),
                (rhs, rhs_cs, rhs_rs),
            )
        };
    // SAFETY: the caller's conditions; with `read_dst` false, `dst` is not read.
    unsafe {
        kernel(
            m,
            n,
            k,
            dst,
            dst_cs as isize,
            dst_rs as isize,
            accumulate,
            lhs,
            lhs_cs as isize,
            lhs_rs as isize,
            rhs,
            rhs_cs as isize,
            rhs_rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm_common::Parallelism::None,
        )
    }
}

/// The eval of a product op: its f32 operands read in place, a new output of `shape` that
/// `compute` must write whole (it is created unwritten: each task writes its own block, all the
/// blocks make the whole output; a failed run drops it unread).
pub fn eval_product(
    inputs: TVec<TValue>,
    shape: &[usize],
    compute: impl FnOnce(&[&[f32]], &mut [f32]) -> TractResult<()>,
) -> TractResult<TVec<TValue>> {
    let plain = inputs
        .iter()
        .map(|input| input.try_as_plain_ram())
        .collect::<TractResult<Vec<_>>>()?;
    let operands = plain
        .iter()
        .map(|p| p.as_slice::<f32>())
        .collect::<TractResult<Vec<_>>>()?;
    // SAFETY: see above; every caller's `compute` writes every element or fails.
    let mut output = unsafe { Tensor::uninitialized::<f32>(shape)? };
    compute(
        &operands,
        output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?,
    )?;
    Ok(tvec!(output.into_tvalue()))
}

/// [`eval_product`] for a convolution-like op (`what`) on input, kernel and bias.
pub fn eval_input_kernel_bias(
    inputs: TVec<TValue>,
    shape: &[usize],
    what: &str,
    compute: impl FnOnce(&[f32], &[f32], &[f32], &mut [f32]) -> TractResult<()>,
) -> TractResult<TVec<TValue>> {
    eval_product(inputs, shape, |operands, output| {
        let [input, kernel, bias] = operands else {
            bail!("{what} takes input, kernel and bias");
        };
        compute(input, kernel, bias, output)
    })
}

/// The output fact of a convolution-like op (`what`) on input, kernel and bias: f32 of `shape`.
pub fn input_kernel_bias_facts(
    inputs: &[&TypedFact],
    shape: &[usize],
    what: &str,
) -> TractResult<TVec<TypedFact>> {
    ensure!(inputs.len() == 3, "{what} takes input, kernel and bias");
    Ok(tvec!(f32::fact(shape)))
}

/// An operand of the epilogue: one value for all, one per row (`m`) or one per column (`n`).
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Scalar(f32),
    PerRow(Arc<[f32]>),
    PerColumn(Arc<[f32]>),
}

/// A contiguous run of output values: along a row from a column, or along a column from a row.
#[derive(Debug, Clone, Copy)]
pub enum Run {
    AlongRow { row: usize, first_column: usize },
    AlongColumn { column: usize, first_row: usize },
}

/// An operand's values over a run.
enum Values<'a> {
    Constant(f32),
    Varying(&'a [f32]),
}

impl Operand {
    fn over(operand: &Option<Operand>, run: Run, len: usize, identity: f32) -> Values<'_> {
        use Values::{Constant, Varying};
        match (operand, run) {
            (None, _) => Constant(identity),
            (Some(Operand::Scalar(v)), _) => Constant(*v),
            (Some(Operand::PerRow(rows)), Run::AlongRow { row, .. }) => Constant(rows[row]),
            (Some(Operand::PerColumn(columns)), Run::AlongColumn { column, .. }) => {
                Constant(columns[column])
            }
            (Some(Operand::PerRow(rows)), Run::AlongColumn { first_row, .. }) => {
                Varying(&rows[first_row..][..len])
            }
            (Some(Operand::PerColumn(columns)), Run::AlongRow { first_column, .. }) => {
                Varying(&columns[first_column..][..len])
            }
        }
    }
}

/// What is applied to each output tile while it is in cache, in this order: a scale and an
/// addend (a BatchNorm or a bias), then a clamp (`max(x, low)` for ReLU, then `min(x, high)`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Epilogue {
    pub scale: Option<Operand>,
    pub add: Option<Operand>,
    pub low: Option<f32>,
    pub high: Option<f32>,
}

/// A bound applied after the product: `max(x, v)` or `min(x, v)`.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    Low(f32),
    High(f32),
}

impl Epilogue {
    pub fn is_empty(&self) -> bool {
        *self == Epilogue::default()
    }

    fn clamps(&self) -> bool {
        self.low.is_some() || self.high.is_some()
    }

    /// This epilogue followed by `bound`, when a clamp can express both.
    pub fn then_bound(&self, bound: Bound) -> Option<Epilogue> {
        let mut next = self.clone();
        match bound {
            // max(min(y, high), v) = min(max(y, v), high) only while v <= high.
            Bound::Low(v) if self.high.is_none_or(|high| v <= high) => {
                next.low = Some(self.low.map_or(v, |low| low.max(v)))
            }
            Bound::High(v) if self.low.is_none_or(|low| v >= low) => {
                next.high = Some(self.high.map_or(v, |high| high.min(v)))
            }
            _ => return None,
        }
        Some(next)
    }

    /// This epilogue followed by multiplying by `operand`: only first.
    pub fn then_mul(&self, operand: Operand) -> Option<Epilogue> {
        self.is_empty().then(|| Epilogue {
            scale: Some(operand),
            ..Epilogue::default()
        })
    }

    /// This epilogue followed by adding `operand`: only before any addend or clamp.
    pub fn then_add(&self, operand: Operand) -> Option<Epilogue> {
        (self.add.is_none() && !self.clamps()).then(|| Epilogue {
            add: Some(operand),
            ..self.clone()
        })
    }

    /// Whether no operand varies along a row and each has a value for every one of `rows` rows:
    /// then each row's epilogue is a [`RowFinish`] ([`Epilogue::row_finish`] is never `None`).
    pub fn fixed_along_rows(&self, rows: usize) -> bool {
        [&self.scale, &self.add]
            .into_iter()
            .all(|operand| match operand {
                None | Some(Operand::Scalar(_)) => true,
                Some(Operand::PerRow(values)) => values.len() >= rows,
                Some(Operand::PerColumn(_)) => false,
            })
    }

    /// Row `row`'s epilogue, its values first plus `extra`, as one [`RowFinish`] that a kernel
    /// applies in registers before it stores: `None` where an operand varies along the row.
    pub fn row_finish(&self, row: usize, extra: f32) -> Option<RowFinish> {
        let constant = |operand: &Option<Operand>, identity: f32| match operand {
            None => Some(identity),
            Some(Operand::Scalar(v)) => Some(*v),
            Some(Operand::PerRow(rows)) => rows.get(row).copied(),
            Some(Operand::PerColumn(_)) => None,
        };
        let (scale, add) = (constant(&self.scale, 1.0)?, constant(&self.add, 0.0)?);
        // As `apply`: the affine map is skipped when it is the identity, except before an upper
        // bound (where `-0.0` becomes `0.0` through it).
        let affine = scale != 1.0 || add != 0.0 || extra != 0.0 || self.high.is_some();
        Some(RowFinish {
            affine: affine.then_some([extra, scale, add]),
            low: self.low.unwrap_or(f32::NEG_INFINITY),
            high: self.high.unwrap_or(f32::INFINITY),
        })
    }

    /// Applies to `values`, the output values of `run`, each first plus `extra` (a
    /// convolution's bias). A NaN stays NaN through the clamp, as through ONNX's Relu and Clip.
    /// Inlined, so that it vectorizes as widely as its caller ([`crate::simd::widest`]).
    #[inline(always)]
    pub fn apply(&self, values: &mut [f32], run: Run, extra: f32) {
        use Values::{Constant, Varying};
        let low = self.low.unwrap_or(f32::NEG_INFINITY);
        let high = self.high.unwrap_or(f32::INFINITY);
        // Compare-and-select, not `f32::max`: one vector max or min each (`f32::max` adds a
        // NaN test and a blend per vector).
        let clamp = |v: f32| {
            let v = if v < low { low } else { v };
            if v > high { high } else { v }
        };
        let len = values.len();
        let scale = Operand::over(&self.scale, run, len, 1.0);
        let add = Operand::over(&self.add, run, len, 0.0);
        match (scale, add) {
            (Constant(scale), Constant(add)) => {
                let affine = scale != 1.0 || add != 0.0 || extra != 0.0;
                match (affine, self.low.is_some(), self.high.is_some()) {
                    (false, false, false) => {}
                    (true, false, false) => values
                        .iter_mut()
                        .for_each(|v| *v = (*v + extra) * scale + add),
                    (false, true, false) => crate::simd::select_in_place(
                        crate::simd::InPlace::Max,
                        values,
                        crate::simd::SelectOperand::Value(low),
                    ),
                    (true, true, false) => values.iter_mut().for_each(|v| {
                        let x = (*v + extra) * scale + add;
                        *v = if x < low { low } else { x }
                    }),
                    _ => values
                        .iter_mut()
                        .for_each(|v| *v = clamp((*v + extra) * scale + add)),
                }
            }
            // One loop per case, over slices: a match per value (which operand varies) left the
            // loop scalar, and a bias along a transformer's rows was a tenth of minilm's run.
            (Constant(scale), Varying(add)) => {
                for (v, &add) in values.iter_mut().zip(add) {
                    *v = clamp((*v + extra) * scale + add);
                }
            }
            (Varying(scale), Constant(add)) => {
                for (v, &scale) in values.iter_mut().zip(scale) {
                    *v = clamp((*v + extra) * scale + add);
                }
            }
            (Varying(scale), Varying(add)) => {
                for ((v, &scale), &add) in values.iter_mut().zip(scale).zip(add) {
                    *v = clamp((*v + extra) * scale + add);
                }
            }
        }
    }
}

/// Products narrower than this on either side stay with tract: `gemm` packs both operands on
/// every call, and for a few columns (silero's convolutions: 4 output positions) packing the
/// weights costs more than the product, which tract runs on weights it packed once at plan time
/// (silero 0.14 → 0.21 ms per run on the gemm path).
pub const MIN_SIDE: usize = 16;

/// A matrix-product op with a fusable [`Epilogue`].
pub trait ProductOp: TypedOp + Clone {
    fn epilogue(&self) -> &Epilogue;
    fn with_epilogue(&self, epilogue: Epilogue) -> Self;
    /// Where in the output shape an epilogue operand may vary: the row (`m`) axis, the column (`n`) axis.
    fn operand_axes(&self) -> (Option<usize>, Option<usize>);
}

/// Fuses into each `P` the element-wise ops that alone read its output, while its epilogue can
/// express them: a scale and a bias (`x · s + c`, each a constant scalar, row or column), then ReLU and clip
/// bounds (`max(x, a)`, `min(x, b)`, scalars). Each tile is then finished while in cache
/// instead of in passes of their own over the output.
pub fn fuse_epilogues<P: ProductOp>(model: &mut TypedModel) -> TractResult<usize> {
    let mut fused = 0;
    'restart: loop {
        for id in model.eval_order()? {
            let node = model.node(id);
            let Some(op) = node.op_as::<P>() else {
                continue;
            };
            let Some(next) = crate::plan_graph::only_reader(model, id)? else {
                continue;
            };
            let Some(step) = step_after(model, model.node(next), id, op.operand_axes())? else {
                continue;
            };
            let epilogue = match step {
                Step::Bound(bound) => op.epilogue().then_bound(bound),
                Step::Mul(operand) => op.epilogue().then_mul(operand),
                Step::Add(operand) => op.epilogue().then_add(operand),
            };
            let Some(epilogue) = epilogue else {
                continue;
            };
            let fused_op = op.with_epilogue(epilogue);
            TypedModelPatch::fuse_with_next(model, node, fused_op)?.apply(model)?;
            fused += 1;
            continue 'restart;
        }
        return Ok(fused);
    }
}

enum Step {
    Bound(Bound),
    Mul(Operand),
    Add(Operand),
}

/// The step `node` applies to the output of node `source`, when it is a max, min or add with a
/// f32 constant that leaves the shape as it is.
fn step_after(
    model: &TypedModel,
    node: &TypedNode,
    source: usize,
    (row_axis, column_axis): (Option<usize>, Option<usize>),
) -> TractResult<Option<Step>> {
    use tessera_core::tract_onnx::tract_core::ops::binary::TypedBinOp;
    use tessera_core::tract_onnx::tract_core::ops::math::{Add, Max, Min, Mul};
    let Some(op) = node.op_as::<TypedBinOp>() else {
        return Ok(None);
    };
    let source = OutletId::new(source, 0);
    let other = match node.inputs[..] {
        [a, b] if a == source => b,
        [a, b] if b == source => a,
        _ => return Ok(None),
    };
    let (input, output) = (
        model.outlet_fact(source)?,
        model.outlet_fact(node.id.into())?,
    );
    let Some(konst) = model.outlet_fact(other)?.konst.clone() else {
        return Ok(None);
    };
    let Some(shape) = output.shape.as_concrete() else {
        return Ok(None);
    };
    if input.shape != output.shape
        || output.datum_type != f32::datum_type()
        || konst.datum_type() != f32::datum_type()
        || konst.len() == 0
        || konst.rank() > shape.len()
    {
        return Ok(None);
    }
    let values = konst.try_as_plain_ram()?.as_slice::<f32>()?.to_vec();
    if values.iter().any(|v| v.is_nan()) {
        return Ok(None);
    }
    let uniform = values.iter().all(|v| *v == values[0]);
    if op.0.is::<Max>() || op.0.is::<Min>() {
        if !uniform {
            return Ok(None);
        }
        let bound = if op.0.is::<Max>() {
            Bound::Low(values[0])
        } else {
            Bound::High(values[0])
        };
        return Ok(Some(Step::Bound(bound)));
    }
    let step: fn(Operand) -> Step = if op.0.is::<Add>() {
        Step::Add
    } else if op.0.is::<Mul>() {
        Step::Mul
    } else {
        return Ok(None);
    };
    if uniform {
        return Ok(Some(step(Operand::Scalar(values[0]))));
    }
    // The constant's one axis longer than 1, placed as it broadcasts against the output.
    let offset = shape.len() - konst.rank();
    let mut varying = konst.shape().iter().enumerate().filter(|(_, d)| **d != 1);
    let (Some((axis, len)), None) = (varying.next(), varying.next()) else {
        return Ok(None);
    };
    let axis = axis + offset;
    if *len != shape[axis] {
        return Ok(None);
    }
    let values: Arc<[f32]> = values.into();
    Ok(if Some(axis) == row_axis {
        Some(step(Operand::PerRow(values)))
    } else if Some(axis) == column_axis {
        Some(step(Operand::PerColumn(values)))
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_finish_is_its_epilogue_bit_for_bit() {
        let per_row = |values: &[f32]| Some(Operand::PerRow(values.into()));
        let scales = [
            None,
            Some(Operand::Scalar(1.0)),
            Some(Operand::Scalar(-0.5)),
            per_row(&[2.0, 1.0]),
        ];
        let adds = [
            None,
            Some(Operand::Scalar(0.0)),
            Some(Operand::Scalar(0.75)),
            per_row(&[0.0, -3.0]),
        ];
        let bounds = [None, Some(0.0), Some(-1.0), Some(6.0)];
        let values = [
            -0.0,
            0.0,
            1.5,
            -2.25,
            7.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        for scale in &scales {
            for add in &adds {
                for low in bounds {
                    for high in bounds
                        .into_iter()
                        .filter(|h| h.is_none_or(|h| low.is_none_or(|l| l <= h)))
                    {
                        let epilogue = Epilogue {
                            scale: scale.clone(),
                            add: add.clone(),
                            low,
                            high,
                        };
                        assert!(epilogue.fixed_along_rows(2));
                        for row in 0..2 {
                            for extra in [0.0, -0.0, 0.5] {
                                let mut applied = values.to_vec();
                                let run = Run::AlongRow {
                                    row,
                                    first_column: 0,
                                };
                                epilogue.apply(&mut applied, run, extra);
                                let finish = epilogue.row_finish(row, extra).unwrap();
                                for (&value, &want) in values.iter().zip(&applied) {
                                    assert_eq!(
                                        finish.apply(value).to_bits(),
                                        want.to_bits(),
                                        "{epilogue:?}, row {row}, extra {extra}: {value}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        // An operand that varies along a row, or one value short, has no row finish.
        let per_column = Epilogue {
            add: Some(Operand::PerColumn([1.0].into())),
            ..Epilogue::default()
        };
        assert!(!per_column.fixed_along_rows(1));
        assert!(per_column.row_finish(0, 0.0).is_none());
        let short = Epilogue {
            scale: per_row(&[2.0]),
            ..Epilogue::default()
        };
        assert!(!short.fixed_along_rows(2));
    }

    /// Operands that vary along the run (a bias along a row, a BatchNorm along a column): each
    /// value as the definition, `clamp((v + extra) · scale + add)`, bit for bit.
    #[test]
    fn operands_varying_along_a_run_apply_value_by_value() {
        let values: Vec<f32> = [-0.0, 0.0, 1.5, -2.25, 7.0, f32::NAN, f32::INFINITY, -3.0]
            .into_iter()
            .cycle()
            .take(37)
            .collect();
        let varying: Vec<f32> = (0..40).map(|i| (i as f32 - 17.0) * 0.375).collect();
        let along = |per_row: bool| {
            let operand = |v: &[f32]| match per_row {
                true => Operand::PerRow(v.into()),
                false => Operand::PerColumn(v.into()),
            };
            let run = match per_row {
                true => Run::AlongColumn {
                    column: 1,
                    first_row: 2,
                },
                false => Run::AlongRow {
                    row: 1,
                    first_column: 2,
                },
            };
            (operand(&varying), Operand::Scalar(-0.5), run)
        };
        for per_row in [true, false] {
            let (varies, scalar, run) = along(per_row);
            let cases = [
                (Some(scalar.clone()), Some(varies.clone())),
                (Some(varies.clone()), Some(scalar.clone())),
                (Some(varies.clone()), Some(varies.clone())),
                (None, Some(varies.clone())),
            ];
            for (scale, add) in cases {
                for (low, high) in [(None, None), (Some(0.0), None), (Some(-1.0), Some(6.0))] {
                    let epilogue = Epilogue {
                        scale: scale.clone(),
                        add: add.clone(),
                        low,
                        high,
                    };
                    let value_of =
                        |operand: &Option<Operand>, i: usize, identity: f32| match operand {
                            None => identity,
                            Some(Operand::Scalar(v)) => *v,
                            Some(Operand::PerRow(v) | Operand::PerColumn(v)) => v[2 + i],
                        };
                    let mut applied = values.clone();
                    epilogue.apply(&mut applied, run, 0.5);
                    for (i, (&value, &got)) in values.iter().zip(&applied).enumerate() {
                        let x = (value + 0.5) * value_of(&scale, i, 1.0) + value_of(&add, i, 0.0);
                        let x = if x < low.unwrap_or(f32::NEG_INFINITY) {
                            low.unwrap()
                        } else {
                            x
                        };
                        let want = if x > high.unwrap_or(f32::INFINITY) {
                            high.unwrap()
                        } else {
                            x
                        };
                        assert_eq!(got.to_bits(), want.to_bits(), "{epilogue:?} [{i}]");
                    }
                }
            }
        }
    }
}
