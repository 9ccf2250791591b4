//! [`Tensor`]: a dense, row-major, host-side array, and its file formats
//! (numpy `.npy`/`.npz` in [`npy`], ONNX `TensorProto` `.pb` in [`onnx_pb`]).

pub mod npy;
pub mod npy_header;
pub mod onnx_pb;

use crate::{DType, Error, Result};
use half::f16;
use std::borrow::Cow;
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// The elements of a tensor, one vector type per [`DType`].
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a [`TensorData`].
#[macro_export]
macro_rules! with_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            $crate::TensorData::F32($v) => $body,
            $crate::TensorData::F64($v) => $body,
            $crate::TensorData::F16($v) => $body,
            $crate::TensorData::I8($v) => $body,
            $crate::TensorData::I16($v) => $body,
            $crate::TensorData::I32($v) => $body,
            $crate::TensorData::I64($v) => $body,
            $crate::TensorData::U8($v) => $body,
            $crate::TensorData::U16($v) => $body,
            $crate::TensorData::U32($v) => $body,
            $crate::TensorData::U64($v) => $body,
            $crate::TensorData::Bool($v) => $body,
        }
    };
}

/// A Rust element type that a [`Tensor`] can hold.
pub trait Element: Copy + Send + Sync + 'static {
    /// Its [`DType`].
    const DTYPE: DType;
    /// Wraps a vector of this type.
    fn wrap(v: Vec<Self>) -> TensorData;
    /// Borrows the vector if `data` holds this type.
    fn slice(data: &TensorData) -> Option<&[Self]>;
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn wrap(v: Vec<Self>) -> TensorData {
                TensorData::$variant(v)
            }
            fn slice(data: &TensorData) -> Option<&[Self]> {
                match data {
                    TensorData::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
element!(f32, F32);
element!(f64, F64);
element!(f16, F16);
element!(i8, I8);
element!(i16, I16);
element!(i32, I32);
element!(i64, I64);
element!(u8, U8);
element!(u16, U16);
element!(u32, U32);
element!(u64, U64);
element!(bool, Bool);

impl TensorData {
    /// The element type held.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::F16(_) => DType::F16,
            TensorData::I8(_) => DType::I8,
            TensorData::I16(_) => DType::I16,
            TensorData::I32(_) => DType::I32,
            TensorData::I64(_) => DType::I64,
            TensorData::U8(_) => DType::U8,
            TensorData::U16(_) => DType::U16,
            TensorData::U32(_) => DType::U32,
            TensorData::U64(_) => DType::U64,
            TensorData::Bool(_) => DType::Bool,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_data!(self, v => v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decodes little-endian bytes (the layout of `.npy` bodies and ONNX `raw_data`).
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Result<TensorData> {
        TensorData::from_le_bytes_with(dtype, bytes.len(), |elements| {
            elements.copy_from_slice(bytes)
        })
    }

    /// Elements from `byte_len` little-endian bytes that `fill` writes straight into their
    /// memory (a slice of exactly `byte_len` bytes): one copy from a buffer Rust cannot borrow,
    /// such as a JS typed array, with no staging vector.
    pub fn from_le_bytes_with(
        dtype: DType,
        byte_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<TensorData> {
        if !byte_len.is_multiple_of(dtype.size_of()) {
            return Err(Error::tensor_data(
                None,
                format!("{byte_len} bytes is not a whole number of {dtype} elements"),
            ));
        }
        Ok(match dtype {
            DType::F32 => TensorData::F32(decode_le(byte_len, fill)),
            DType::F64 => TensorData::F64(decode_le(byte_len, fill)),
            DType::F16 => TensorData::F16(decode_le(byte_len, fill)),
            DType::I8 => TensorData::I8(decode_le(byte_len, fill)),
            DType::I16 => TensorData::I16(decode_le(byte_len, fill)),
            DType::I32 => TensorData::I32(decode_le(byte_len, fill)),
            DType::I64 => TensorData::I64(decode_le(byte_len, fill)),
            DType::U8 => TensorData::U8(decode_le(byte_len, fill)),
            DType::U16 => TensorData::U16(decode_le(byte_len, fill)),
            DType::U32 => TensorData::U32(decode_le(byte_len, fill)),
            DType::U64 => TensorData::U64(decode_le(byte_len, fill)),
            DType::Bool => TensorData::Bool(
                decode_le::<u8>(byte_len, fill)
                    .into_iter()
                    .map(|b| b != 0)
                    .collect(),
            ),
        })
    }

    /// Encodes as little-endian bytes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.as_le_bytes().into_owned()
    }

    /// The elements as little-endian bytes: their own memory on a little-endian target (every
    /// target Tessera ships), a copy for booleans and on big-endian targets.
    pub fn as_le_bytes(&self) -> Cow<'_, [u8]> {
        match self {
            TensorData::Bool(v) => Cow::Owned(v.iter().map(|&b| b as u8).collect()),
            _ => with_data!(self, v => encode_le(v)),
        }
    }

    /// Every element widened to f64 (booleans as 0/1), for comparisons and summaries.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            TensorData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::F64(v) => v.clone(),
            TensorData::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
            TensorData::I8(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I16(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U8(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U16(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
        }
    }
}

/// The number of elements of `shape`, or `None` when the product of its non-zero dims does not
/// fit in `isize` (ndarray's rule, which tract follows: a zero dim empties the tensor, but the
/// other dims must still be sizes a tensor can have). Every shape product taken from outside
/// (files, requests, `--dim`) goes through this: release builds wrap on overflow, and a wrapped
/// count would pass checks it should fail.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    let non_zero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize)?;
    Some(if shape.contains(&0) { 0 } else { non_zero })
}

/// The byte size of `shape` elements of `dtype`, or `None` when it does not fit in `usize`.
pub fn byte_count(dtype: DType, shape: &[usize]) -> Option<usize> {
    element_count(shape)?.checked_mul(dtype.size_of())
}

fn too_large(shape: &[usize]) -> Error {
    Error::tensor_data(
        None,
        format!("shape {shape:?} is too large: its element count overflows"),
    )
}

fn count_mismatch(shape: &[usize], expected: usize, got: usize) -> Error {
    Error::tensor_data(
        None,
        format!("shape {shape:?} needs {expected} elements, got {got}"),
    )
}

/// A dense row-major tensor in host memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: TensorData,
}

impl Tensor {
    /// Builds a tensor, checking that the element count matches the shape.
    pub fn new(shape: Vec<usize>, data: TensorData) -> Result<Tensor> {
        let expected = element_count(&shape).ok_or_else(|| too_large(&shape))?;
        if expected != data.len() {
            return Err(count_mismatch(&shape, expected, data.len()));
        }
        Ok(Tensor { shape, data })
    }

    /// Builds a tensor from a typed vector.
    pub fn from_vec<T: Element>(shape: Vec<usize>, values: Vec<T>) -> Result<Tensor> {
        Tensor::new(shape, T::wrap(values))
    }

    /// A tensor of zeros (false for bool). The caller bounds the shape: this allocates it.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Result<Tensor> {
        let bytes = vec![0u8; byte_count(dtype, &shape).ok_or_else(|| too_large(&shape))?];
        Tensor::from_le_bytes(dtype, shape, &bytes)
    }

    /// A zero-dimensional tensor.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Tensor {
            shape: vec![],
            data: T::wrap(vec![value]),
        }
    }

    /// Decodes little-endian bytes of the given type and shape.
    pub fn from_le_bytes(dtype: DType, shape: Vec<usize>, bytes: &[u8]) -> Result<Tensor> {
        Tensor::from_le_bytes_with(dtype, shape, bytes.len(), |elements| {
            elements.copy_from_slice(bytes)
        })
    }

    /// A tensor whose `byte_len` little-endian bytes `fill` writes into its memory (see
    /// [`TensorData::from_le_bytes_with`]); the count is checked against the shape before
    /// anything is allocated.
    pub fn from_le_bytes_with(
        dtype: DType,
        shape: Vec<usize>,
        byte_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Tensor> {
        let expected = element_count(&shape).ok_or_else(|| too_large(&shape))?;
        let size = dtype.size_of();
        if byte_len.is_multiple_of(size) && byte_len / size != expected {
            return Err(count_mismatch(&shape, expected, byte_len / size));
        }
        Tensor::new(
            shape,
            TensorData::from_le_bytes_with(dtype, byte_len, fill)?,
        )
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The shape (empty for a scalar).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor holds no element.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// Splits into shape and elements.
    pub fn into_parts(self) -> (Vec<usize>, TensorData) {
        (self.shape, self.data)
    }

    /// Borrows the elements as `&[T]`, or fails naming both types.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        T::slice(&self.data).ok_or_else(|| {
            Error::tensor_data(
                None,
                format!("tensor holds {}, not {}", self.dtype(), T::DTYPE),
            )
        })
    }

    /// Size of the elements in bytes.
    pub fn byte_len(&self) -> usize {
        self.len() * self.dtype().size_of()
    }

    /// A short human summary: `float32[1, 3] [0.1, 0.2, 0.3]` with at most `max_values` values.
    pub fn summary(&self, max_values: usize) -> String {
        let values = self.data.to_f64_vec();
        let shown: Vec<String> = values
            .iter()
            .take(max_values)
            .map(|v| format!("{v:.6}"))
            .collect();
        let more = if values.len() > max_values {
            ", …"
        } else {
            ""
        };
        format!(
            "{}{:?} [{}{}]",
            self.dtype(),
            self.shape,
            shown.join(", "),
            more
        )
    }
}

/// Elements whose little-endian bytes (a whole number of them) `fill` writes in one copy. Element by
/// element, decoding mtcnn_pnet's 230 KB input and encoding its 99 KB of outputs took 0.45 ms
/// of each 4.3 ms run in wasm (opt-level "s" leaves such loops scalar).
fn decode_le<T: FromBytes + IntoBytes + Clone>(
    byte_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Vec<T> {
    let mut elements = vec![T::new_zeroed(); byte_len / size_of::<T>()];
    fill(elements.as_mut_bytes());
    if cfg!(target_endian = "big") {
        swap_each_element(elements.as_mut_bytes(), size_of::<T>());
    }
    elements
}

/// The elements' little-endian bytes: their own memory where the target is little-endian.
fn encode_le<T: IntoBytes + Immutable>(elements: &[T]) -> Cow<'_, [u8]> {
    let bytes = elements.as_bytes();
    if cfg!(target_endian = "big") {
        let mut swapped = bytes.to_vec();
        swap_each_element(&mut swapped, size_of::<T>());
        return Cow::Owned(swapped);
    }
    Cow::Borrowed(bytes)
}

fn swap_each_element(bytes: &mut [u8], size: usize) {
    bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Release builds wrap on overflow: 2^32 · 2^32 used to count as 0 elements, so an empty
    /// vector passed as a tensor of that shape.
    #[test]
    fn shape_products_that_overflow_are_errors() {
        assert_eq!(element_count(&[2, 3, 4]), Some(24));
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[1 << 32, 1 << 32]), None);
        assert_eq!(byte_count(DType::F32, &[1 << 62]), None);
        let err = Tensor::new(vec![1 << 32, 1 << 32], TensorData::F32(vec![])).unwrap_err();
        assert!(err.to_string().contains("too large"), "{err}");
        // A zero dim empties the tensor, but the other dims must still be sizes (as in ndarray).
        assert!(Tensor::new(vec![1 << 31, 1 << 31, 0], TensorData::F32(vec![])).is_ok());
        assert!(Tensor::new(vec![1 << 32, 1 << 32, 0], TensorData::F32(vec![])).is_err());
        assert_eq!(element_count(&[1 << 63]), None);
        let err = Tensor::zeros(DType::F64, vec![1 << 61, 8]).unwrap_err();
        assert!(err.to_string().contains("too large"), "{err}");
        assert!(Tensor::zeros(DType::F64, vec![1 << 61]).is_err());
        assert_eq!(Tensor::zeros(DType::I16, vec![2, 3]).unwrap().len(), 6);
    }

    /// Little-endian bytes decode to the elements they spell and encode back to themselves, for
    /// every element type; a partial element is an error.
    #[test]
    fn little_endian_bytes_round_trip() {
        let f32_bytes = [0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x20, 0xc1];
        let data = TensorData::from_le_bytes(DType::F32, &f32_bytes).unwrap();
        assert_eq!(data, TensorData::F32(vec![1.5, -10.0]));
        assert_eq!(data.to_le_bytes(), f32_bytes);
        let i64_bytes = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        let data = TensorData::from_le_bytes(DType::I64, &i64_bytes).unwrap();
        assert_eq!(data, TensorData::I64(vec![-2]));
        let data = TensorData::from_le_bytes(DType::U16, &[0x34, 0x12, 0xff, 0xff]).unwrap();
        assert_eq!(data, TensorData::U16(vec![0x1234, 0xffff]));
        let data = TensorData::from_le_bytes(DType::F16, &[0x00, 0x3c]).unwrap();
        assert_eq!(data, TensorData::F16(vec![f16::ONE]));
        let data = TensorData::from_le_bytes(DType::Bool, &[0, 1, 7]).unwrap();
        assert_eq!(data, TensorData::Bool(vec![false, true, true]));
        assert_eq!(data.to_le_bytes(), [0, 1, 1]);
        let bytes: Vec<u8> = (0u8..24).collect();
        for dtype in DType::ALL.into_iter().filter(|&d| d != DType::Bool) {
            let data = TensorData::from_le_bytes(dtype, &bytes).unwrap();
            assert_eq!(data.len(), 24 / dtype.size_of(), "{dtype}");
            assert_eq!(data.to_le_bytes(), bytes, "{dtype}");
        }
        let err = TensorData::from_le_bytes(DType::F32, &bytes[..7]).unwrap_err();
        assert!(err.to_string().contains("7 bytes"), "{err}");
    }

    /// A foreign buffer's bytes are counted against the shape before the tensor is allocated:
    /// a forged shape of 2^40 elements over 8 bytes is refused without asking for 4 TiB.
    #[test]
    fn filled_tensors_check_the_count_before_allocating() {
        let never = |_: &mut [u8]| unreachable!("filled a tensor whose count was wrong");
        let err = Tensor::from_le_bytes_with(DType::F32, vec![1 << 40], 8, never).unwrap_err();
        assert!(
            err.to_string()
                .contains("needs 1099511627776 elements, got 2"),
            "{err}"
        );
        let err = Tensor::from_le_bytes_with(DType::F32, vec![2], 7, never).unwrap_err();
        assert!(err.to_string().contains("7 bytes"), "{err}");
        let bytes = [0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x20, 0xc1];
        let tensor = Tensor::from_le_bytes_with(DType::F32, vec![1, 2], 8, |elements| {
            elements.copy_from_slice(&bytes)
        })
        .unwrap();
        assert_eq!(tensor.as_slice::<f32>().unwrap(), [1.5, -10.0]);
    }
}
