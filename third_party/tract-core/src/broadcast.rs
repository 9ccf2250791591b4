//! N-way tensor broadcast
use tract_data::internal::*;

/// Computes a shape, if any, to which all shapes can be broadcasted.
pub fn multi_broadcast<D>(shapes: &[impl AsRef<[D]>]) -> TractResult<TVec<D>>
where
    D: DimLike,
{
    let one = D::one();
    let Some(len) = shapes.iter().map(|shape| shape.as_ref().len()).max() else {
        return Ok(tvec!());
    };
    let mut shape: TVec<D> = tvec!();
    for i in 0..len {
        let mut wanted_size = D::one();
        for shape in shapes {
            let len = shape.as_ref().len();
            let dim = if i < len { &shape.as_ref()[len - i - 1] } else { &one };
            wanted_size = wanted_size.broadcast(dim.clone())?;
        }
        shape.push(wanted_size)
    }
    shape.reverse();
    Ok(shape)
}

/// Tessera: `f(c, a, b)` for each element of `c` with the elements of `a` and `b` broadcast to
/// `c`'s shape, as `Zip::from(c).and_broadcast(a).and_broadcast(b).for_each(f)` does. Zip's
/// walk over the index space was compiled into every caller's closure (each binary op, per
/// element type: 0.65 MB of a browser module); here the walk is compiled once
/// ([`for_each_run`]) and each closure only gets its inner loop. An error, not Zip's panic,
/// when a shape does not broadcast.
pub fn zip3<C, A, B>(
    mut c: ndarray::ArrayViewMutD<C>,
    a: ndarray::ArrayViewD<A>,
    b: ndarray::ArrayViewD<B>,
    mut f: impl FnMut(&mut C, &A, &B),
) -> TractResult<()> {
    let pc = c.as_mut_ptr();
    let a = broadcast_to(&a, c.shape())?;
    let b = broadcast_to(&b, c.shape())?;
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    for_each_run(c.shape(), [c.strides(), a.strides(), b.strides()], &mut |[oc, oa, ob], len, [sc, sa, sb]| {
        // SAFETY: `for_each_run` yields runs of elements inside each view's layout.
        unsafe {
            let (c, a, b) = (pc.offset(oc), pa.offset(oa), pb.offset(ob));
            for i in 0..len as isize {
                f(&mut *c.offset(i * sc), &*a.offset(i * sa), &*b.offset(i * sb));
            }
        }
    });
    Ok(())
}

/// [`zip3`] with one operand: `f(c, a)` for each element of `c`, `a` broadcast to its shape.
pub fn zip2<C, A>(
    mut c: ndarray::ArrayViewMutD<C>,
    a: ndarray::ArrayViewD<A>,
    mut f: impl FnMut(&mut C, &A),
) -> TractResult<()> {
    let pc = c.as_mut_ptr();
    let a = broadcast_to(&a, c.shape())?;
    let pa = a.as_ptr();
    for_each_run(c.shape(), [c.strides(), a.strides()], &mut |[oc, oa], len, [sc, sa]| {
        // SAFETY: `for_each_run` yields runs of elements inside each view's layout.
        unsafe {
            let (c, a) = (pc.offset(oc), pa.offset(oa));
            for i in 0..len as isize {
                f(&mut *c.offset(i * sc), &*a.offset(i * sa));
            }
        }
    });
    Ok(())
}

/// `view` broadcast to `shape` (compiled per element type, not per caller).
fn broadcast_to<'v, T>(
    view: &'v ndarray::ArrayViewD<'_, T>,
    shape: &[usize],
) -> TractResult<ndarray::ArrayViewD<'v, T>> {
    view.broadcast(shape).ok_or_else(|| does_not_broadcast(view.shape(), shape))
}

#[inline(never)]
fn does_not_broadcast(from: &[usize], to: &[usize]) -> TractError {
    format_err!("{from:?} does not broadcast to {to:?}")
}

/// Walks `shape` (every operand's strides given, in elements) in runs along its innermost axis
/// after merging the axes that are contiguous in every operand and leaving out those of length
/// one: `run(offsets, len, strides)` once per run, with each operand's offset of the run's first
/// element and its stride along the run.
fn for_each_run<const N: usize>(
    shape: &[usize],
    strides: [&[isize]; N],
    run: &mut dyn FnMut([isize; N], usize, [isize; N]),
) {
    if shape.contains(&0) {
        return;
    }
    let mut dims: TVec<usize> = tvec!();
    let mut steps: TVec<[isize; N]> = tvec!();
    for (axis, &dim) in shape.iter().enumerate() {
        if dim == 1 {
            continue;
        }
        let step: [isize; N] = std::array::from_fn(|k| strides[k][axis]);
        match (dims.last_mut(), steps.last_mut()) {
            (Some(outer), Some(outer_step))
                if (0..N).all(|k| outer_step[k] == step[k] * dim as isize) =>
            {
                *outer *= dim;
                *outer_step = step;
            }
            _ => {
                dims.push(dim);
                steps.push(step);
            }
        }
    }
    let Some((&len, outer_dims)) = dims.split_last() else {
        return run([0; N], 1, [0; N]);
    };
    let inner_step = steps[dims.len() - 1];
    let mut index: TVec<usize> = tvec![0; outer_dims.len()];
    let mut offsets = [0isize; N];
    loop {
        run(offsets, len, inner_step);
        // The next outer index, odometer-wise; offsets follow.
        let mut axis = outer_dims.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            for k in 0..N {
                offsets[k] += steps[axis][k];
            }
            if index[axis] < outer_dims[axis] {
                break;
            }
            for k in 0..N {
                offsets[k] -= steps[axis][k] * outer_dims[axis] as isize;
            }
            index[axis] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onnx_1() {
        assert_eq!(multi_broadcast(&tvec![tvec![2, 3, 4, 5], tvec![]]).unwrap(), tvec![2, 3, 4, 5])
    }

    #[test]
    fn onnx_2() {
        assert_eq!(multi_broadcast(&tvec![tvec![2, 3, 4, 5], tvec![5]]).unwrap(), tvec![2, 3, 4, 5])
    }

    #[test]
    fn onnx_3() {
        assert_eq!(
            multi_broadcast(&tvec![tvec![4, 5], tvec![2, 3, 4, 5]]).unwrap(),
            tvec![2, 3, 4, 5]
        )
    }

    #[test]
    fn onnx_4() {
        assert_eq!(
            multi_broadcast(&tvec![tvec![1, 4, 5], tvec![2, 3, 4, 1]]).unwrap(),
            tvec![2, 3, 4, 5]
        )
    }

    #[test]
    fn onnx_5() {
        assert_eq!(
            multi_broadcast(&tvec![tvec![3, 4, 5], tvec![2, 1, 1, 1]]).unwrap(),
            tvec![2, 3, 4, 5]
        )
    }
}
