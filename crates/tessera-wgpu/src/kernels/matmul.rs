//! Strided batched matrix product (`matmul.wgsl`, tiled; `matvec.wgsl` when a side is tiny).

use super::{Dispatch, Grid, Kernel, Operand, StepIo, no_kernel, params, shader, u32_param, word};
use crate::repr;
use tessera_core::plan::{KernelOp, MatLayout};
use tessera_core::{DType, Result};

const MATMUL: &str = include_str!("../../../../shaders/wgsl/matmul.wgsl");
const MATVEC: &str = include_str!("../../../../shaders/wgsl/matvec.wgsl");

/// Output tile side of `matmul.wgsl`.
const TILE: usize = 32;
/// Most workgroups along one grid axis (WebGPU's default limit); shaders loop over the rest.
const MAX_GROUPS: usize = 65535;
/// Below this many rows or columns a 32x32 tile is mostly idle: one thread per output instead.
const THIN: usize = 4;

pub(super) fn encode(op: &KernelOp, _io: &StepIo) -> Result<Kernel> {
    let KernelOp::MatMul {
        dtype,
        batch,
        m,
        k,
        n,
        a,
        b,
        c,
        ..
    } = op
    else {
        return Err(no_kernel(op));
    };
    // The reference rejects bool products; every other type has a word.
    if *dtype == DType::Bool {
        return Err(no_kernel(op));
    }
    let w = word(*dtype)?;
    let (m, k, n) = (*m, *k, *n);
    let count: usize = batch.iter().product();
    let outputs = count * m * n;
    if outputs == 0 {
        return Ok(Kernel::default());
    }
    // The shaders index C with 32-bit words.
    u32_param(outputs)?;
    let mut p = params([m, k, n, count, batch.len()])?;
    for layout in [a, b, c] {
        p.extend(params([
            layout.offset,
            layout.row_stride,
            layout.col_stride,
        ])?);
    }
    p.extend(params(batch.iter().copied())?);
    for layout in [a, b, c] {
        p.extend(batch_strides(layout, batch.len())?);
    }
    let defines = vec![
        ("T", w.to_string()),
        ("WRAP", repr::wrap(*dtype).to_string()),
    ];
    let bindings = vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)];
    let dispatch = if m < THIN || n < THIN {
        Dispatch {
            shader: shader("matvec.wgsl", MATVEC, defines),
            params: p,
            bindings,
            grid: Grid::Threads(outputs),
        }
    } else {
        let groups = |len: usize| u32_param(len.clamp(1, MAX_GROUPS));
        Dispatch {
            shader: shader("matmul.wgsl", MATMUL, defines),
            params: p,
            bindings,
            grid: Grid::Groups([
                groups(n.div_ceil(TILE))?,
                groups(m.div_ceil(TILE))?,
                groups(count)?,
            ]),
        }
    };
    Ok(Kernel::single(dispatch))
}

/// The layout's batch strides as parameters (exactly one per batch axis).
fn batch_strides(layout: &MatLayout, rank: usize) -> Result<Vec<u32>> {
    if layout.batch_strides.len() != rank {
        return Err(tessera_core::Error::Internal(format!(
            "MatMul layout has {} batch strides for {rank} batch axes",
            layout.batch_strides.len()
        )));
    }
    params(layout.batch_strides.iter().copied())
}
