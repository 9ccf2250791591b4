//! ONNX `TensorProto` files (`input_0.pb`, `output_0.pb` in the ONNX test layout).

use super::{Tensor, TensorData, element_count};
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
    // The shape's product must fit before any comparison with the data present: release builds
    // wrap, and a wrapped count of 0 would accept an empty tensor of an absurd shape.
    let count = element_count(&shape).ok_or_else(|| {
        Error::tensor_data(
            None,
            format!(
                "tensor '{}': shape {shape:?} is too large: its element count overflows",
                proto.name
            ),
        )
    })?;
    if !proto.raw_data.is_empty() || count == 0 {
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

    /// Dims are what the file states; the values are what it holds. Every disagreement is an
    /// error, and a dim product that overflows is not taken for 0 (release builds wrap).
    #[test]
    fn hostile_dims_are_errors() {
        let proto = |dims: Vec<i64>, raw: Vec<u8>, floats: Vec<f32>| TensorProto {
            name: "t".into(),
            dims,
            data_type: DType::F32.onnx_code(),
            raw_data: raw,
            float_data: floats,
            ..Default::default()
        };
        let cases = [
            (
                "overflow, no data",
                proto(vec![1 << 32, 1 << 32], vec![], vec![]),
                "too large",
            ),
            (
                "overflow, raw data",
                proto(vec![1 << 32, 1 << 32, 4], vec![0; 4], vec![]),
                "too large",
            ),
            (
                "10^12, raw data",
                proto(vec![1_000_000_000_000], vec![0; 4], vec![]),
                "needs 1000000000000",
            ),
            (
                "10^12, typed data",
                proto(vec![1_000_000_000_000], vec![], vec![1.0]),
                "needs 1000000000000",
            ),
            (
                "2^31 · 2^31",
                proto(vec![1 << 31, 1 << 31], vec![], vec![1.0]),
                "needs 4611686018427387904",
            ),
            (
                "i64::MAX · 2",
                proto(vec![i64::MAX, 2], vec![], vec![1.0]),
                "too large",
            ),
            (
                "truncated raw",
                proto(vec![4], vec![0; 8], vec![]),
                "needs 4",
            ),
            (
                "odd raw bytes",
                proto(vec![1], vec![0; 3], vec![]),
                "whole number",
            ),
            ("negative", proto(vec![-1], vec![0; 4], vec![]), "negative"),
        ];
        for (what, proto, needle) in cases {
            let err = pb_from_bytes(&proto.encode_to_vec())
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{what}: {err}");
        }
        // An empty tensor with a huge but non-overflowing dim holds nothing: fine.
        let empty = pb_from_bytes(&proto(vec![0, 1 << 40], vec![], vec![]).encode_to_vec());
        assert_eq!(empty.unwrap().1.len(), 0);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(pb_from_bytes(&[0xff, 0xff, 0xff, 0x01, 0x02]).is_err());
    }
}
