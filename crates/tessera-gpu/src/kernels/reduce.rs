//! Reductions and normalizations: Reduce (`reduce`), Softmax (`softmax`), RmsNorm
//! (`norm`), Lrn (`lrn`), TopK (`topk`), the LSTM cell's tail (`lstm`) and the discrete Fourier
//! transform along an axis (`dft`).
//!
//! The row kernels (Reduce, Softmax, RmsNorm) see the tensor as rows: one row per element of
//! the reduced shape, holding the elements over the reduced axes. Axes are merged first (runs of
//! kept or reduced axes, size-1 axes dropped), so most rows are one strided run.

use super::{Dispatch, Grid, Kernel, Operand, StepIo, no_kernel, params, shader, u32_param, word};
use crate::repr;
use tessera_core::plan::shapes::{DFT_SHAPES, dft_geometry};
use tessera_core::plan::{KernelOp, ReduceOp};
use tessera_core::{DType, Error, Result};

/// Threads of a row kernel's workgroup.
const GROUP_SIZE: usize = 64;
/// Most workgroups along one grid axis (WebGPU's default limit).
const MAX_GROUPS: usize = 65535;

pub(super) fn encode(op: &KernelOp, io: &StepIo) -> Result<Kernel> {
    match op {
        KernelOp::Dft {
            input_shape,
            axis,
            inverse,
        } => dft(input_shape, *axis, *inverse),
        KernelOp::Reduce {
            op: reducer,
            dtype,
            input_shape,
            axes,
        } => reduce(op, *reducer, *dtype, input_shape, axes),
        KernelOp::Softmax {
            dtype,
            shape,
            axes,
            log,
        } => {
            float(op, *dtype)?;
            row_kernel(
                shader("softmax", vec![]),
                &Rows::new(shape, axes)?,
                u32::from(*log),
            )
        }
        KernelOp::RmsNorm {
            dtype,
            shape,
            axis,
            eps,
        } => {
            float(op, *dtype)?;
            row_kernel(
                shader("norm", vec![]),
                &Rows::new(shape, &[*axis])?,
                eps.to_bits(),
            )
        }
        KernelOp::Lrn {
            dtype,
            shape,
            alpha,
            beta,
            bias,
            size,
        } => {
            float(op, *dtype)?;
            if shape.len() < 2 || *size == 0 {
                return Err(Error::Internal(format!(
                    "Lrn of {shape:?} with size {size}"
                )));
            }
            let total: usize = shape.iter().product();
            if total == 0 {
                return Ok(Kernel::default());
            }
            let mut p = params([total, shape[1], shape[2..].iter().product(), *size])?;
            p.extend([alpha.to_bits(), beta.to_bits(), bias.to_bits()]);
            Ok(Kernel::single(Dispatch {
                shader: shader("lrn", vec![]),
                params: p,
                bindings: vec![Operand::Input(0), Operand::Output(0)],
                grid: Grid::Threads(total),
            }))
        }
        KernelOp::TopK {
            dtype,
            input_shape,
            axis,
            k,
            largest,
        } => top_k(op, *dtype, input_shape, *axis, *k, *largest),
        KernelOp::LstmEpilogue { dtype, hidden } => {
            float(op, *dtype)?;
            let total = io.inputs.get(1).map_or(0, |c| c.len());
            if *hidden == 0 || !total.is_multiple_of(*hidden) {
                return Err(Error::Internal(format!(
                    "LstmEpilogue: a state of {total} values for {hidden} hidden units"
                )));
            }
            if total == 0 {
                return Ok(Kernel::default());
            }
            Ok(Kernel::single(Dispatch {
                shader: shader("lstm", vec![]),
                params: params([total, *hidden])?,
                bindings: vec![
                    Operand::Input(0),
                    Operand::Input(1),
                    Operand::Output(0),
                    Operand::Output(1),
                ],
                grid: Grid::Threads(total),
            }))
        }
        _ => Err(no_kernel(op)),
    }
}

/// Float ops only, like the reference (f16 computes in f32 words).
/// One thread per output pair, each summing `len` products with twiddles computed here in f64:
/// lengths whose `k · n` would overflow a `u32` are refused.
fn dft(input_shape: &[usize], axis: usize, inverse: bool) -> Result<Kernel> {
    let Some((outer, len, inner)) = dft_geometry(input_shape, axis) else {
        return Err(Error::Internal(format!("Dft: {DFT_SHAPES}")));
    };
    if len > u16::MAX as usize {
        return Err(Error::Internal(format!(
            "Dft: an axis of {len} (at most {} on a GPU)",
            u16::MAX
        )));
    }
    let pairs = outer * len * inner / 2;
    let sign = if inverse { 1.0 } else { -1.0 };
    let angles = (0..len).map(|r| sign * std::f64::consts::TAU * r as f64 / len as f64);
    let mut p = params([pairs, len, inner])?;
    p.extend(angles.clone().map(|a| (a.cos() as f32).to_bits()));
    p.extend(angles.map(|a| (a.sin() as f32).to_bits()));
    Ok(Kernel::single(Dispatch {
        shader: shader("dft", vec![]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(pairs),
    }))
}

fn float(op: &KernelOp, dtype: DType) -> Result<()> {
    if matches!(dtype, DType::F32 | DType::F16) {
        Ok(())
    } else {
        Err(no_kernel(op))
    }
}

/// A tensor seen as rows to reduce: `count` rows of `size` elements. Element `j` of row `g` is
/// at `base(g) + offset(j)`, each row-major over merged axes with their element strides.
struct Rows {
    count: usize,
    size: usize,
    kept: Vec<(usize, usize)>,
    reduced: Vec<(usize, usize)>,
}

impl Rows {
    fn new(shape: &[usize], axes: &[usize]) -> Result<Rows> {
        if let Some(bad) = axes.iter().find(|&&a| a >= shape.len()) {
            return Err(Error::Internal(format!(
                "reduction axis {bad} out of range for {shape:?}"
            )));
        }
        let strides = super::strides(shape, false);
        let mut kept: Vec<(usize, usize)> = vec![];
        let mut reduced: Vec<(usize, usize)> = vec![];
        let mut last_reduced = None;
        for (axis, (&dim, &stride)) in shape.iter().zip(&strides).enumerate() {
            if dim == 1 {
                continue;
            }
            let is_reduced = axes.contains(&axis);
            let runs = if is_reduced { &mut reduced } else { &mut kept };
            // Consecutive axes of one kind (size-1 axes between them hold no data) merge
            // into one: the outer stride is the inner one times the inner extent.
            match runs.last_mut() {
                Some(run) if last_reduced == Some(is_reduced) => {
                    *run = (run.0 * dim, stride);
                }
                _ => runs.push((dim, stride)),
            }
            last_reduced = Some(is_reduced);
        }
        Ok(Rows {
            count: kept.iter().map(|r| r.0).product(),
            size: reduced.iter().map(|r| r.0).product(),
            kept,
            reduced,
        })
    }

    /// The shared parameter layout of the row kernels, with `extra` at index 3.
    fn params(&self, lanes: usize, extra: u32) -> Result<Vec<u32>> {
        let mut p = params([self.count, self.size, lanes])?;
        p.push(extra);
        p.extend(params([self.kept.len(), self.reduced.len()])?);
        for runs in [&self.kept, &self.reduced] {
            p.extend(params(runs.iter().map(|r| r.0))?);
            p.extend(params(runs.iter().map(|r| r.1))?);
        }
        Ok(p)
    }
}

/// A row kernel's dispatch: a power-of-two number of lanes per row (up to the workgroup), and
/// enough workgroups for the rows, spread over x and y.
fn row_kernel(shader: super::Shader, rows: &Rows, extra: u32) -> Result<Kernel> {
    if rows.count == 0 {
        return Ok(Kernel::default());
    }
    let lanes = rows.size.clamp(1, GROUP_SIZE).next_power_of_two();
    let blocks = rows.count.div_ceil(GROUP_SIZE / lanes);
    let x = blocks.min(MAX_GROUPS);
    let y = blocks.div_ceil(x).min(MAX_GROUPS);
    u32_param(rows.count * rows.size)?;
    Ok(Kernel::single(Dispatch {
        shader,
        params: rows.params(lanes, extra)?,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Groups([u32_param(x)?, u32_param(y)?, 1]),
    }))
}

fn reduce(
    kernel_op: &KernelOp,
    op: ReduceOp,
    dtype: DType,
    shape: &[usize],
    axes: &[usize],
) -> Result<Kernel> {
    let w = word(dtype)?;
    let float = w == "f32";
    let boolean = dtype == DType::Bool;
    // The reference's type rules: All / Any on bools only, MeanOfSquares on floats only, and
    // no arithmetic on bools.
    let supported = match op {
        ReduceOp::All | ReduceOp::Any => boolean,
        ReduceOp::MeanOfSquares => float,
        ReduceOp::ArgMax { .. } | ReduceOp::ArgMin { .. } => true,
        ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => !boolean,
    };
    if !supported {
        return Err(no_kernel(kernel_op));
    }
    let rows = Rows::new(shape, axes)?;
    let empty = rows.size == 0;
    let (code, out, start) = match op {
        ReduceOp::Sum => (0, w, 0),
        ReduceOp::Prod => (1, w, one(w)),
        ReduceOp::Max => (2, w, lowest(dtype, empty)),
        ReduceOp::Min => (3, w, highest(dtype, empty)),
        ReduceOp::MeanOfSquares => (4, w, 0),
        ReduceOp::ArgMax { last } => (5, "i32", u32::from(last)),
        ReduceOp::ArgMin { last } => (6, "i32", u32::from(last)),
        ReduceOp::All => (7, w, 1),
        ReduceOp::Any => (8, w, 0),
    };
    let arithmetic = matches!(op, ReduceOp::Sum | ReduceOp::Prod);
    let wrap = if arithmetic { repr::wrap(dtype) } else { "" };
    row_kernel(
        shader(
            "reduce",
            vec![
                ("T", w.to_string()),
                ("OUT", out.to_string()),
                ("OP", format!("{code}u")),
                ("FLOAT", float.to_string()),
                ("WRAP", wrap.to_string()),
            ],
        ),
        &rows,
        start,
    )
}

/// 1 in word `w`, as bits.
fn one(w: &str) -> u32 {
    if w == "f32" { 1f32.to_bits() } else { 1 }
}

/// Where Max starts: the lowest value of the type; for an empty row, the reference's result
/// (-inf for floats; integers start at i128::MIN, whose low bits are all 0).
fn lowest(dtype: DType, empty: bool) -> u32 {
    match repr::word(dtype) {
        Some("f32") => f32::NEG_INFINITY.to_bits(),
        _ if empty => 0,
        Some("i32") => i32::MIN as u32,
        _ => 0,
    }
}

/// Where Min starts: the highest value of the type; for an empty row, the reference's result
/// (+inf for floats; integers start at i128::MAX, whose low bits are all 1, narrowed).
fn highest(dtype: DType, empty: bool) -> u32 {
    match (repr::word(dtype), dtype) {
        (Some("f32"), _) => f32::INFINITY.to_bits(),
        (_, DType::U8) if empty => 0xff,
        (_, DType::U16) if empty => 0xffff,
        (_, _) if empty => u32::MAX,
        (Some("i32"), _) => i32::MAX as u32,
        _ => u32::MAX,
    }
}

/// TopK, one thread per input element: each finds its rank along the axis (ties broken by the
/// index, so ranks are distinct) and writes itself there when the rank is below `k`: O(len)
/// work per element, no sort, deterministic.
fn top_k(
    op: &KernelOp,
    dtype: DType,
    shape: &[usize],
    axis: usize,
    k: usize,
    largest: bool,
) -> Result<Kernel> {
    if dtype == DType::Bool {
        return Err(no_kernel(op));
    }
    let w = word(dtype)?;
    let Some(&len) = shape.get(axis) else {
        return Err(Error::Internal(format!(
            "TopK: no axis {axis} in {shape:?}"
        )));
    };
    let inner: usize = shape[axis + 1..].iter().product();
    let n: usize = shape.iter().product();
    if k == 0 || n == 0 {
        return Ok(Kernel::default());
    }
    Ok(Kernel::single(Dispatch {
        shader: shader("topk", vec![("T", w.to_string())]),
        params: params([n, len, inner, k, usize::from(largest)])?,
        bindings: vec![Operand::Input(0), Operand::Output(0), Operand::Output(1)],
        grid: Grid::Threads(n),
    }))
}
