use super::scatter_nd::ScatterReduction;
use crate::internal::*;
use ndarray::*;

#[derive(Debug, Clone, new, Hash, PartialEq, Eq)]
pub struct ScatterElements {
    pub axis: usize,
    pub reduction: ScatterReduction,
}

impl Op for ScatterElements {
    fn name(&self) -> StaticName {
        "ScatterElements".into()
    }

    op_as_typed_op!();
}

/// Where the update at `coords` goes in data: `coords` with the index of the same position on
/// `axis`; an index out of range, or updates reaching past indices or data, is an error.
fn target(
    coords: &mut IxDyn,
    indices: &ArrayViewD<i64>,
    data_shape: &[usize],
    axis: usize,
) -> TractResult<()> {
    let index = *indices.get(&*coords).context("ScatterElements: updates larger than indices")?;
    let len = *data_shape.get(axis).context("ScatterElements: axis out of range")? as i64;
    let resolved = if index < 0 { index + len } else { index };
    ensure!(
        (0..len).contains(&resolved),
        "ScatterElements index {index} out of range for an axis of {len}"
    );
    coords[axis] = resolved as usize;
    ensure!(
        coords.slice().iter().zip(data_shape).all(|(c, d)| c < d) && coords.ndim() == data_shape.len(),
        "ScatterElements: updates larger than data {data_shape:?}"
    );
    Ok(())
}

impl ScatterElements {
    unsafe fn eval_t<T: Datum>(
        data: TValue,
        indices: &ArrayViewD<i64>,
        updates: TValue,
        axis: usize,
    ) -> TractResult<TValue> {
        let mut data = unsafe { data.into_tensor().into_array_unchecked::<T>() };
        let updates_plain = updates.try_as_plain_ram()?;
        let updates_view = unsafe { updates_plain.to_array_view_unchecked::<T>() };
        for (mut coords, value) in updates_view.indexed_iter() {
            target(&mut coords, indices, data.shape(), axis)?;
            data[coords] = value.clone()
        }
        let mut tensor = data.into_tensor();
        unsafe { tensor.set_datum_type(updates.datum_type()) };
        Ok(tensor.into_tvalue())
    }

    unsafe fn eval_t_reduce<T: Datum + PartialOrd + std::ops::AddAssign + std::ops::MulAssign>(
        data: TValue,
        indices: &ArrayViewD<i64>,
        updates: TValue,
        axis: usize,
        reduction: ScatterReduction,
    ) -> TractResult<TValue> {
        let mut data = unsafe { data.into_tensor().into_array_unchecked::<T>() };
        let updates_plain = updates.try_as_plain_ram()?;
        let updates_view = unsafe { updates_plain.to_array_view_unchecked::<T>() };
        for (mut coords, value) in updates_view.indexed_iter() {
            target(&mut coords, indices, data.shape(), axis)?;
            let d = &mut data[coords];
            match reduction {
                ScatterReduction::Add => *d += value.clone(),
                ScatterReduction::Mul => *d *= value.clone(),
                ScatterReduction::Min => {
                    if value < d {
                        *d = value.clone()
                    }
                }
                ScatterReduction::Max => {
                    if value > d {
                        *d = value.clone()
                    }
                }
                ScatterReduction::None => unreachable!(),
            }
        }
        let mut tensor = data.into_tensor();
        unsafe { tensor.set_datum_type(updates.datum_type()) };
        Ok(tensor.into_tvalue())
    }
}

impl TypedOp for ScatterElements {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(
            self.axis < inputs[0].rank() && inputs[0].rank() == inputs[1].rank(),
            "ScatterElements: axis {} and indices of rank {} for data of rank {}",
            self.axis,
            inputs[1].rank(),
            inputs[0].rank()
        );
        Ok(tvec!(inputs[0].datum_type.fact(inputs[0].shape.clone())))
    }
}

impl EvalOp for ScatterElements {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (data, indices, updates) = args_3!(inputs);
        let indices = indices.cast_to::<i64>()?;
        let indices = indices.to_plain_array_view::<i64>()?;
        if data.datum_type() != updates.datum_type() {
            bail!(
                "Data and update must be of the same type, got {:?} and {:?}",
                data.datum_type(),
                updates.datum_type()
            );
        }
        unsafe {
            match self.reduction {
                ScatterReduction::None => {
                    Ok(tvec!(dispatch_datum_by_size!(Self::eval_t(data.datum_type())(
                        data, &indices, updates, self.axis
                    ))?))
                }
                reduction => Ok(tvec!(dispatch_numbers!(Self::eval_t_reduce(data.datum_type())(
                    data, &indices, updates, self.axis, reduction
                ))?)),
            }
        }
    }
}
