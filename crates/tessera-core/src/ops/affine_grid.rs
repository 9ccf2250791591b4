//! `AffineGrid`: the sampling grid of a batch of affine transforms.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__AffineGrid.html>.
//!
//! Supported: 2-D (`theta` `[N, 2, 3]`, `size` `[N, C, H, W]`) and 3-D (`theta` `[N, 3, 4]`,
//! `size` `[N, C, D, H, W]`) grids of any float type, the `align_corners` attribute (0 or 1).
//! `size` must be a constant (or foldable) int64/int32 vector.
//!
//! Expands to typed tract ops: the normalised base grid `(x, y[, z], 1)` of every output
//! position is a constant `[1, S, 1, k+1]`; it is multiplied with `theta` seen as
//! `[N, 1, k, k+1]` and summed over the last axis, then reshaped to `[N, (D,) H, W, k]`.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::{Reduce, Reducer};
use tract_onnx::tract_hir::internal::*;

/// Builds `AffineGrid`.
pub fn affine_grid(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let align_corners = match node.get_attr_opt::<i64>("align_corners")?.unwrap_or(0) {
        0 => false,
        1 => true,
        other => bail!("AffineGrid: align_corners must be 0 or 1, got {other}"),
    };
    Ok((expand(AffineGrid { align_corners }), vec![]))
}

#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct AffineGrid {
    align_corners: bool,
}

/// `(N, spatial dims)` from the `size` input.
fn parse_size(size: &Tensor) -> TractResult<(usize, Vec<usize>)> {
    let size = size.cast_to::<i64>()?;
    let size = size.try_as_plain_ram()?;
    let size = size.as_slice::<i64>()?;
    ensure!(
        size.len() == 4 || size.len() == 5,
        "AffineGrid: size must hold 4 (2-D) or 5 (3-D) values, got {}",
        size.len()
    );
    ensure!(
        size.iter().all(|&d| d >= 0),
        "AffineGrid: negative size {size:?}"
    );
    Ok((
        size[0] as usize,
        size[2..].iter().map(|&d| d as usize).collect(),
    ))
}

impl AffineGrid {
    /// Normalised coordinate of position `i` on an axis of `len` positions.
    fn coord(&self, i: usize, len: usize) -> f64 {
        if self.align_corners {
            if len <= 1 {
                -1.0
            } else {
                -1.0 + 2.0 * i as f64 / (len - 1) as f64
            }
        } else {
            -1.0 + (2 * i + 1) as f64 / len as f64
        }
    }

    /// `[1, S, 1, k+1]`: `(x, y[, z], 1)` for every position, x running along the last axis.
    fn base_grid(&self, spatial: &[usize]) -> TractResult<Tensor> {
        let k = spatial.len();
        let count: usize = spatial.iter().product();
        let mut data = Vec::with_capacity(count * (k + 1));
        let mut index = vec![0usize; k];
        for _ in 0..count {
            // Coordinates in (x, y, z) order: the reverse of the axes.
            for axis in (0..k).rev() {
                data.push(self.coord(index[axis], spatial[axis]));
            }
            data.push(1.0);
            for axis in (0..k).rev() {
                index[axis] += 1;
                if index[axis] < spatial[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(tract_ndarray::Array4::from_shape_vec((1, count, 1, k + 1), data)?.into_tensor())
    }
}

impl Expansion for AffineGrid {
    fn name(&self) -> StaticName {
        "AffineGrid".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&inputs[0].rank, 3)?;
        s.equals(&inputs[1].rank, 1)?;
        s.given(&inputs[1].value, move |s, size| {
            let (n, spatial) = parse_size(&size)?;
            let k = spatial.len();
            s.equals(&inputs[0].shape[1], k.to_dim())?;
            s.equals(&inputs[0].shape[2], (k + 1).to_dim())?;
            let mut shape: TVec<TDim> = tvec!(n.to_dim());
            shape.extend(spatial.iter().map(|d| d.to_dim()));
            shape.push(k.to_dim());
            s.equals(&outputs[0].shape, ShapeFactoid::from(shape))
        })?;
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let theta = model.outlet_fact(inputs[0])?.clone();
        ensure!(
            theta.datum_type.is_float(),
            "AffineGrid: theta must be floats"
        );
        let size = model
            .outlet_fact(inputs[1])?
            .konst
            .clone()
            .context("AffineGrid: size expected to be a constant")?;
        let (n, spatial) = parse_size(&size)?;
        let k = spatial.len();
        ensure!(
            theta.rank() == 3 && theta.shape[1] == k.to_dim() && theta.shape[2] == (k + 1).to_dim(),
            "AffineGrid: theta must be [N, {k}, {}] for a {k}-D size, got {:?}",
            k + 1,
            theta.shape
        );
        ensure!(
            theta.shape[0] == n.to_dim(),
            "AffineGrid: theta has batch {} but size asks for {n}",
            theta.shape[0]
        );
        let base = self
            .base_grid(&spatial)?
            .cast_to_dt(theta.datum_type)?
            .into_owned();
        let base = model.add_const(format!("{prefix}.base"), base)?;
        let theta = model.wire_node(format!("{prefix}.theta"), AxisOp::Add(1), &[inputs[0]])?[0];
        let prod = model.wire_node(format!("{prefix}.mul"), math::mul(), &[theta, base])?[0];
        let sum = model.wire_node(
            format!("{prefix}.sum"),
            Reduce::new(tvec!(3), Reducer::Sum),
            &[prod],
        )?[0];
        let grid = model.wire_node(format!("{prefix}.rm"), AxisOp::Rm(3), &[sum])?[0];
        let count: usize = spatial.iter().product();
        let grid = model.wire_node(
            format!("{prefix}.reshape"),
            AxisOp::Reshape(
                1,
                tvec!(count.to_dim()),
                spatial.iter().map(|d| d.to_dim()).collect(),
            ),
            &[grid],
        )?[0];
        Ok(tvec!(grid))
    }
}
