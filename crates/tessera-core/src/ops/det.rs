//! `Det`: determinants of square matrices.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__Det.html>.
//!
//! Supported: float16, float32 and float64 inputs of shape `[*, M, M]` (the output is `[*]`).
//!
//! tract has no determinant, so this is a typed op with its own `eval`: an LU decomposition
//! with partial pivoting, carried out in float64 whatever the element type.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_hir::internal::*;

/// Builds `Det`.
pub fn det(
    _ctx: &ParsingContext,
    _node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok((expand(DetExpansion), vec![]))
}

#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct DetExpansion;

impl Expansion for DetExpansion {
    fn name(&self) -> StaticName {
        "Det".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].rank, inputs[0].rank.bex() - 2)?;
        s.given(&inputs[0].shape, move |s, shape| {
            ensure!(shape.len() >= 2, "Det: input must have rank >= 2");
            s.equals(
                &outputs[0].shape,
                ShapeFactoid::from(&shape[..shape.len() - 2]),
            )
        })?;
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        model.wire_node(prefix, Det, inputs)
    }
}

/// Typed determinant over the last two axes.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct Det;

/// Determinant of the row-major `m`×`m` matrix `a` (overwritten).
fn lu_det(a: &mut [f64], m: usize) -> f64 {
    let mut det = 1.0;
    for col in 0..m {
        let pivot = (col..m)
            .max_by(|&i, &j| a[i * m + col].abs().total_cmp(&a[j * m + col].abs()))
            .unwrap_or(col);
        if a[pivot * m + col] == 0.0 {
            return 0.0;
        }
        if pivot != col {
            for k in 0..m {
                a.swap(pivot * m + k, col * m + k);
            }
            det = -det;
        }
        let p = a[col * m + col];
        det *= p;
        for row in col + 1..m {
            let f = a[row * m + col] / p;
            if f != 0.0 {
                for k in col..m {
                    a[row * m + k] -= f * a[col * m + k];
                }
            }
        }
    }
    det
}

impl Op for Det {
    fn name(&self) -> StaticName {
        "Det".into()
    }

    op_as_typed_op!();
}

impl EvalOp for Det {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let dt = input.datum_type();
        ensure!(dt.is_float(), "Det: unsupported type {dt:?}");
        let shape = input.shape();
        ensure!(shape.len() >= 2, "Det: input must have rank >= 2");
        let m = shape[shape.len() - 1];
        ensure!(
            shape[shape.len() - 2] == m,
            "Det: matrices must be square, got {shape:?}"
        );
        let values = input.cast_to::<f64>()?;
        let values = values.try_as_plain_ram()?;
        let values = values.as_slice::<f64>()?;
        let out_shape = &shape[..shape.len() - 2];
        let dets: Vec<f64> = if m == 0 {
            vec![1.0; out_shape.iter().product()]
        } else {
            values
                .chunks_exact(m * m)
                .map(|matrix| lu_det(&mut matrix.to_vec(), m))
                .collect()
        };
        let out = tract_ndarray::ArrayD::from_shape_vec(out_shape, dets)?.into_tensor();
        Ok(tvec!(out.cast_to_dt(dt)?.into_owned().into_tvalue()))
    }
}

impl TypedOp for Det {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let shape = &inputs[0].shape;
        ensure!(shape.rank() >= 2, "Det: input must have rank >= 2");
        ensure!(
            inputs[0].datum_type.is_float(),
            "Det: unsupported type {:?}",
            inputs[0].datum_type
        );
        let out: TVec<TDim> = shape.iter().take(shape.rank() - 2).cloned().collect();
        Ok(tvec!(inputs[0].datum_type.fact(out)))
    }

    as_op!();
}
