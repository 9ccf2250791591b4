//! The WGSL kernels: the template of each kernel the shared table ([`tessera_gpu::kernels`])
//! names, in `shaders/wgsl/<name>.wgsl`, and the text wgpu compiles from it.
//!
//! A kernel is a WGSL template: `common.wgsl` is prepended, and `{{NAME}}` placeholders are
//! replaced by [`Shader::defines`] (element types, the function to apply). Binding 0 is always
//! the dispatch's `params: array<u32>` (declared in `common.wgsl`); bindings 1.. are the
//! dispatch's tensors in order, declared by the shader (`var<storage, read>` for step inputs,
//! `var<storage, read_write>` for outputs). Pipelines are cached by kernel name and defines.

#[cfg(test)]
mod compute_tests;
#[cfg(test)]
mod device_tests;

use tessera_core::{Error, Result};
#[cfg(test)]
use tessera_gpu::kernels::StepIo;
#[cfg(test)]
use tessera_gpu::kernels::{Grid, Kernel, Operand};
pub(crate) use tessera_gpu::kernels::{Shader, Target};

/// wgpu has no GEMM library: products and convolutions run as WGSL kernels. The binding limit
/// is the adapter's, set when a plan is compiled.
pub(crate) const TARGET: Target = Target {
    backend: "wgpu",
    gemm: false,
    max_binding_words: None,
};

/// Every template, by kernel name.
const SOURCES: &[(&str, &str)] =
    tessera_gpu::kernel_sources!("../../../../shaders/wgsl/", ".wgsl", ["matmul"]);

/// The prelude of every kernel.
const COMMON: &str = include_str!("../../../../shaders/wgsl/common.wgsl");

/// The step's launches on wgpu, with no binding limit (for the kernel tests).
#[cfg(test)]
fn encode(op: &tessera_core::plan::KernelOp, io: &StepIo) -> Result<Kernel> {
    tessera_gpu::kernels::encode(op, io, &TARGET)
}

/// The source of kernel `name`.
fn source(name: &str) -> Result<&'static str> {
    tessera_gpu::kernels::source_of(SOURCES, name)
}

/// The WGSL a [`Shader`] stands for: `common.wgsl`, then the template with its `{{KEY}}`
/// placeholders replaced. Tensor bindings are written `var<storage, read>` in the templates (to
/// say what a kernel reads) and compiled as `read_write`: intermediate tensors share one arena
/// buffer, and WebGPU forbids binding one buffer both read-only and read-write in a dispatch,
/// while several read-write bindings of it are allowed. `params` (in the prelude) stays
/// read-only.
pub(crate) fn expand(shader: &Shader) -> Result<String> {
    expand_template(shader.name, source(shader.name)?, &shader.defines)
}

fn expand_template(name: &str, template: &str, defines: &[(&str, String)]) -> Result<String> {
    let mut body = template.replace("var<storage, read> ", "var<storage, read_write> ");
    for (key, value) in defines {
        body = body.replace(&format!("{{{{{key}}}}}"), value);
    }
    if let Some(at) = body.find("{{") {
        let rest = &body[at..];
        let end = rest.find("}}").map_or(rest.len().min(40), |e| e + 2);
        return Err(Error::Internal(format!(
            "kernel {name}: placeholder {} has no value",
            &rest[..end]
        )));
    }
    Ok(format!("{COMMON}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_gpu::testing::KernelCheck;
    use wgpu::naga;

    /// Parses and validates the expanded shader with naga, as wgpu would before compiling it.
    pub(super) fn validate(shader: &Shader) -> std::result::Result<(), String> {
        let text = expand(shader).map_err(|e| e.to_string())?;
        let module = naga::front::wgsl::parse_str(&text).map_err(|e| {
            format!(
                "{} does not parse:\n{}",
                shader.name,
                e.emit_to_string(&text)
            )
        })?;
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        )
        .validate(&module)
        .map_err(|e| {
            format!(
                "{} does not validate:\n{}",
                shader.name,
                e.emit_to_string(&text)
            )
        })?;
        Ok(())
    }

    fn naga_check() -> KernelCheck {
        KernelCheck::new(TARGET, Box::new(validate))
    }

    tessera_gpu::kernel_compile_tests!(naga_check());

    #[test]
    fn expand_rejects_missing_defines() {
        assert!(expand_template("t", "let x: {{T}} = 0;", &[]).is_err());
        let source = expand_template("t", "const x: {{T}} = 0;", &[("T", "u32".into())]).unwrap();
        assert!(source.ends_with("const x: u32 = 0;") && source.contains("fn thread_index"));
    }

    #[test]
    fn every_kernel_has_a_template() {
        for (name, text) in SOURCES {
            assert!(text.contains("fn main"), "{name}");
        }
        assert!(source("no_such_kernel").is_err());
    }
}
