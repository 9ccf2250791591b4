//! `LpPool`: the p-norm of each pooling window.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__LpPool.html>.
//!
//! Supported: float inputs in NC(D)HW layout; the attributes `kernel_shape`, `p` (a positive
//! integer, default 2), `strides`, `dilations`, `pads`, `auto_pad` (`NOTSET`, `VALID`,
//! `SAME_UPPER`, `SAME_LOWER`) and `ceil_mode`.
//!
//! Expands to `(SumPool(|x|^p))^(1/p)` with tract's typed sum pool (padding adds zeros, which
//! leave the sum unchanged).

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::cnn::{HirSumPool, PaddingSpec, PoolSpec};
use tract_onnx::tract_hir::ops::nn::DataFormat;

/// Builds `LpPool`.
pub fn lp_pool(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let kernel_shape: TVec<usize> = node.get_attr_tvec("kernel_shape")?;
    let p: i64 = node.get_attr_opt("p")?.unwrap_or(2);
    ensure!(p >= 1, "LpPool: p must be a positive integer, got {p}");
    let padding = padding(node, kernel_shape.len())?;
    let strides: Option<TVec<usize>> = node.get_attr_opt_tvec("strides")?;
    let dilations: Option<TVec<usize>> = node.get_attr_opt_tvec("dilations")?;
    for (what, v) in [("strides", &strides), ("dilations", &dilations)] {
        if let Some(v) = v {
            ensure!(
                v.len() == kernel_shape.len() && v.iter().all(|&x| x > 0),
                "LpPool: {what} must hold one positive value per spatial axis"
            );
        }
    }
    let pool_spec = PoolSpec::new(
        DataFormat::NCHW,
        kernel_shape,
        padding,
        dilations,
        strides,
        0,
        0,
    );
    let sum = HirSumPool::new(pool_spec, false, false);
    Ok((expand(LpPool { p, sum }), vec![]))
}

/// ONNX pool padding: explicit `pads` (begins then ends) or `auto_pad`.
fn padding(node: &NodeProto, spatial: usize) -> TractResult<PaddingSpec> {
    let ceil_mode = match node.get_attr_opt::<i64>("ceil_mode")?.unwrap_or(0) {
        0 => false,
        1 => true,
        other => bail!("LpPool: ceil_mode must be 0 or 1, got {other}"),
    };
    let auto_pad = node.get_attr_opt::<&str>("auto_pad")?.unwrap_or("NOTSET");
    match auto_pad {
        "NOTSET" => {
            let pads: TVec<usize> = node
                .get_attr_opt_tvec("pads")?
                .unwrap_or_else(|| tvec!(0; 2 * spatial));
            ensure!(
                pads.len() == 2 * spatial,
                "LpPool: pads must hold two values per spatial axis"
            );
            Ok(PaddingSpec::ExplicitOnnxPool(
                pads[..spatial].into(),
                pads[spatial..].into(),
                ceil_mode,
            ))
        }
        "VALID" => Ok(PaddingSpec::Valid),
        "SAME_UPPER" => Ok(PaddingSpec::SameUpper),
        "SAME_LOWER" => Ok(PaddingSpec::SameLower),
        other => bail!("LpPool: unsupported auto_pad '{other}'"),
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct LpPool {
    p: i64,
    sum: HirSumPool,
}

impl Expansion for LpPool {
    fn name(&self) -> StaticName {
        "LpPool".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        self.sum.rules(s, inputs, outputs)
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        ensure!(
            fact.datum_type.is_float(),
            "LpPool: input must be a float tensor"
        );
        let rank = fact.rank();
        let scalar = |v: f64| -> TractResult<Tensor> {
            tensor0(v)
                .cast_to_dt(fact.datum_type)?
                .into_owned()
                .broadcast_into_rank(rank)
        };
        let mut wire = inputs[0];
        if self.p == 1 {
            wire = model.wire_node(format!("{prefix}.abs"), math::abs(), &[wire])?[0];
        } else if self.p == 2 {
            wire = model.wire_node(format!("{prefix}.square"), math::square(), &[wire])?[0];
        } else {
            wire = model.wire_node(format!("{prefix}.abs"), math::abs(), &[wire])?[0];
            let p = model.add_const(format!("{prefix}.p"), scalar(self.p as f64)?)?;
            wire = model.wire_node(format!("{prefix}.pow"), math::pow(), &[wire, p])?[0];
        }
        wire = self.sum.wire(&format!("{prefix}.sum"), model, &[wire])?[0];
        if self.p == 2 {
            wire = model.wire_node(format!("{prefix}.sqrt"), math::sqrt(), &[wire])?[0];
        } else if self.p != 1 {
            let inv = model.add_const(format!("{prefix}.inv_p"), scalar(1.0 / self.p as f64)?)?;
            wire = model.wire_node(format!("{prefix}.root"), math::pow(), &[wire, inv])?[0];
        }
        Ok(tvec!(wire))
    }
}
