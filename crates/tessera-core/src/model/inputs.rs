//! Checks the tensors a caller feeds against what the model declares, before anything runs.

use super::info::{Dim, ModelInfo};
use crate::{DType, Error, Result, Tensor};

/// What the checks read of a fed tensor, wherever it lives (host memory or a device).
pub trait Fed {
    fn dtype(&self) -> DType;
    fn shape(&self) -> &[usize];
}

impl Fed for Tensor {
    fn dtype(&self) -> DType {
        Tensor::dtype(self)
    }

    fn shape(&self) -> &[usize] {
        Tensor::shape(self)
    }
}

impl<T: Fed + ?Sized> Fed for &T {
    fn dtype(&self) -> DType {
        T::dtype(self)
    }

    fn shape(&self) -> &[usize] {
        T::shape(self)
    }
}

/// Orders named inputs as the model declares them, or explains what the model expects.
pub fn order_inputs<T: Fed>(info: &ModelInfo, given: Vec<(String, T)>) -> Result<Vec<T>> {
    let expected = || {
        info.inputs
            .iter()
            .map(|i| format!("'{}': {}", i.name, i.signature()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None)
        .take(info.inputs.len())
        .collect();
    for (name, tensor) in given {
        let Some(index) = info.input_index(&name) else {
            return Err(Error::InputMismatch(format!(
                "the model has no input named '{name}'; it expects {}",
                expected()
            )));
        };
        if slots[index].is_some() {
            return Err(Error::InputMismatch(format!(
                "input '{name}' is given twice"
            )));
        }
        check_input(info, index, &tensor)?;
        slots[index] = Some(tensor);
    }
    let missing: Vec<String> = info
        .inputs
        .iter()
        .zip(&slots)
        .filter(|(_, slot)| slot.is_none())
        .map(|(input, _)| format!("'{}': {}", input.name, input.signature()))
        .collect();
    if !missing.is_empty() {
        return Err(Error::InputMismatch(format!(
            "missing input(s) {}",
            missing.join(", ")
        )));
    }
    Ok(slots.into_iter().flatten().collect())
}

fn check_input(info: &ModelInfo, index: usize, tensor: &impl Fed) -> Result<()> {
    let declared = &info.inputs[index];
    let got = format!("{}{:?}", tensor.dtype(), tensor.shape());
    let mismatch = |what: String| {
        Error::InputMismatch(format!(
            "input '{}': {what}; the model expects {}, got {got}",
            declared.name,
            declared.signature()
        ))
    };
    if tensor.dtype() != declared.dtype {
        return Err(mismatch(format!("wrong dtype {}", tensor.dtype())));
    }
    let Some(dims) = &declared.dims else {
        return Ok(());
    };
    if dims.len() != tensor.shape().len() {
        return Err(mismatch(format!("wrong rank {}", tensor.shape().len())));
    }
    for (axis, (dim, &size)) in dims.iter().zip(tensor.shape()).enumerate() {
        if let Dim::Fixed(fixed) = dim
            && *fixed != size
        {
            return Err(mismatch(format!("dim {axis} is {size}, not {fixed}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::model::info::IoInfo;

    fn info() -> ModelInfo {
        ModelInfo {
            inputs: vec![IoInfo {
                name: "x".into(),
                dtype: DType::F32,
                dims: Some(vec![Dim::Symbol("batch".into()), Dim::Fixed(3)]),
            }],
            outputs: vec![],
            opset: 17,
            producer: String::new(),
            op_histogram: Default::default(),
            quantized: false,
            quantization: None,
        }
    }

    fn f32s(shape: Vec<usize>) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec(shape, vec![0f32; n]).unwrap()
    }

    #[test]
    fn accepts_symbolic_dims() {
        assert_eq!(
            order_inputs(&info(), vec![("x".into(), f32s(vec![5, 3]))])
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn errors_name_what_the_model_expects() {
        let cases = [
            (
                vec![("y".to_string(), f32s(vec![1, 3]))],
                "no input named 'y'",
            ),
            (
                vec![("x".to_string(), f32s(vec![1, 4]))],
                "dim 1 is 4, not 3",
            ),
            (vec![("x".to_string(), f32s(vec![3]))], "wrong rank 1"),
            (
                vec![(
                    "x".to_string(),
                    Tensor::from_vec(vec![1, 3], vec![0i64; 3]).unwrap(),
                )],
                "wrong dtype int64",
            ),
            (vec![], "missing input(s) 'x'"),
        ];
        for (given, needle) in cases {
            let message = order_inputs(&info(), given).unwrap_err().to_string();
            assert!(message.contains(needle), "{message}");
            assert!(message.contains("float32[batch, 3]"), "{message}");
        }
    }
}
