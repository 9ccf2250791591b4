//! `CumProd`: cumulative product along an axis.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__CumProd.html>.
//!
//! Supported: the `exclusive` and `reverse` attributes; `x` of type float16, float32,
//! float64, int32, int64, uint32 or uint64 (integers wrap on overflow); `axis` a constant
//! (or foldable) int32/int64 scalar, negative values counting from the end.
//!
//! tract has no product counterpart of its `CumSum` kernel (and a product cannot be had from
//! a sum of logarithms once zeros or negatives appear), so this adds a small typed op with its
//! own `eval`.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_hir::internal::*;

/// Builds `CumProd`.
pub fn cumprod(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let flag = |name: &str| -> TractResult<bool> {
        match node.get_attr_opt::<i64>(name)?.unwrap_or(0) {
            0 => Ok(false),
            1 => Ok(true),
            other => bail!("CumProd: attribute {name} must be 0 or 1, got {other}"),
        }
    };
    let op = CumProdExpansion {
        exclusive: flag("exclusive")?,
        reverse: flag("reverse")?,
    };
    Ok((expand(op), vec![]))
}

#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct CumProdExpansion {
    exclusive: bool,
    reverse: bool,
}

impl Expansion for CumProdExpansion {
    fn name(&self) -> StaticName {
        "CumProd".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2)?;
        check_output_arity(outputs, 1)?;
        s.equals(&inputs[0].datum_type, &outputs[0].datum_type)?;
        s.equals(&inputs[0].shape, &outputs[0].shape)?;
        s.equals(&inputs[1].rank, 0)?;
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let axis = model
            .outlet_fact(inputs[1])?
            .konst
            .as_ref()
            .context("CumProd: axis expected to be a constant")?
            .cast_to_scalar::<i64>()?;
        let rank = model.outlet_fact(inputs[0])?.rank() as i64;
        ensure!(
            (-rank..rank).contains(&axis),
            "CumProd: axis {axis} out of range for rank {rank}"
        );
        let axis = if axis < 0 { axis + rank } else { axis } as usize;
        model.wire_node(
            prefix,
            CumProd {
                axis,
                exclusive: self.exclusive,
                reverse: self.reverse,
            },
            &[inputs[0]],
        )
    }
}

/// Typed cumulative product along `axis`.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct CumProd {
    pub axis: usize,
    pub exclusive: bool,
    pub reverse: bool,
}

/// Multiplication that wraps for integers.
trait Factor: Datum + Copy {
    const ONE: Self;
    fn times(self, other: Self) -> Self;
}

macro_rules! factor_int {
    ($($t:ty),*) => {$(
        impl Factor for $t {
            const ONE: Self = 1;
            fn times(self, other: Self) -> Self { self.wrapping_mul(other) }
        }
    )*};
}
factor_int!(i32, i64, u32, u64);

macro_rules! factor_float {
    ($($t:ty => $one:expr),*) => {$(
        impl Factor for $t {
            const ONE: Self = $one;
            fn times(self, other: Self) -> Self { self * other }
        }
    )*};
}
factor_float!(f32 => 1.0, f64 => 1.0, f16 => f16::ONE);

impl CumProd {
    fn eval_t<T: Factor>(&self, tensor: &mut Tensor) -> TractResult<()> {
        let shape = tensor.shape().to_vec();
        let len = shape[self.axis];
        let inner: usize = shape[self.axis + 1..].iter().product();
        if len == 0 || inner == 0 {
            return Ok(());
        }
        let mut plain = tensor.try_as_plain_ram_mut()?;
        let data = plain.as_slice_mut::<T>()?;
        for block in data.chunks_exact_mut(len * inner) {
            for j in 0..inner {
                let mut acc = T::ONE;
                for step in 0..len {
                    let i = if self.reverse { len - 1 - step } else { step };
                    let x = block[i * inner + j];
                    if self.exclusive {
                        block[i * inner + j] = acc;
                        acc = acc.times(x);
                    } else {
                        acc = acc.times(x);
                        block[i * inner + j] = acc;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Op for CumProd {
    fn name(&self) -> StaticName {
        "CumProd".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "axis: {} exclusive: {} reverse: {}",
            self.axis, self.exclusive, self.reverse
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for CumProd {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut tensor = args_1!(inputs).into_tensor();
        match tensor.datum_type() {
            DatumType::F16 => self.eval_t::<f16>(&mut tensor)?,
            DatumType::F32 => self.eval_t::<f32>(&mut tensor)?,
            DatumType::F64 => self.eval_t::<f64>(&mut tensor)?,
            DatumType::I32 => self.eval_t::<i32>(&mut tensor)?,
            DatumType::I64 => self.eval_t::<i64>(&mut tensor)?,
            DatumType::U32 => self.eval_t::<u32>(&mut tensor)?,
            DatumType::U64 => self.eval_t::<u64>(&mut tensor)?,
            other => bail!("CumProd: unsupported type {other:?}"),
        }
        Ok(tvec!(tensor.into_tvalue()))
    }
}

impl TypedOp for CumProd {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(self.axis < inputs[0].rank());
        Ok(tvec!(inputs[0].datum_type.fact(inputs[0].shape.clone())))
    }

    as_op!();
}
