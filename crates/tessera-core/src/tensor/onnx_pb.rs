//! ONNX `TensorProto` files (`input_0.pb`, `output_0.pb` in the ONNX test layout).

use super::{Tensor, TensorData};
use crate::{DType, Error, Result, dtype::onnx_type_name};
use half::f16;
use prost::Message;
use std::path::Path;
use tract_onnx::pb::TensorProto;

/// A tensor read from a `.pb` file, with the name stored in it (may be empty).
pub fn read_pb(path: &Path) -> Result<(String, Tensor)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    pb_from_bytes(&bytes).map_err(|e| match e {
        Error::TensorData { path: None, reason } => Error::tensor_data(Some(path), reason),
        other => other,
    })
}

/// Writes a tensor as a `TensorProto` with `raw_data`.
pub fn write_pb(path: &Path, name: &str, tensor: &Tensor) -> Result<()> {
    std::fs::write(path, pb_to_bytes(name, tensor)).map_err(|e| Error::io(path, e))
}

/// Decodes a serialized `TensorProto`.
pub fn pb_from_bytes(bytes: &[u8]) -> Result<(String, Tensor)> {
    let proto = TensorProto::decode(bytes)
        .map_err(|e| Error::tensor_data(None, format!("not a TensorProto: {e}")))?;
    let tensor = from_proto(&proto)?;
    Ok((proto.name, tensor))
}

/// Encodes a tensor as a serialized `TensorProto`.
pub fn pb_to_bytes(name: &str, tensor: &Tensor) -> Vec<u8> {
    to_proto(name, tensor).encode_to_vec()
}

/// Converts a `TensorProto` held in memory (external data is not resolved here).
pub fn from_proto(proto: &TensorProto) -> Result<Tensor> {
    let dtype = DType::from_onnx_code(proto.data_type).map_err(|name| Error::UnsupportedDtype {
        dtype: name,
        context: format!("tensor '{}'", proto.name),
    })?;
    let shape = proto
        .dims
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| Error::tensor_data(None, format!("negative dimension in {:?}", proto.dims)))?;
    if proto.data_location == Some(1) {
        return Err(Error::tensor_data(None, "tensor data is stored externally"));
    }
    if !proto.raw_data.is_empty() || shape.iter().product::<usize>() == 0 {
        return Tensor::from_le_bytes(dtype, shape, &proto.raw_data);
    }
    let ints = &proto.int32_data;
    let data = match dtype {
        DType::F32 => TensorData::F32(proto.float_data.clone()),
        DType::F64 => TensorData::F64(proto.double_data.clone()),
        DType::I64 => TensorData::I64(proto.int64_data.clone()),
        DType::I32 => TensorData::I32(ints.clone()),
        DType::I16 => TensorData::I16(ints.iter().map(|&x| x as i16).collect()),
        DType::I8 => TensorData::I8(ints.iter().map(|&x| x as i8).collect()),
        DType::U16 => TensorData::U16(ints.iter().map(|&x| x as u16).collect()),
        DType::U8 => TensorData::U8(ints.iter().map(|&x| x as u8).collect()),
        DType::Bool => TensorData::Bool(ints.iter().map(|&x| x != 0).collect()),
        DType::F16 => TensorData::F16(ints.iter().map(|&x| f16::from_bits(x as u16)).collect()),
        DType::U32 => TensorData::U32(proto.uint64_data.iter().map(|&x| x as u32).collect()),
        DType::U64 => TensorData::U64(proto.uint64_data.clone()),
    };
    Tensor::new(shape, data)
}

/// Builds a `TensorProto` holding the tensor in `raw_data`.
pub fn to_proto(name: &str, tensor: &Tensor) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: tensor.shape().iter().map(|&d| d as i64).collect(),
        data_type: tensor.dtype().onnx_code(),
        raw_data: tensor.data().to_le_bytes(),
        ..Default::default()
    }
}

/// The ONNX name of a `TensorProto.DataType` code (re-exported for messages).
pub fn type_name(code: i32) -> &'static str {
    onnx_type_name(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pb_round_trips_every_dtype() {
        for dtype in DType::ALL {
            let bytes: Vec<u8> = (0..4 * dtype.size_of())
                .map(|i| (i % 3 == 0) as u8)
                .collect();
            let tensor = Tensor::from_le_bytes(dtype, vec![4], &bytes).unwrap();
            let (name, back) = pb_from_bytes(&pb_to_bytes("t", &tensor)).unwrap();
            assert_eq!((name.as_str(), &back), ("t", &tensor), "{dtype}");
        }
    }

    #[test]
    fn typed_fields_are_read() {
        let proto = TensorProto {
            dims: vec![2],
            data_type: DType::I64.onnx_code(),
            int64_data: vec![7, -1],
            ..Default::default()
        };
        assert_eq!(
            from_proto(&proto).unwrap(),
            Tensor::from_vec(vec![2], vec![7i64, -1]).unwrap()
        );
    }

    #[test]
    fn unsupported_dtype_is_named() {
        let proto = TensorProto {
            dims: vec![1],
            data_type: 16,
            raw_data: vec![0, 0],
            ..Default::default()
        };
        let err = from_proto(&proto).unwrap_err();
        assert!(err.to_string().contains("bfloat16"), "{err}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(pb_from_bytes(&[0xff, 0xff, 0xff, 0x01, 0x02]).is_err());
    }
}
