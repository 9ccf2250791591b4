//! The ops a staged plan counts (`tessera_core::lower::stages`): NonZero (`nonzero`) and
//! NonMaxSuppression (`nms`), each writing its result at the front of a buffer sized for the
//! largest one, and the count a run reads back.
//!
//! Both run in one workgroup, which keeps their results in order with no second launch: fine
//! for the post-processing they do in real models (a mask's positions, a few thousand boxes),
//! not a bulk kernel.

use super::{Dispatch, Grid, Kernel, Operand, no_kernel, params, shader, word};
use tessera_core::plan::KernelOp;
use tessera_core::{DType, Result};

pub(super) fn encode(op: &KernelOp) -> Result<Kernel> {
    match op {
        KernelOp::NonZero { dtype, input_shape } => non_zero(*dtype, input_shape),
        KernelOp::NonMaxSuppression {
            dtype: DType::F32,
            batches,
            classes,
            boxes,
            center_point_box,
            has_score_threshold,
        } => {
            let p = params([
                *batches,
                *classes,
                *boxes,
                usize::from(*center_point_box),
                usize::from(*has_score_threshold),
            ])?;
            Ok(one_workgroup("nms", vec![], p, 3, 3))
        }
        _ => Err(no_kernel(op)),
    }
}

/// NonZero: counts, then walks the input 64 elements at a time, each non-zero element writing
/// its coordinates at its rank among them (a scan of the 64 flags).
fn non_zero(dtype: DType, shape: &[usize]) -> Result<Kernel> {
    let w = word(dtype)?;
    let n: usize = shape.iter().product();
    let mut p = params([n, shape.len()])?;
    p.extend(params(shape.iter().copied())?);
    Ok(one_workgroup(
        "nonzero",
        vec![("T", w.to_string())],
        p,
        1,
        2,
    ))
}

/// One workgroup binding every input, then every output, in order.
fn one_workgroup(
    name: &'static str,
    defines: Vec<(&'static str, String)>,
    params: Vec<u32>,
    inputs: usize,
    outputs: usize,
) -> Kernel {
    let bindings = (0..inputs)
        .map(Operand::Input)
        .chain((0..outputs).map(Operand::Output))
        .collect();
    Kernel::single(Dispatch {
        shader: shader(name, defines),
        params,
        bindings,
        grid: Grid::Groups([1, 1, 1]),
    })
}
