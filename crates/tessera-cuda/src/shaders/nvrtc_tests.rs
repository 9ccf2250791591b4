//! Kernel tests that need no GPU: every kernel variant of the shared catalogue
//! ([`tessera_gpu::testing`]), encoded for cuda, must compile to PTX with NVRTC (what the device
//! does before it loads it).
//!
//! NVRTC (libnvrtc) needs no GPU or driver. Without it these tests only check that each op
//! encodes, and say so; with `TESSERA_REQUIRE_NVRTC=1` (set by `scripts/check-cuda-kernels.sh`
//! in CI) a missing libnvrtc is a failure, so the compile check cannot be skipped silently.

use super::{Shader, TARGET};
use tessera_gpu::testing::KernelCheck;

/// The virtual architecture the check compiles for (Ampere: the oldest this backend targets).
const CHECK_ARCH: &str = "compute_80";

/// Whether NVRTC is loadable; without it and without `TESSERA_REQUIRE_NVRTC=1`, compiling is
/// skipped (with the reason printed once).
fn nvrtc_present() -> bool {
    // SAFETY: only opens the library.
    let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    let required = std::env::var("TESSERA_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    assert!(
        present || !required,
        "TESSERA_REQUIRE_NVRTC=1 but libnvrtc.so cannot be loaded: put the nvidia-cuda-nvrtc wheel's lib folder on LD_LIBRARY_PATH"
    );
    if !present {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            println!("libnvrtc not found: cuda kernels are encoded but not compiled (scripts/check-cuda-kernels.sh compiles them)")
        });
    }
    present
}

fn compile(shader: &Shader) -> Result<(), String> {
    if !nvrtc_present() {
        return Ok(());
    }
    crate::context::compile_ptx(shader, CHECK_ARCH)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn nvrtc_check() -> KernelCheck {
    KernelCheck::new(TARGET, Box::new(compile))
}

tessera_gpu::kernel_compile_tests!(nvrtc_check());
