//! Strided batched matrix product.
//!
//! Floats: each batch's `A` and `B` are `ndarray` views with the layout's strides straight into
//! the buffers, multiplied by `general_mat_mul` (accumulating in the plan's type). Integers: a
//! triple loop in i128.

use super::{Arg, Real, by_float, fail, from_ints, ints, map_indices};
use crate::plan::MatLayout;
use crate::{DType, Result, TensorData};
use ndarray::{Array2, ArrayView2, ShapeBuilder};

/// The starting offset of each batch entry of `layout` (row-major over `batch`).
fn batch_offsets(batch: &[usize], layout: &MatLayout) -> Vec<usize> {
    map_indices(batch, &layout.batch_strides, layout.offset)
}

/// A `rows x cols` view of `data` at `offset` with the layout's strides.
pub(super) fn view<'a, T>(
    data: &'a [T],
    offset: usize,
    (rows, cols): (usize, usize),
    layout: &MatLayout,
) -> Result<ArrayView2<'a, T>> {
    // A stride only matters along an axis longer than 1.
    let row_stride = if rows == 1 { 1 } else { layout.row_stride };
    let col_stride = if cols == 1 { 1 } else { layout.col_stride };
    let tail = data
        .get(offset..)
        .ok_or_else(|| fail(format!("offset {offset} out of range")))?;
    ArrayView2::from_shape((rows, cols).strides((row_stride, col_stride)), tail)
        .map_err(|e| fail(format!("matrix layout {layout:?}: {e}")))
}

pub(super) fn matmul(
    a: Arg,
    b: Arg,
    out_shape: &[usize],
    batch: &[usize],
    (m, k, n): (usize, usize, usize),
    (la, lb, lc): (&MatLayout, &MatLayout, &MatLayout),
) -> Result<TensorData> {
    let dtype = a.dtype();
    if b.dtype() != dtype {
        return Err(fail(format!("operands are {dtype} and {}", b.dtype())));
    }
    let len: usize = out_shape.iter().product();
    let (oa, ob, oc) = (
        batch_offsets(batch, la),
        batch_offsets(batch, lb),
        batch_offsets(batch, lc),
    );
    // Where element (row, col) of one output matrix goes, relative to its batch offset.
    let c_index = |row: usize, col: usize| row * lc.row_stride + col * lc.col_stride;
    if dtype.is_float() {
        return by_float!(dtype, "MatMul", T => {
            let (x, y) = (T::read(a.data)?, T::read(b.data)?);
            let mut out = vec![T::ZERO; len];
            for ((&ao, &bo), &co) in oa.iter().zip(&ob).zip(&oc) {
                let av = view(&x, ao, (m, k), la)?;
                let bv = view(&y, bo, (k, n), lb)?;
                let mut c = Array2::<T>::zeros((m, n));
                ndarray::linalg::general_mat_mul(T::ONE, &av, &bv, T::ZERO, &mut c);
                for ((row, col), &v) in c.indexed_iter() {
                    let slot = out
                        .get_mut(co + c_index(row, col))
                        .ok_or_else(|| fail("C layout out of range"))?;
                    *slot = v;
                }
            }
            T::write(out, dtype)
        });
    }
    let (x, y) = (
        ints(a.data).ok_or_else(|| fail("not integers"))?,
        ints(b.data).ok_or_else(|| fail("not integers"))?,
    );
    let at = |data: &[i128], i: usize| {
        data.get(i)
            .copied()
            .ok_or_else(|| fail("layout out of range"))
    };
    let mut out = vec![0i128; len];
    for ((&ao, &bo), &co) in oa.iter().zip(&ob).zip(&oc) {
        for row in 0..m {
            for col in 0..n {
                let mut acc = 0i128;
                for i in 0..k {
                    let xa = at(&x, ao + row * la.row_stride + i * la.col_stride)?;
                    let yb = at(&y, bo + i * lb.row_stride + col * lb.col_stride)?;
                    acc = acc.wrapping_add(xa.wrapping_mul(yb));
                }
                *out.get_mut(co + c_index(row, col))
                    .ok_or_else(|| fail("C layout out of range"))? = acc;
            }
        }
    }
    if dtype == DType::Bool {
        return Err(fail("MatMul on bool"));
    }
    from_ints(&out, dtype)
}
