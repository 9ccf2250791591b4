//! Strided batched matrix product: GEMM calls where the device has a GEMM library and it takes
//! the layouts (f32; f16 is held as f32); else `matmul` (tiled) or `matvec` (one thread per
//! output, any strides and word: a side is thin, or the library cannot take the layout).

use super::{
    Dispatch, Gemm, GemmMatrix, Grid, Kernel, Launch, Operand, StepIo, Target, no_kernel, params,
    shader, u32_param, word,
};
use crate::repr;
use tessera_core::plan::{KernelOp, MatLayout};
use tessera_core::{DType, Result};

/// Output tile side of `matmul`.
const TILE: usize = 32;
/// Most workgroups along one grid axis (WebGPU's default limit); shaders loop over the rest.
const MAX_GROUPS: usize = 65535;
/// Below this many rows or columns a 32x32 tile is mostly idle: one thread per output instead.
const THIN: usize = 4;
/// Most separate GEMM calls a product with uncollapsible batch strides is split into before
/// `matvec` is used instead.
const MAX_GEMM_CALLS: usize = 64;

pub(super) fn encode(op: &KernelOp, io: &StepIo, target: &Target) -> Result<Kernel> {
    if let Some(max_words) = target.max_binding_words
        && io.inputs.get(1).is_some_and(|b| b.len() > max_words)
    {
        return split_columns(op, io, target, max_words);
    }
    encode_within_bindings(op, target)
}

fn encode_within_bindings(op: &KernelOp, target: &Target) -> Result<Kernel> {
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
    if target.gemm
        && w == "f32"
        && let Some(gemms) = gemms(batch, m, k, n, [a, b, c])
    {
        return Ok(Kernel {
            launches: gemms.into_iter().map(Launch::Gemm).collect(),
            scratch_words: 0,
        });
    }
    // The kernels index C with 32-bit words.
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
    // With a GEMM library, what it cannot take goes to `matvec`.
    let dispatch = if target.gemm || m < THIN || n < THIN {
        Dispatch {
            shader: shader("matvec", defines),
            params: p,
            bindings,
            grid: Grid::Threads(outputs),
        }
    } else {
        let groups = |len: usize| u32_param(len.clamp(1, MAX_GROUPS));
        Dispatch {
            shader: shader("matmul", defines),
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

/// The GEMM calls computing the product: one strided-batched call when every operand's
/// batch strides collapse to one stride, else one call per batch element (up to
/// [`MAX_GEMM_CALLS`]); `None` when the library cannot take the layouts.
fn gemms(
    batch: &[usize],
    m: usize,
    k: usize,
    n: usize,
    layouts: [&MatLayout; 3],
) -> Option<Vec<Gemm>> {
    let count: usize = batch.iter().product();
    let operands = [Operand::Input(0), Operand::Input(1), Operand::Output(0)];
    let matrix = |ix: usize, offset: usize, batch_stride: usize| GemmMatrix {
        operand: operands[ix],
        offset,
        batch_stride,
        row_stride: layouts[ix].row_stride,
        col_stride: layouts[ix].col_stride,
    };
    let collapsed: Option<Vec<usize>> = layouts
        .iter()
        .map(|l| collapse(batch, &l.batch_strides))
        .collect();
    let calls: Vec<Gemm> = match collapsed {
        Some(strides) => vec![Gemm {
            m,
            n,
            k,
            batch: count,
            a: matrix(0, layouts[0].offset, strides[0]),
            b: matrix(1, layouts[1].offset, strides[1]),
            c: matrix(2, layouts[2].offset, strides[2]),
        }],
        None if count <= MAX_GEMM_CALLS => (0..count)
            .map(|flat| {
                let at = |ix: usize| {
                    layouts[ix].offset + batch_offset(batch, &layouts[ix].batch_strides, flat)
                };
                Gemm {
                    m,
                    n,
                    k,
                    batch: 1,
                    a: matrix(0, at(0), 0),
                    b: matrix(1, at(1), 0),
                    c: matrix(2, at(2), 0),
                }
            })
            .collect(),
        None => return None,
    };
    calls.iter().all(Gemm::check).then_some(calls)
}

/// One stride stepping through every batch element in row-major order, when `strides` (per
/// batch axis) allow it. Axes of size 1 never step.
fn collapse(batch: &[usize], strides: &[usize]) -> Option<usize> {
    if strides.len() != batch.len() {
        return None;
    }
    let mut stride = None;
    let mut expected: Option<usize> = None;
    for (&dim, &s) in batch.iter().zip(strides).rev() {
        if dim == 1 {
            continue;
        }
        match expected {
            None => stride = Some(s),
            Some(e) if e == s => {}
            Some(_) => return None,
        }
        expected = Some(s * dim);
    }
    Some(stride.unwrap_or(0))
}

/// The word offset of batch element `flat` (row-major over `batch`).
fn batch_offset(batch: &[usize], strides: &[usize], flat: usize) -> usize {
    let mut rest = flat;
    let mut offset = 0;
    for (&dim, &s) in batch.iter().zip(strides).rev() {
        offset += (rest % dim.max(1)) * s;
        rest /= dim.max(1);
    }
    offset
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

/// Splits a MatMul whose B operand exceeds one binding (`max_words`) into blocks of columns of
/// C: block `[n0, n1)` reads only columns `n0..n1` of B, which are contiguous when B is stored
/// column-major (n outermost, as ONNX Gemm `transB` weights and tract's folded FC weights are)
/// and not batched. Each block binds its slice of B through [`Operand::InputRange`].
fn split_columns(op: &KernelOp, io: &StepIo, target: &Target, max_words: usize) -> Result<Kernel> {
    let KernelOp::MatMul {
        dtype,
        out_shape,
        batch,
        m,
        k,
        n,
        a,
        b,
        c,
    } = op
    else {
        return Err(no_kernel(op));
    };
    let too_big = || tessera_core::Error::Prepare {
        backend: target.backend.into(),
        message: format!(
            "MatMul ({m}x{k} by {k}x{n}): its second operand ({} bytes) is larger than this adapter's largest storage binding ({} bytes) and is not laid out column by column, so it cannot be split",
            io.inputs.get(1).map_or(0, |v| v.len() * repr::WORD_BYTES),
            max_words * repr::WORD_BYTES
        ),
    };
    let column_major = b.col_stride >= b.row_stride * k && b.batch_strides.iter().all(|&s| s == 0);
    if !column_major || b.col_stride == 0 {
        return Err(too_big());
    }
    // Columns per block: whole columns within one binding, a multiple of 64 so every block
    // starts on a 256-byte boundary.
    let per_block =
        (max_words.saturating_sub(b.offset % b.col_stride + b.row_stride * k)) / b.col_stride / 64
            * 64;
    if per_block == 0 {
        return Err(too_big());
    }
    let mut kernel = Kernel::default();
    let mut n0 = 0;
    while n0 < *n {
        let n1 = (n0 + per_block).min(*n);
        let start = b.offset + n0 * b.col_stride;
        let aligned = start / 64 * 64;
        let words = (start - aligned) + (n1 - n0 - 1) * b.col_stride + (k - 1) * b.row_stride + 1;
        let block = KernelOp::MatMul {
            dtype: *dtype,
            out_shape: out_shape.clone(),
            batch: batch.clone(),
            m: *m,
            k: *k,
            n: n1 - n0,
            a: a.clone(),
            b: MatLayout {
                offset: start - aligned,
                ..b.clone()
            },
            c: MatLayout {
                offset: c.offset + n0 * c.col_stride,
                ..c.clone()
            },
        };
        for mut launch in encode_within_bindings(&block, target)?.launches {
            let Launch::Kernel(dispatch) = &mut launch else {
                kernel.launches.push(launch);
                continue;
            };
            for operand in &mut dispatch.bindings {
                if *operand == Operand::Input(1) {
                    *operand = Operand::InputRange {
                        input: 1,
                        start: aligned,
                        words,
                    };
                }
            }
            kernel.launches.push(launch);
        }
        n0 = n1;
    }
    Ok(kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_strides_collapse_when_they_step_evenly() {
        assert_eq!(collapse(&[2, 3], &[30, 10]), Some(10));
        assert_eq!(collapse(&[2, 1, 3], &[30, 7, 10]), Some(10));
        assert_eq!(collapse(&[2, 3], &[0, 0]), Some(0));
        assert_eq!(collapse(&[2, 3], &[100, 10]), None);
        assert_eq!(collapse(&[], &[]), Some(0));
        assert_eq!(batch_offset(&[2, 3], &[100, 10], 4), 110);
    }

    #[test]
    fn row_major_and_transposed_layouts_go_to_cublas() {
        let layout = |row_stride, col_stride| MatLayout {
            offset: 0,
            batch_strides: vec![],
            row_stride,
            col_stride,
        };
        let (a, b, c) = (layout(8, 1), layout(1, 8), layout(5, 1));
        let calls = gemms(&[], 3, 8, 5, [&a, &b, &c]).expect("a BLAS takes it");
        assert_eq!(calls.len(), 1);
        // C written with a column stride other than 1 is not a BLAS layout.
        let c_t = layout(1, 3);
        assert!(gemms(&[], 3, 8, 5, [&a, &b, &c_t]).is_none());
    }
}
