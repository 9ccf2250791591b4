//! The CUDA C kernels: the source of each kernel the shared table ([`tessera_gpu::kernels`])
//! names, in `shaders/cuda/<name>.cu` (the same families and parameters as `shaders/wgsl/`),
//! and the text NVRTC compiles from it.
//!
//! A kernel is `common.cuh`, then `#define TS_<KEY> value` for each of [`Shader::defines`]
//! (element types, the function to apply), then the `.cu` file. Its entry point is
//! `tessera_main(params, tensors...)`: `params` is the launch's `u32` parameters, the tensors are
//! the dispatch's bindings in order. Modules are cached per device by kernel name and defines.

#[cfg(test)]
mod nvrtc_tests;

use tessera_core::{Error, Result};
pub(crate) use tessera_gpu::kernels::{Shader, Target};

/// cuBLAS runs matrix products and channels-first convolutions; bindings have no size limit.
pub(crate) const TARGET: Target = Target {
    backend: "cuda",
    gemm: true,
    max_binding_words: None,
};

/// Every kernel's source, by name.
const SOURCES: &[(&str, &str)] =
    tessera_gpu::kernel_sources!("../../../../shaders/cuda/", ".cu", ["im2col", "bias"]);

/// The prelude of every kernel.
pub(crate) const COMMON: &str = include_str!("../../../../shaders/cuda/common.cuh");

/// The source of kernel `name`.
fn source(name: &str) -> Result<&'static str> {
    tessera_gpu::kernels::source_of(SOURCES, name)
}

/// The CUDA C a [`Shader`] stands for: `common.cuh`, the `TS_<KEY>` macros (their values
/// respelled from WGSL by [`to_cuda`]), then the kernel.
pub(crate) fn expand(shader: &Shader) -> Result<String> {
    let source = source(shader.name)?;
    let mut text = String::with_capacity(COMMON.len() + source.len() + 256);
    text.push_str(COMMON);
    text.push('\n');
    for (key, value) in &shader.defines {
        if value.contains('\n') {
            return Err(Error::Internal(format!(
                "kernel {}: the value of TS_{key} spans lines",
                shader.name
            )));
        }
        text.push_str(&format!("#define TS_{key} {}\n", to_cuda(value)));
    }
    text.push_str(&format!("#line 1 \"{}.cu\"\n", shader.name));
    text.push_str(source);
    Ok(text)
}

/// WGSL builtins C++ spells otherwise: `common.cuh` defines the rest of WGSL's names
/// (`select`, `bitcast`, `inverseSqrt`) and the `w_` helpers, which work on every word type.
const RESPELLED: &[(&str, &str)] = &[
    ("abs", "w_abs"),
    ("sign", "w_sign"),
    ("min", "w_min"),
    ("max", "w_max"),
    ("clamp", "w_clamp"),
    ("exp", "expf"),
    ("log", "logf"),
    ("sqrt", "sqrtf"),
    ("sin", "sinf"),
    ("cos", "cosf"),
    ("tan", "tanf"),
    ("asin", "asinf"),
    ("acos", "acosf"),
    ("atan", "atanf"),
    ("sinh", "sinhf"),
    ("cosh", "coshf"),
    ("asinh", "asinhf"),
    ("acosh", "acoshf"),
    ("atanh", "atanhf"),
    ("floor", "floorf"),
    ("ceil", "ceilf"),
    // WGSL's round() rounds half to even, as rintf does in the default rounding mode.
    ("round", "rintf"),
];

/// A define value (a WGSL expression, a type or a number) in CUDA C: builtins respelled, and
/// float literals given their `f` so the arithmetic stays in f32 (C reads `1.0` as a double).
fn to_cuda(wgsl: &str) -> String {
    let mut out = String::with_capacity(wgsl.len() + 8);
    let chars: Vec<char> = wgsl.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let start = at;
        if c.is_ascii_alphabetic() || c == '_' {
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '_') {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            let respelled = RESPELLED.iter().find(|(w, _)| *w == word).map(|(_, c)| *c);
            out.push_str(respelled.unwrap_or(&word));
        } else if c.is_ascii_digit() {
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '.') {
                at += 1;
            }
            let number: String = chars[start..at].iter().collect();
            out.push_str(&number);
            if number.contains('.') && !number.ends_with('f') {
                out.push('f');
            }
        } else {
            out.push(c);
            at += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wgsl_expressions_are_respelled_for_cuda() {
        assert_eq!(
            to_cuda("0.5 * v * (1.0 + erf_f32(v * 0.70710678118654752))"),
            "0.5f * v * (1.0f + erf_f32(v * 0.70710678118654752f))"
        );
        assert_eq!(
            to_cuda("v * clamp(v + 3.0, 0.0, 6.0) / 6.0"),
            "v * w_clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f"
        );
        assert_eq!(to_cuda("round(v)"), "rintf(v)");
        assert_eq!(to_cuda("round_half_away_f32(v)"), "round_half_away_f32(v)");
        assert_eq!(to_cuda("select(0u, 1u, v > 0u)"), "select(0u, 1u, v > 0u)");
        assert_eq!(
            to_cuda("wrap_u8(bitcast<u32>(v))"),
            "wrap_u8(bitcast<u32>(v))"
        );
        assert_eq!(to_cuda("4u"), "4u");
    }

    #[test]
    fn every_kernel_has_an_entry_point() {
        for (name, text) in SOURCES {
            assert!(text.contains("tessera_main"), "{name}");
        }
        assert!(source("no_such_kernel").is_err());
    }
}
