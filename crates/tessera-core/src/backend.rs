//! The backends Tessera can run on, and how each reports whether it is usable here.

use std::fmt;
use std::str::FromStr;

/// A backend a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// tract's SIMD kernels on the host CPU (AVX2/FMA, NEON, wasm SIMD128). Always available.
    Cpu,
    /// WGSL compute shaders through wgpu: Vulkan, Metal, DX12 or the browser's WebGPU.
    Wgpu,
    /// NVIDIA GPUs through the CUDA driver API, cuBLAS and NVRTC, loaded at run time.
    Cuda,
    /// The best backend available here: cuda, then wgpu, then cpu. The choice is reported.
    Auto,
}

impl Backend {
    /// The concrete backends, best first (the order `Auto` tries them in).
    pub const PREFERENCE: [Backend; 3] = [Backend::Cuda, Backend::Wgpu, Backend::Cpu];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Wgpu => "wgpu",
            Backend::Cuda => "cuda",
            Backend::Auto => "auto",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "cpu" => Ok(Backend::Cpu),
            "wgpu" | "webgpu" => Ok(Backend::Wgpu),
            "cuda" => Ok(Backend::Cuda),
            "auto" => Ok(Backend::Auto),
            other => Err(format!(
                "unknown backend '{other}' (expected cpu, wgpu, cuda or auto)"
            )),
        }
    }
}

/// Whether one backend can be used on this machine, and why not.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BackendStatus {
    /// Which backend.
    pub backend: Backend,
    /// Whether this build contains it (cargo feature).
    pub compiled_in: bool,
    /// Whether it can run models here.
    pub available: bool,
    /// Why it is unavailable, or a note on how it runs (thread count, ISA...).
    pub detail: String,
    /// Devices it found (adapter names, GPU names, CPU description).
    pub devices: Vec<String>,
    /// It only has a software emulation of its device (e.g. Mesa's lavapipe for wgpu): usable
    /// when asked for by name, but `auto` prefers the next backend.
    #[serde(default)]
    pub software_only: bool,
}

impl BackendStatus {
    /// The status of a backend left out of this build.
    pub fn not_compiled_in(backend: Backend, feature: &str) -> BackendStatus {
        BackendStatus {
            backend,
            compiled_in: false,
            available: false,
            detail: format!("not compiled in (build with the `{feature}` cargo feature)"),
            devices: vec![],
            software_only: false,
        }
    }
}
