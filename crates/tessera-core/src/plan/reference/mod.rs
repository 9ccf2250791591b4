//! A reference interpreter: runs a [`Plan`] on the host, naively, to check the lowering
//! numerically and to give GPU kernels something to compare with.
//!
//! Every value gets its own host buffer (the memory plan's arena is ignored); a buffer is
//! dropped after the last step that reads it ([`execute`]) or kept ([`execute_traced`], which
//! returns every value for debugging). A view ([`super::Value::alias_of`]) reads its
//! source's buffer with its own shape. Float kernels compute in the plan's type (f16 through
//! f32; transcendental functions through f64, rounded back), integer kernels exactly (through
//! i128, wrapping into the element type). [`KernelOp::Opaque`] steps are an error.
//! [`execute_step`] runs a single step on host tensors: a GPU backend's host fallback.
//!
//! The plan is validated first ([`Plan::validate`]; [`execute_step`]: that step only,
//! [`Plan::validate_step`]), so the index arithmetic of each kernel is in
//! range by construction; indices that come from data (`Gather`) are checked. Matrix products
//! (MatMul, and Conv / ConvTranspose through im2col / col2im) go through `ndarray`'s
//! `general_mat_mul`, which an unoptimised build still compiles optimised (dependencies are
//! built with `opt-level = 3`), so the interpreter stays usable in debug builds.
//!
//! Files: `elementwise.rs` (unary, binary, select, casts, quantization), `matmul.rs`,
//! `conv.rs`, `pool.rs`, `reduce.rs` (reductions and normalizations), `shape.rs` (data
//! movement), `counted.rs` (NonZero, NonMaxSuppression: results sized by their values).

mod conv;
mod counted;
mod elementwise;
mod matmul;
mod pool;
mod reduce;
mod sample;
mod shape;

use super::{KernelOp, Plan, Role, Step};
use crate::{DType, Error, Result, Tensor, TensorData};
use half::f16;
use std::borrow::Cow;

/// The backend name used in errors.
const BACKEND: &str = "reference";

/// An error of the interpreter.
pub(crate) fn fail(message: impl Into<String>) -> Error {
    Error::Run {
        backend: BACKEND.into(),
        message: message.into(),
    }
}

/// A tensor a kernel reads: its shape in the plan and its elements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg<'a> {
    pub shape: &'a [usize],
    pub data: &'a TensorData,
}

impl Arg<'_> {
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
}

/// Runs `plan` on `inputs` (the runtime inputs, in [`Plan::inputs`] order) and returns its
/// outputs in [`Plan::outputs`] order.
pub fn execute(plan: &Plan, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let slots = run(plan, inputs, false)?;
    plan.outputs
        .iter()
        .map(|&id| {
            let value = plan.value(id)?;
            let data = slots[plan.root(id)?.0]
                .clone()
                .ok_or_else(|| fail(format!("output '{}' was never written", value.name)))?;
            Tensor::new(value.shape.clone(), data)
        })
        .collect()
}

/// Runs `plan` on `inputs` like [`execute`], keeping every value: the result has one entry per
/// [`Plan::values`] (indexed by [`super::ValueId`]), with the runtime inputs, the constants,
/// every step's outputs and every view (shaped as the view, its data copied from its source).
/// An entry is `None` only for a value that nothing computes. Meant for debugging: compare a
/// backend's intermediate values with these, step by step. Every value is held at once, so it
/// needs [`super::MemoryPlan::naive_bytes`] of host memory and more.
pub fn execute_traced(plan: &Plan, inputs: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    let mut slots = run(plan, inputs, true)?;
    let mut trace: Vec<Option<Tensor>> = vec![None; plan.values.len()];
    // Views first: they copy their source's data, which the source then moves into its entry.
    for (ix, value) in plan.values.iter().enumerate() {
        if value.alias_of.is_some()
            && let Some(data) = &slots[plan.root(value.id)?.0]
        {
            trace[ix] = Some(Tensor::new(value.shape.clone(), data.clone())?);
        }
    }
    for (ix, value) in plan.values.iter().enumerate() {
        if value.alias_of.is_none()
            && let Some(data) = slots[ix].take()
        {
            trace[ix] = Some(Tensor::new(value.shape.clone(), data)?);
        }
    }
    Ok(trace)
}

/// Runs step `step_index` of `plan` alone on host tensors, for a backend that falls back to the
/// host for a step it cannot run (or to check one kernel): `inputs` are the step's inputs in
/// [`Step::inputs`] order, each with the dtype and element count of its value (the shape is the
/// plan's: a tensor read back flat, or a view's source, is taken as is). Returns the step's
/// outputs, shaped as the plan says. The step is checked against its op's shape rules
/// ([`Plan::validate_step`]), not the whole plan; [`KernelOp::Opaque`] steps are an error.
pub fn execute_step(plan: &Plan, step_index: usize, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    plan.validate_step(step_index)?;
    let step = &plan.steps[step_index];
    if inputs.len() != step.inputs.len() {
        return Err(Error::InputMismatch(format!(
            "step '{}' ({}) takes {} inputs, got {}",
            step.node,
            step.op.name(),
            step.inputs.len(),
            inputs.len()
        )));
    }
    let mut args = Vec::with_capacity(inputs.len());
    for (k, (&id, tensor)) in step.inputs.iter().zip(inputs).enumerate() {
        let value = plan.value(id)?;
        if tensor.dtype() != value.dtype || tensor.len() != value.len() {
            return Err(Error::InputMismatch(format!(
                "input {k} of step '{}' ('{}') should be {}{:?}, got {}{:?}",
                step.node,
                value.name,
                value.dtype,
                value.shape,
                tensor.dtype(),
                tensor.shape()
            )));
        }
        args.push(Arg {
            shape: &value.shape,
            data: tensor.data(),
        });
    }
    let results = run_planned(plan, step, &args)?;
    step.outputs
        .iter()
        .zip(results)
        .map(|(&id, data)| Tensor::new(plan.value(id)?.shape.clone(), data))
        .collect()
}

/// Runs every step of `plan` on `inputs`; returns the data of every value that owns its bytes
/// (views: `None`, read their root's), indexed by value id. Unless `keep_all`, a value's data is
/// dropped after the last step that reads it (inputs, constants and outputs are kept).
fn run(plan: &Plan, inputs: &[Tensor], keep_all: bool) -> Result<Vec<Option<TensorData>>> {
    plan.validate()?;
    if inputs.len() != plan.inputs.len() {
        return Err(Error::InputMismatch(format!(
            "the plan takes {} inputs, got {}",
            plan.inputs.len(),
            inputs.len()
        )));
    }
    let mut slots: Vec<Option<TensorData>> = vec![None; plan.values.len()];
    for (k, (&id, tensor)) in plan.inputs.iter().zip(inputs).enumerate() {
        let value = plan.value(id)?;
        if tensor.shape() != value.shape.as_slice() || tensor.dtype() != value.dtype {
            return Err(Error::InputMismatch(format!(
                "input {k} ('{}') should be {}{:?}, got {}{:?}",
                value.name,
                value.dtype,
                value.shape,
                tensor.dtype(),
                tensor.shape()
            )));
        }
        slots[id.0] = Some(tensor.data().clone());
    }
    for constant in &plan.constants {
        let value = plan.value(constant.value)?;
        let tensor = constant.data.to_tensor()?;
        if tensor.len() != value.len() || tensor.dtype() != value.dtype {
            return Err(fail(format!(
                "constant '{}' holds {}{:?}, the plan says {}{:?}",
                value.name,
                tensor.dtype(),
                tensor.shape(),
                value.dtype,
                value.shape
            )));
        }
        slots[constant.value.0] = Some(tensor.into_parts().1);
    }

    // The last step reading each buffer (outputs are kept to the end).
    let mut last_use = vec![None; plan.values.len()];
    if !keep_all {
        for (ix, step) in plan.steps.iter().enumerate() {
            for &id in &step.inputs {
                last_use[plan.root(id)?.0] = Some(ix);
            }
        }
        for &id in &plan.outputs {
            last_use[plan.root(id)?.0] = None;
        }
    }

    for (ix, step) in plan.steps.iter().enumerate() {
        let results = {
            let mut args = Vec::with_capacity(step.inputs.len());
            for &id in &step.inputs {
                let value = plan.value(id)?;
                let data = slots[plan.root(id)?.0].as_ref().ok_or_else(|| {
                    fail(format!(
                        "step '{}' reads '{}' before it is written",
                        step.node, value.name
                    ))
                })?;
                if data.dtype() != value.dtype || data.len() != value.len() {
                    return Err(fail(format!(
                        "'{}' holds {} {} elements, the plan says {}{:?}",
                        value.name,
                        data.len(),
                        data.dtype(),
                        value.dtype,
                        value.shape
                    )));
                }
                args.push(Arg {
                    shape: &value.shape,
                    data,
                });
            }
            run_planned(plan, step, &args)?
        };
        for (&id, data) in step.outputs.iter().zip(results) {
            slots[plan.root(id)?.0] = Some(data);
        }
        for &id in &step.inputs {
            let root = plan.root(id)?;
            let role = plan.value(root)?.role;
            if last_use[root.0] == Some(ix) && !matches!(role, Role::Input(_) | Role::Constant) {
                slots[root.0] = None;
            }
        }
    }
    Ok(slots)
}

/// Runs `step` of `plan` on `args` (its inputs, checked against the plan) and checks that it
/// made the outputs the plan says, in number, dtype and element count.
fn run_planned(plan: &Plan, step: &Step, args: &[Arg]) -> Result<Vec<TensorData>> {
    let outputs = step
        .outputs
        .iter()
        .map(|&id| plan.value(id).map(|v| (v.shape.as_slice(), v.dtype)))
        .collect::<Result<Vec<_>>>()?;
    let results = run_step(step, args, &outputs).map_err(|e| match e {
        Error::Run { message, .. } => fail(format!(
            "step '{}' ({}): {message}",
            step.node,
            step.op.name()
        )),
        other => other,
    })?;
    if results.len() != step.outputs.len() {
        return Err(fail(format!(
            "step '{}' made {} outputs, the plan has {}",
            step.node,
            results.len(),
            step.outputs.len()
        )));
    }
    for (&id, data) in step.outputs.iter().zip(&results) {
        let value = plan.value(id)?;
        if data.dtype() != value.dtype || data.len() != value.len() {
            return Err(fail(format!(
                "step '{}' wrote {} {} elements into '{}' ({}{:?})",
                step.node,
                data.len(),
                data.dtype(),
                value.name,
                value.dtype,
                value.shape
            )));
        }
    }
    Ok(results)
}

/// Runs one step. `outputs` are the shapes and dtypes the plan gives its outputs.
fn run_step(step: &Step, args: &[Arg], outputs: &[(&[usize], DType)]) -> Result<Vec<TensorData>> {
    let arg = |ix: usize| {
        args.get(ix)
            .copied()
            .ok_or_else(|| fail(format!("missing input {ix}")))
    };
    let out = |ix: usize| {
        outputs
            .get(ix)
            .copied()
            .ok_or_else(|| fail(format!("missing output {ix}")))
    };
    let one = |data: Result<TensorData>| data.map(|d| vec![d]);
    match &step.op {
        KernelOp::Opaque { tract_op } => Err(fail(format!(
            "step '{}' is tract's '{tract_op}', which was not lowered (KernelOp::Opaque); \
             the reference interpreter runs lowered steps only",
            step.node
        ))),
        KernelOp::Unary { op, out_dtype, .. } => one(elementwise::unary(*op, arg(0)?, *out_dtype)),
        KernelOp::Binary {
            op,
            a_shape,
            b_shape,
            out_shape,
            ..
        } => one(elementwise::binary(
            *op,
            arg(0)?,
            arg(1)?,
            a_shape,
            b_shape,
            out_shape,
        )),
        KernelOp::Select {
            cond_shape,
            a_shape,
            b_shape,
            out_shape,
        } => one(elementwise::select(
            arg(0)?,
            arg(1)?,
            arg(2)?,
            cond_shape,
            a_shape,
            b_shape,
            out_shape,
        )),
        KernelOp::Cast { to, .. } => one(elementwise::cast(arg(0)?.data, *to)),
        KernelOp::Quantize {
            inv_scale,
            zero_point,
            to,
        } => one(elementwise::quantize(arg(0)?, *inv_scale, *zero_point, *to)),
        KernelOp::Dequantize {
            scale, zero_point, ..
        } => one(elementwise::dequantize(arg(0)?, *scale, *zero_point)),
        KernelOp::LookupTable { table, dtype } => one(elementwise::lookup(arg(0)?, table, *dtype)),
        KernelOp::TopK {
            axis, k, largest, ..
        } => reduce::top_k(arg(0)?, *axis, *k, *largest),
        KernelOp::NonZero { .. } => counted::non_zero(arg(0)?),
        KernelOp::NonMaxSuppression {
            batches,
            classes,
            boxes,
            center_point_box,
            has_score_threshold,
            ..
        } => counted::non_max_suppression(
            (arg(0)?, arg(1)?, arg(2)?),
            (*batches, *classes, *boxes),
            *center_point_box,
            *has_score_threshold,
        ),
        KernelOp::LstmEpilogue { hidden, .. } => {
            elementwise::lstm_epilogue(arg(0)?, arg(1)?, *hidden)
        }
        KernelOp::MatMul {
            out_shape,
            batch,
            m,
            k,
            n,
            a,
            b,
            c,
            ..
        } => one(matmul::matmul(
            arg(0)?,
            arg(1)?,
            out_shape,
            batch,
            (*m, *k, *n),
            (a, b, c),
        )),
        KernelOp::Conv {
            window,
            in_channels,
            out_channels,
            group,
            ..
        } => one(conv::conv(
            args,
            window,
            *in_channels,
            *out_channels,
            *group,
            out(0)?,
        )),
        KernelOp::ConvTranspose {
            window,
            in_channels,
            out_channels,
            group,
            ..
        } => one(conv::conv_transpose(
            args,
            window,
            *in_channels,
            *out_channels,
            *group,
            out(0)?,
        )),
        KernelOp::MaxPool {
            window, channels, ..
        } => one(pool::max_pool(arg(0)?, window, *channels)),
        KernelOp::SumPool {
            window,
            channels,
            normalize,
            count_include_pad,
            ..
        } => one(pool::sum_pool(
            arg(0)?,
            window,
            *channels,
            *normalize,
            *count_include_pad,
        )),
        KernelOp::Reduce { op, axes, .. } => one(reduce::reduce(*op, arg(0)?, axes)),
        KernelOp::Softmax { axes, log, .. } => one(reduce::softmax(arg(0)?, axes, *log)),
        KernelOp::RmsNorm { axis, eps, .. } => one(reduce::rms_norm(arg(0)?, *axis, *eps)),
        KernelOp::Lrn {
            alpha,
            beta,
            bias,
            size,
            ..
        } => one(reduce::lrn(arg(0)?, *alpha, *beta, *bias, *size)),
        KernelOp::Transpose { perm, .. } => one(shape::transpose(arg(0)?, perm)),
        KernelOp::Slice {
            axis,
            start,
            step: stride,
            ..
        } => one(shape::slice(arg(0)?, *axis, *start, *stride, out(0)?.0)),
        KernelOp::Concat { axis, .. } => one(shape::concat(args, *axis, out(0)?.0)),
        KernelOp::Gather { axis, .. } => one(shape::gather(arg(0)?, arg(1)?, *axis)),
        KernelOp::ScatterNd { reduction, .. } => {
            one(shape::scatter_nd(arg(0)?, arg(1)?, arg(2)?, *reduction))
        }
        KernelOp::GatherNd { batch_dims, .. } => {
            one(shape::gather_nd(arg(0)?, arg(1)?, *batch_dims))
        }
        KernelOp::GatherElements { axis, .. } => {
            one(shape::gather_elements(arg(0)?, arg(1)?, *axis))
        }
        KernelOp::ScatterElements {
            axis, reduction, ..
        } => one(shape::scatter_elements(
            arg(0)?,
            arg(1)?,
            arg(2)?,
            *axis,
            *reduction,
        )),
        KernelOp::Trilu { upper, .. } => one(shape::trilu(arg(0)?, arg(1)?, *upper)),
        KernelOp::OneHot {
            dtype,
            axis,
            depth,
            off,
            on,
            ..
        } => one(shape::one_hot(arg(0)?, *dtype, *axis, *depth, *off, *on)),
        KernelOp::Pad { pads, mode, .. } => one(shape::pad(arg(0)?, pads, mode)),
        KernelOp::Broadcast {
            input_shape,
            output_shape,
            ..
        } => one(shape::broadcast(arg(0)?, input_shape, output_shape)),
        KernelOp::Upsample { scales, .. } => one(shape::upsample(arg(0)?, scales)),
        KernelOp::Tile { multipliers, .. } => one(shape::tile(arg(0)?, multipliers)),
        KernelOp::Dft {
            input_shape,
            axis,
            inverse,
        } => one(sample::dft(arg(0)?, input_shape, *axis, *inverse)),
        KernelOp::GridSample {
            mode,
            padding,
            align_corners,
            ..
        } => one(sample::grid_sample(
            arg(0)?,
            arg(1)?,
            *mode,
            *padding,
            *align_corners,
        )),
        KernelOp::Resample {
            axis,
            window,
            indices,
            weights,
            bias,
            ..
        } => one(shape::resample(
            arg(0)?,
            *axis,
            *window,
            indices,
            weights,
            bias,
        )),
    }
}

/// Runs `$body` with `$T` the Rust element type of `$dtype`.
macro_rules! by_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}
pub(crate) use by_dtype;

/// Runs `$body` with `$T` the compute type of a float dtype (f32 for f32 and f16, f64 for f64),
/// or fails for other types.
macro_rules! by_float {
    ($dtype:expr, $what:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F32 | $crate::DType::F16 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            other => Err($crate::plan::reference::fail(format!(
                "{} is not implemented for {other}",
                $what
            ))),
        }
    };
}
pub(crate) use by_float;

/// A float type the interpreter computes in.
pub(crate) trait Real:
    Copy
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + ndarray::LinalgScalar
{
    const ZERO: Self;
    const ONE: Self;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The elements of a float tensor in this type (f16 converted, others borrowed).
    fn read(data: &TensorData) -> Result<Cow<'_, [Self]>>;
    /// Stores computed values as `dtype` (f16 rounded from f32).
    fn write(values: Vec<Self>, dtype: DType) -> Result<TensorData>;
    /// Applies `f` through f64.
    fn map64(self, f: impl Fn(f64) -> f64) -> Self {
        Self::from_f64(f(self.to_f64()))
    }
    fn is_nan(self) -> bool {
        self.to_f64().is_nan()
    }
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn read(data: &TensorData) -> Result<Cow<'_, [f32]>> {
        match data {
            TensorData::F32(v) => Ok(Cow::Borrowed(v)),
            TensorData::F16(v) => Ok(Cow::Owned(v.iter().map(|x| x.to_f32()).collect())),
            other => Err(fail(format!(
                "expected f32 or f16 data, got {}",
                other.dtype()
            ))),
        }
    }
    fn write(values: Vec<f32>, dtype: DType) -> Result<TensorData> {
        match dtype {
            DType::F32 => Ok(TensorData::F32(values)),
            DType::F16 => Ok(TensorData::F16(
                values.into_iter().map(f16::from_f32).collect(),
            )),
            other => Err(fail(format!("cannot store f32 results as {other}"))),
        }
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn read(data: &TensorData) -> Result<Cow<'_, [f64]>> {
        match data {
            TensorData::F64(v) => Ok(Cow::Borrowed(v)),
            other => Err(fail(format!("expected f64 data, got {}", other.dtype()))),
        }
    }
    fn write(values: Vec<f64>, dtype: DType) -> Result<TensorData> {
        match dtype {
            DType::F64 => Ok(TensorData::F64(values)),
            other => Err(fail(format!("cannot store f64 results as {other}"))),
        }
    }
}

/// The elements of an integer or bool tensor as i128 (bools are 0 / 1); `None` for floats.
pub(crate) fn ints(data: &TensorData) -> Option<Vec<i128>> {
    Some(match data {
        TensorData::I8(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::I16(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::I32(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::I64(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::U8(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::U16(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::U32(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::U64(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::Bool(v) => v.iter().map(|&x| x as i128).collect(),
        TensorData::F32(_) | TensorData::F64(_) | TensorData::F16(_) => return None,
    })
}

/// Stores i128 results as an integer or bool type, wrapping like the element type (bools are
/// `x != 0`).
pub(crate) fn from_ints(values: &[i128], dtype: DType) -> Result<TensorData> {
    Ok(match dtype {
        DType::I8 => TensorData::I8(values.iter().map(|&x| x as i8).collect()),
        DType::I16 => TensorData::I16(values.iter().map(|&x| x as i16).collect()),
        DType::I32 => TensorData::I32(values.iter().map(|&x| x as i32).collect()),
        DType::I64 => TensorData::I64(values.iter().map(|&x| x as i64).collect()),
        DType::U8 => TensorData::U8(values.iter().map(|&x| x as u8).collect()),
        DType::U16 => TensorData::U16(values.iter().map(|&x| x as u16).collect()),
        DType::U32 => TensorData::U32(values.iter().map(|&x| x as u32).collect()),
        DType::U64 => TensorData::U64(values.iter().map(|&x| x as u64).collect()),
        DType::Bool => TensorData::Bool(values.iter().map(|&x| x != 0).collect()),
        other => return Err(fail(format!("{other} is not an integer type"))),
    })
}

/// Row-major strides of a shape, in elements.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// For every element of `out_shape` (row-major), the flat index in a tensor of `shape` that
/// broadcasts to it (`shape` has the same rank; its axes of size 1 repeat).
pub(crate) fn broadcast_map(shape: &[usize], out_shape: &[usize]) -> Result<Vec<usize>> {
    if shape.len() != out_shape.len()
        || shape.iter().zip(out_shape).any(|(&s, &o)| s != o && s != 1)
    {
        return Err(fail(format!(
            "{shape:?} does not broadcast to {out_shape:?}"
        )));
    }
    let len: usize = out_shape.iter().product();
    if shape == out_shape {
        return Ok((0..len).collect());
    }
    let source = strides(shape);
    let steps: Vec<usize> = shape
        .iter()
        .zip(&source)
        .map(|(&d, &s)| if d == 1 { 0 } else { s })
        .collect();
    Ok(map_indices(out_shape, &steps, 0))
}

/// For every element of `shape` (row-major), `offset + sum(coord[i] * steps[i])`.
pub(crate) fn map_indices(shape: &[usize], steps: &[usize], offset: usize) -> Vec<usize> {
    let len: usize = shape.iter().product();
    let mut out = Vec::with_capacity(len);
    if len == 0 {
        return out;
    }
    let rank = shape.len();
    let mut coord = vec![0usize; rank];
    let mut at = offset;
    for _ in 0..len {
        out.push(at);
        // Odometer: bump the last axis, carrying into earlier ones.
        for axis in (0..rank).rev() {
            coord[axis] += 1;
            at += steps[axis];
            if coord[axis] < shape[axis] {
                break;
            }
            at -= steps[axis] * shape[axis];
            coord[axis] = 0;
        }
    }
    out
}

/// `out[i] = data[map[i]]`, for any element type.
pub(crate) fn take(data: &TensorData, map: &[usize]) -> Result<TensorData> {
    by_dtype!(data.dtype(), T => {
        let src = <T as crate::Element>::slice(data)
            .ok_or_else(|| fail("tensor data does not match its dtype"))?;
        let values = map
            .iter()
            .map(|&i| src.get(i).copied())
            .collect::<Option<Vec<T>>>()
            .ok_or_else(|| fail("index out of range"))?;
        Ok(<T as crate::Element>::wrap(values))
    })
}

#[cfg(test)]
mod tests;
