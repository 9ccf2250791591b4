//! Conversions between Tessera's [`Tensor`] and tract's tensor type. tract's types stay
//! behind this boundary: they are not a stable API.

use crate::{DType, Error, Result, Tensor, TensorData, with_data};
use tract_onnx::prelude::{DatumType, Tensor as TractTensor, tract_ndarray::ArrayD};

/// tract's datum type for a Tessera dtype.
pub fn datum_type(dtype: DType) -> DatumType {
    match dtype {
        DType::F32 => DatumType::F32,
        DType::F64 => DatumType::F64,
        DType::F16 => DatumType::F16,
        DType::I8 => DatumType::I8,
        DType::I16 => DatumType::I16,
        DType::I32 => DatumType::I32,
        DType::I64 => DatumType::I64,
        DType::U8 => DatumType::U8,
        DType::U16 => DatumType::U16,
        DType::U32 => DatumType::U32,
        DType::U64 => DatumType::U64,
        DType::Bool => DatumType::Bool,
    }
}

/// Copies a Tessera tensor into a tract tensor.
pub fn to_tract(tensor: &Tensor) -> Result<TractTensor> {
    into_tract(tensor.clone())
}

/// A tract tensor of a Tessera tensor's elements. tract keeps its elements in its own aligned
/// buffer, so they are copied once (a MaxPool alone over a 3 MB input: ~40% of its run went to
/// this copy and the output's).
pub fn into_tract(tensor: Tensor) -> Result<TractTensor> {
    let (shape, data) = tensor.into_parts();
    with_data!(data, v => {
        ArrayD::from_shape_vec(shape, v)
            .map(TractTensor::from)
            .map_err(|e| Error::Internal(format!("tensor shape: {e}")))
    })
}

/// Copies a tract tensor out, mapping tract's internal types (TDim, quantized) to plain ones.
pub fn from_tract(tensor: &TractTensor) -> Result<Tensor> {
    let dt = tensor.datum_type();
    let plain = match dt.unquantized() {
        DatumType::TDim => tensor.cast_to_dt(DatumType::I64),
        unquantized if unquantized != dt => tensor.cast_to_dt(unquantized),
        _ => Ok(std::borrow::Cow::Borrowed(tensor)),
    }
    .map_err(|e| Error::Internal(format!("cannot convert a {dt:?} tensor: {e}")))?;
    let shape = plain.shape().to_vec();
    macro_rules! copy {
        ($t:ty, $variant:ident) => {
            TensorData::$variant(
                plain
                    .try_as_plain_ram()
                    .and_then(|view| view.as_slice::<$t>().map(<[$t]>::to_vec))
                    .map_err(|e| Error::Internal(format!("tensor layout: {e}")))?,
            )
        };
    }
    let data = match plain.datum_type() {
        DatumType::F32 => copy!(f32, F32),
        DatumType::F64 => copy!(f64, F64),
        DatumType::F16 => copy!(half::f16, F16),
        DatumType::I8 => copy!(i8, I8),
        DatumType::I16 => copy!(i16, I16),
        DatumType::I32 => copy!(i32, I32),
        DatumType::I64 => copy!(i64, I64),
        DatumType::U8 => copy!(u8, U8),
        DatumType::U16 => copy!(u16, U16),
        DatumType::U32 => copy!(u32, U32),
        DatumType::U64 => copy!(u64, U64),
        DatumType::Bool => copy!(bool, Bool),
        other => {
            return Err(Error::UnsupportedDtype {
                dtype: format!("{other:?}"),
                context: "model output".into(),
            });
        }
    };
    Tensor::new(shape, data)
}
