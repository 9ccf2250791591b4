//! How each Tessera element type is held on the device.
//!
//! WGSL has 32-bit scalars only (`f32`, `i32`, `u32`; no 8-, 16- or 64-bit integers, no `f64`),
//! so every element takes one 32-bit word on the device:
//!
//! | Tessera type | device word | notes |
//! |---|---|---|
//! | f32 | `f32` | |
//! | f16 | `f32` | widened on upload, rounded back to f16 on read-back |
//! | i32, i16, i8 | `i32` | results of 8/16-bit arithmetic wrap to their width |
//! | i64 | `i32` | narrowed on upload: runtime inputs outside the i32 range are an error; constants saturate (so `i64::MAX` "to the end" sentinels stay sentinels); widened on read-back. Arithmetic wraps at 32 bits. |
//! | u32, u16, u8 | `u32` | results of 8/16-bit arithmetic wrap to their width |
//! | bool | `u32` | 0 or 1 |
//! | f64, u64 | — | not supported on wgpu: placement names the step |

use tessera_core::DType;

/// The WGSL scalar that holds one element of `dtype`, or `None` when wgpu cannot hold it.
pub fn word(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::F32 | DType::F16 => Some("f32"),
        DType::I32 | DType::I16 | DType::I8 | DType::I64 => Some("i32"),
        DType::U32 | DType::U16 | DType::U8 | DType::Bool => Some("u32"),
        DType::F64 | DType::U64 => None,
    }
}

/// The WGSL function (from `common.wgsl`) that wraps an integer result to the width of `dtype`,
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
