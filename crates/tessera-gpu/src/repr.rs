//! How each Tessera element type is held on the device.
//!
//! WGSL has 32-bit scalars only (`f32`, `i32`, `u32`; no 8-, 16- or 64-bit integers, no `f64`),
//! so every element takes one 32-bit word on the device; the cuda backend holds tensors the same
//! way, so both run the same kernels with the same parameters:
//!
//! | Tessera type | device word | notes |
//! |---|---|---|
//! | f32 | `f32` | |
//! | f16 | `f32` | widened on upload, rounded back to f16 on read-back |
//! | i32, i16, i8 | `i32` | results of 8/16-bit arithmetic wrap to their width |
//! | i64 | `i32` | narrowed on upload: runtime inputs outside the i32 range are an error; constants saturate (so `i64::MAX` "to the end" sentinels stay sentinels); widened on read-back. Arithmetic wraps at 32 bits. |
//! | u64 | `u32` | narrowed on upload like i64: runtime inputs above `u32::MAX` are an error; constants saturate; widened on read-back. Arithmetic wraps at 32 bits. |
//! | u32, u16, u8 | `u32` | results of 8/16-bit arithmetic wrap to their width |
//! | bool | `u32` | 0 or 1 |
//! | f64 | — | not held: placement names the step (with fallback allowed, it runs on the host) |

use tessera_core::DType;

/// The word type (`f32`, `i32`, `u32`) that holds one element of `dtype`, or `None` when a GPU
/// backend cannot hold it.
pub fn word(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::F32 | DType::F16 => Some("f32"),
        DType::I32 | DType::I16 | DType::I8 | DType::I64 => Some("i32"),
        DType::U64 | DType::U32 | DType::U16 | DType::U8 | DType::Bool => Some("u32"),
        DType::F64 => None,
    }
}

/// The function (in `common.wgsl` and `common.cuh`) that wraps an integer result to the width of `dtype`,
/// or `""` when the 32-bit word already has the right width. Use it as `{{WRAP}}(expr)`.
pub fn wrap(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "wrap_u8",
        DType::U16 => "wrap_u16",
        DType::I8 => "wrap_i8",
        DType::I16 => "wrap_i16",
        DType::Bool => "wrap_bool",
        _ => "",
    }
}

/// Bytes one element takes on the device.
pub const WORD_BYTES: usize = 4;

use tessera_core::{Error, Result, Tensor, TensorData};

/// How to narrow 64-bit integers that do not fit a 32-bit word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Narrowing {
    /// An error naming the tensor (runtime inputs: a wrong answer would be silent).
    Checked,
    /// Clamp to the word's range (constants: `i64::MAX` "to the end" sentinels stay sentinels).
    Saturating,
}

/// The device words of `data`, as little-endian bytes.
pub fn to_words(data: &TensorData, narrowing: Narrowing, what: &str) -> Result<Vec<u8>> {
    fn bytes<T: Copy>(values: impl Iterator<Item = T>, f: impl Fn(T) -> [u8; 4]) -> Vec<u8> {
        values.flat_map(f).collect()
    }
    Ok(match data {
        TensorData::F32(v) => bytes(v.iter(), |x| x.to_le_bytes()),
        TensorData::F16(v) => bytes(v.iter(), |x| x.to_f32().to_le_bytes()),
        TensorData::I32(v) => bytes(v.iter(), |x| x.to_le_bytes()),
        TensorData::I16(v) => bytes(v.iter(), |&x| i32::from(x).to_le_bytes()),
        TensorData::I8(v) => bytes(v.iter(), |&x| i32::from(x).to_le_bytes()),
        TensorData::U32(v) => bytes(v.iter(), |x| x.to_le_bytes()),
        TensorData::U16(v) => bytes(v.iter(), |&x| u32::from(x).to_le_bytes()),
        TensorData::U8(v) => bytes(v.iter(), |&x| u32::from(x).to_le_bytes()),
        TensorData::Bool(v) => bytes(v.iter(), |&x| u32::from(x).to_le_bytes()),
        TensorData::I64(v) => narrowed(v, narrowing, what, "int64", |x| {
            i32::try_from(x)
                .map(i32::cast_unsigned)
                .map_err(|_| x.clamp(i32::MIN.into(), i32::MAX.into()) as i32 as u32)
        })?,
        TensorData::U64(v) => narrowed(v, narrowing, what, "uint64", |x| {
            u32::try_from(x).map_err(|_| u32::MAX)
        })?,
        TensorData::F64(_) => {
            return Err(Error::UnsupportedDtype {
                dtype: data.dtype().to_string(),
                context: format!("{what} on a GPU (every element is one 32-bit word)"),
            });
        }
    })
}

/// The 32-bit words of 64-bit integers: `fit` gives the word, or the saturated word when the
/// value does not fit, which [`Narrowing::Checked`] refuses instead.
fn narrowed<T: Copy + std::fmt::Display>(
    values: &[T],
    narrowing: Narrowing,
    what: &str,
    type_name: &str,
    fit: impl Fn(T) -> std::result::Result<u32, u32>,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(values.len() * WORD_BYTES);
    for &x in values {
        let word = match (fit(x), narrowing) {
            (Ok(word), _) | (Err(word), Narrowing::Saturating) => word,
            (Err(_), Narrowing::Checked) => {
                return Err(Error::InputMismatch(format!(
                    "{what} holds the {type_name} value {x}, outside the 32-bit range GPU backends hold \
                     {type_name} tensors in (every element is one 32-bit word)"
                )));
            }
        };
        out.extend_from_slice(&word.to_le_bytes());
    }
    Ok(out)
}

/// A tensor of `dtype` and `shape` from its device words.
pub fn from_words(dtype: DType, shape: Vec<usize>, bytes: &[u8]) -> Result<Tensor> {
    let words = bytes
        .chunks_exact(WORD_BYTES)
        .map(|c| [c[0], c[1], c[2], c[3]]);
    let f = || words.clone().map(f32::from_le_bytes);
    let i = || words.clone().map(i32::from_le_bytes);
    let u = || words.clone().map(u32::from_le_bytes);
    let data = match dtype {
        DType::F32 => TensorData::F32(f().collect()),
        DType::F16 => TensorData::F16(f().map(half::f16::from_f32).collect()),
        DType::I32 => TensorData::I32(i().collect()),
        DType::I64 => TensorData::I64(i().map(i64::from).collect()),
        DType::I16 => TensorData::I16(i().map(|x| x as i16).collect()),
        DType::I8 => TensorData::I8(i().map(|x| x as i8).collect()),
        DType::U32 => TensorData::U32(u().collect()),
        DType::U64 => TensorData::U64(u().map(u64::from).collect()),
        DType::U16 => TensorData::U16(u().map(|x| x as u16).collect()),
        DType::U8 => TensorData::U8(u().map(|x| x as u8).collect()),
        DType::Bool => TensorData::Bool(u().map(|x| x != 0).collect()),
        DType::F64 => {
            return Err(Error::UnsupportedDtype {
                dtype: dtype.to_string(),
                context: "GPU tensors (held as 32-bit words)".into(),
            });
        }
    };
    Tensor::new(shape, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_every_held_type() {
        let cases = vec![
            Tensor::from_vec(vec![3], vec![1.5f32, -2.0, 0.0]).unwrap(),
            Tensor::from_vec(
                vec![2],
                vec![half::f16::from_f32(0.5), half::f16::from_f32(-3.0)],
            )
            .unwrap(),
            Tensor::from_vec(vec![3], vec![-5i64, 0, 1 << 30]).unwrap(),
            Tensor::from_vec(vec![2], vec![-128i8, 127]).unwrap(),
            Tensor::from_vec(vec![2], vec![255u8, 0]).unwrap(),
            Tensor::from_vec(vec![2], vec![true, false]).unwrap(),
            Tensor::from_vec(vec![2], vec![u32::MAX, 7]).unwrap(),
            Tensor::from_vec(vec![2], vec![u64::from(u32::MAX), 7]).unwrap(),
        ];
        for tensor in cases {
            let words = to_words(tensor.data(), Narrowing::Checked, "x").unwrap();
            assert_eq!(words.len(), tensor.len() * WORD_BYTES);
            let back = from_words(tensor.dtype(), tensor.shape().to_vec(), &words).unwrap();
            assert_eq!(back, tensor);
        }
    }

    #[test]
    fn int64_outside_i32_is_checked_or_saturated() {
        let big = Tensor::from_vec(vec![2], vec![i64::MAX, i64::MIN]).unwrap();
        let err = to_words(big.data(), Narrowing::Checked, "input 'ids'").unwrap_err();
        assert!(err.to_string().contains("input 'ids'"), "{err}");
        let words = to_words(big.data(), Narrowing::Saturating, "c").unwrap();
        let back = from_words(DType::I64, vec![2], &words).unwrap();
        assert_eq!(
            back.as_slice::<i64>().unwrap(),
            &[i32::MAX as i64, i32::MIN as i64]
        );
    }

    #[test]
    fn uint64_above_u32_is_checked_or_saturated() {
        let big = Tensor::from_vec(vec![2], vec![u64::MAX, 1 << 32]).unwrap();
        let err = to_words(big.data(), Narrowing::Checked, "input 'mask'").unwrap_err();
        assert!(err.to_string().contains("input 'mask'"), "{err}");
        assert!(
            err.to_string()
                .contains("uint64 value 18446744073709551615"),
            "{err}"
        );
        let words = to_words(big.data(), Narrowing::Saturating, "c").unwrap();
        let back = from_words(DType::U64, vec![2], &words).unwrap();
        assert_eq!(back.as_slice::<u64>().unwrap(), &[u64::from(u32::MAX); 2]);
    }

    #[test]
    fn no_word_for_doubles() {
        assert_eq!(word(DType::F64), None);
        let doubles = Tensor::from_vec(vec![1], vec![1.0f64]).unwrap();
        assert!(to_words(doubles.data(), Narrowing::Checked, "x").is_err());
    }
}
