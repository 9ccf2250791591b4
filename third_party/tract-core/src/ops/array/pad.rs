use crate::internal::*;

/// How a padded region is filled. A `Constant` value carries a single element
/// in the datum type the model builder gave it, f32 for a float graph, and no
/// pass retypes it: a consumer casts it to the datum type of the tensor it pads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PadMode {
    Constant(Arc<Tensor>),
    Reflect,
    Edge,
}

impl Default for PadMode {
    fn default() -> PadMode {
        PadMode::Constant(Arc::new(0.0f32.into()))
    }
}

#[derive(Debug, Clone, new, Default, Hash, PartialEq, Eq)]
pub struct Pad {
    pub pads: Vec<(usize, usize)>,
    pub mode: PadMode,
}

impl Pad {
    fn eval_t<T>(&self, input_tensor: TValue) -> TractResult<TValue>
    where
        T: Copy + Datum,
    {
        use tract_ndarray::*;
        ensure!(self.pads.len() == input_tensor.rank(), "Pad: {} pads for rank {}", self.pads.len(), input_tensor.rank());
        // ONNX's negative pads crop; they arrive here wrapped (`-1 as usize`).
        if self.pads.iter().any(|&(a, b)| (a as isize) < 0 || (b as isize) < 0) {
            ensure!(
                matches!(self.mode, PadMode::Constant(_)),
                "Pad: negative pads (crops) are only supported in constant mode"
            );
            let mut cropped = input_tensor.to_plain_array_view::<T>()?;
            for (ax, &(a, b)) in self.pads.iter().enumerate() {
                let (a, b) = (a as isize, b as isize);
                let dim = cropped.shape()[ax] as isize;
                let (start, end) = ((-a).max(0), dim - (-b).max(0));
                ensure!(start <= end, "Pad: pads ({a}, {b}) crop more than axis #{ax} holds ({dim})");
                cropped.slice_axis_inplace(Axis(ax), Slice::from(start..end));
            }
            let mut cropped = cropped.to_owned().into_tensor();
            unsafe { cropped.set_datum_type(input_tensor.datum_type()) };
            let pads = self.pads.iter().map(|&(a, b)| ((a as isize).max(0) as usize, (b as isize).max(0) as usize)).collect();
            return Pad { pads, mode: self.mode.clone() }.eval_t::<T>(cropped.into_tvalue());
        }
        if matches!(self.mode, PadMode::Reflect | PadMode::Edge) {
            for (ax, (&dim, &(bef, aft))) in input_tensor.shape().iter().zip(&self.pads).enumerate() {
                if bef + aft == 0 {
                    continue;
                }
                ensure!(dim > 0, "{:?} padding of the empty axis #{ax}", self.mode);
                if self.mode == PadMode::Reflect {
                    ensure!(
                        bef < dim && aft < dim,
                        "Reflect pads ({bef}, {aft}) must be shorter than axis #{ax} ({dim})"
                    );
                }
            }
        }
        let input = input_tensor.to_plain_array_view::<T>()?;
        let output_shape: Vec<usize> =
            input.shape().iter().zip(self.pads.iter()).map(|(&d, &(a, b))| d + a + b).collect();
        let element = match &self.mode {
            PadMode::Constant(f) => f.cast_to_scalar::<T>()?,
            _ => T::default(),
        };
        let mut output = ArrayD::<T>::from_elem(output_shape, element);
        let slice_spec: Vec<SliceInfoElem> = self
            .pads
            .iter()
            .map(|&(a, b)| SliceInfoElem::Slice {
                start: a as isize,
                end: if b != 0 { Some(-(b as isize)) } else { None },
                step: 1,
            })
            .collect();
        let slice_info = SliceInfo::<_, IxDyn, IxDyn>::try_from(slice_spec).unwrap();
        output.slice_mut(slice_info.as_ref()).assign(&input);
        if self.mode == PadMode::Reflect || self.mode == PadMode::Edge {
            for (ax, &(bef, aft)) in self.pads.iter().enumerate() {
                let axis = Axis(ax);
                let dim = output.shape()[ax];
                {
                    let (mut pad, data) = output.view_mut().split_at(axis, bef);
                    for i in 0..bef {
                        let mut target = pad.slice_axis_mut(axis, Slice::from(i..i + 1));
                        let source_slice = match self.mode {
                            PadMode::Edge => 0,
                            PadMode::Reflect => bef - i,
                            _ => panic!(),
                        };
                        let source =
                            data.slice_axis(axis, Slice::from(source_slice..source_slice + 1));
                        target.assign(&source);
                    }
                }
                {
                    let (data, mut pad) = output.view_mut().split_at(axis, dim - aft);
                    for i in 0..aft {
                        let mut target = pad.slice_axis_mut(axis, Slice::from(i..i + 1));
                        let source_slice = match self.mode {
                            PadMode::Edge => dim - aft - 1,
                            PadMode::Reflect => dim - aft - 2 - i,
                            _ => panic!(),
                        };
                        let source =
                            data.slice_axis(axis, Slice::from(source_slice..source_slice + 1));
                        target.assign(&source);
                    }
                }
            }
        }
        let mut output = output.into_tensor();
        unsafe { output.set_datum_type(input_tensor.datum_type()) }
        Ok(output.into_tvalue())
    }
}

impl Op for Pad {
    fn name(&self) -> StaticName {
        "Pad".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("Mode: {:?}, pads: {:?})", self.mode, self.pads,)])
    }

    op_as_typed_op!();
}

impl EvalOp for Pad {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        Ok(tvec!(dispatch_numbers!(Self::eval_t(input.datum_type())(self, input))?))
    }
}

impl TypedOp for Pad {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let mut fact = inputs[0].without_value();
        if self.pads.len() != fact.rank() {
            bail!("Inconsistent pad: input of rank {}, pads are: {:?}", fact.rank(), self.pads);
        }
        for (ix, (b, e)) in self.pads.iter().enumerate() {
            fact.shape.set(ix, fact.shape[ix].clone() + *b + *e);
        }
        Ok(tvec!(fact))
    }

    fn input_roi(
        &self,
        model: &TypedModel,
        node: &TypedNode,
    ) -> TractResult<Option<TVec<Option<TDim>>>> {
        let output_fact = model.outlet_fact(OutletId::new(node.id, 0))?;
        rule_if_some!(roi = &output_fact.region_of_interest);
        // For each padded axis, substitute 🎯axis → 🎯axis - before
        let mut input_roi = roi.clone();
        for (axis, &(before, _)) in self.pads.iter().enumerate() {
            if before == 0 {
                continue;
            }
            if let Some(sym) = input_roi
                .symbols()
                .into_iter()
                .find(|s| crate::ops::logic::sym_to_coord_axis(s) == Some(axis))
            {
                let shifted = TDim::Sym(sym.clone()) - TDim::Val(before as i64);
                input_roi = input_roi.substitute(&sym, &shifted).unwrap_or(input_roi);
            }
        }
        Ok(Some(tvec![Some(input_roi)]))
    }

    fn axes_mapping(
        &self,
        inputs: &[&TypedFact],
        outputs: &[&TypedFact],
    ) -> TractResult<AxesMapping> {
        let mut result = AxesMapping::disconnected(inputs, outputs)?;
        for (ix, pads) in self.pads.iter().enumerate() {
            if pads == &(0, 0) {
                result = result.linking((InOut::In(0), ix), (InOut::Out(0), ix))?;
            }
        }
        Ok(result)
    }

    fn change_axes(
        &self,
        model: &TypedModel,
        node: &TypedNode,
        io: InOut,
        change: &AxisOp,
    ) -> TractResult<Option<AxisChangeConsequence>> {
        let mut new_op = self.clone();
        if let (InOut::In(0), AxisOp::Rm(ix)) = (io, change)
            && new_op.pads.remove(*ix) == (0, 0)
        {
            return Ok(Some(AxisChangeConsequence::new(
                model,
                node,
                Some(Box::new(new_op)),
                change,
            )));
        }
        if let (InOut::In(0), AxisOp::Add(ix)) = (io, change) {
            new_op.pads.insert(*ix, (0, 0));
            return Ok(Some(AxisChangeConsequence::new(
                model,
                node,
                Some(Box::new(new_op)),
                change,
            )));
        }
        Ok(None)
    }

    fn declutter(
        &self,
        model: &TypedModel,
        node: &TypedNode,
    ) -> TractResult<Option<TypedModelPatch>> {
        if self.pads.iter().all(|p| p.0 == 0 && p.1 == 0) {
            TypedModelPatch::shunt_one_op(model, node)
        } else {
            Ok(None)
        }
    }
}
