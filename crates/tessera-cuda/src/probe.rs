//! Finding CUDA devices without ever panicking, and saying exactly why there are none.
//!
//! cudarc loads `libcuda`, `libnvrtc` and `libcublas` at run time and panics when one is missing,
//! so each library's presence is checked first (`is_culib_present`), and every driver call is
//! made inside `catch_unwind` as well.

use cudarc::driver::result;
use cudarc::driver::sys::CUresult;
use std::fmt;

/// The oldest driver API this build uses (cudarc's `cuda-12080` bindings need CUDA 12).
pub const MIN_DRIVER_VERSION: i32 = 12000;

/// One CUDA device as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSummary {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    pub memory_bytes: usize,
}

impl fmt::Display for DeviceSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = self.compute_capability;
        write!(
            f,
            "{} (cuda:{}, compute {major}.{minor}, {} MiB)",
            self.name,
            self.ordinal,
            self.memory_bytes >> 20
        )
    }
}

/// The CUDA devices here, or why cuda cannot run here. Probed once per process.
pub fn devices() -> Result<Vec<DeviceSummary>, String> {
    static PROBED: std::sync::OnceLock<Result<Vec<DeviceSummary>, String>> =
        std::sync::OnceLock::new();
    PROBED.get_or_init(probe_guarded).clone()
}

fn probe_guarded() -> Result<Vec<DeviceSummary>, String> {
    std::panic::catch_unwind(probe)
        .unwrap_or_else(|_| Err("probing for CUDA devices failed inside the CUDA libraries".into()))
}

/// Why a library cuda needs cannot be loaded, or `None` when all load.
pub fn missing_library() -> Option<String> {
    // SAFETY: these only try to open the shared libraries (dlopen), calling nothing in them.
    let (driver, nvrtc, cublas) = unsafe {
        (
            cudarc::driver::sys::is_culib_present(),
            cudarc::nvrtc::sys::is_culib_present(),
            cudarc::cublas::sys::is_culib_present(),
        )
    };
    if !driver {
        return Some(
            "libcuda.so.1 not found (no NVIDIA driver installed, or it is not on the library path)"
                .into(),
        );
    }
    if !nvrtc {
        return Some(
            "libnvrtc.so not found (the CUDA runtime compiler, which builds the kernels: install the CUDA toolkit or the nvidia-cuda-nvrtc wheel and put its lib folder on LD_LIBRARY_PATH)"
                .into(),
        );
    }
    if !cublas {
        return Some(
            "libcublas.so not found (cuBLAS, which runs the matrix products: install the CUDA toolkit or the nvidia-cublas wheel and put its lib folder on LD_LIBRARY_PATH)"
                .into(),
        );
    }
    None
}

/// Why the driver could not start, from `cuInit`'s or `cuDeviceGetCount`'s error.
pub fn driver_failure(code: CUresult) -> String {
    match code {
        CUresult::CUDA_ERROR_NO_DEVICE => "no CUDA device (CUDA_ERROR_NO_DEVICE)".into(),
        CUresult::CUDA_ERROR_STUB_LIBRARY => {
            "libcuda.so.1 is the CUDA toolkit's stub, not a driver: no NVIDIA driver is installed (CUDA_ERROR_STUB_LIBRARY)".into()
        }
        CUresult::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => {
            "driver too old: the forward-compatibility driver does not support this GPU (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)".into()
        }
        CUresult::CUDA_ERROR_NOT_PERMITTED | CUresult::CUDA_ERROR_NOT_SUPPORTED => {
            format!("the CUDA driver refused to start ({code:?})")
        }
        other => format!("the CUDA driver failed to start ({other:?})"),
    }
}

/// Why a driver of `version` (e.g. 12040 for 12.4) is too old, or `None`.
pub fn driver_too_old(version: i32) -> Option<String> {
    (version < MIN_DRIVER_VERSION).then(|| {
        format!(
            "driver too old: it supports CUDA {}.{}, this build needs {}.{}",
            version / 1000,
            version % 1000 / 10,
            MIN_DRIVER_VERSION / 1000,
            MIN_DRIVER_VERSION % 1000 / 10
        )
    })
}

fn probe() -> Result<Vec<DeviceSummary>, String> {
    if let Some(missing) = missing_library() {
        return Err(missing);
    }
    result::init().map_err(|e| driver_failure(e.0))?;
    let mut version = 0;
    // SAFETY: the driver is loaded and initialised; `version` outlives the call.
    let code = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if code != CUresult::CUDA_SUCCESS {
        return Err(driver_failure(code));
    }
    if let Some(old) = driver_too_old(version) {
        return Err(old);
    }
    let count = result::device::get_count().map_err(|e| driver_failure(e.0))?;
    if count <= 0 {
        return Err("no CUDA device (the driver is installed but sees no GPU)".into());
    }
    let mut found = vec![];
    for ordinal in 0..count {
        let device = result::device::get(ordinal).map_err(|e| driver_failure(e.0))?;
        let name = result::device::get_name(device).unwrap_or_else(|_| "NVIDIA GPU".into());
        let attribute = |a| {
            // SAFETY: `device` came from the driver above.
            unsafe { result::device::get_attribute(device, a) }.unwrap_or(0)
        };
        use cudarc::driver::sys::CUdevice_attribute as A;
        let compute_capability = (
            attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        );
        // SAFETY: as above.
        let memory_bytes = unsafe { result::device::total_mem(device) }.unwrap_or(0);
        found.push(DeviceSummary {
            ordinal: ordinal as usize,
            name,
            compute_capability,
            memory_bytes,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_never_panics_and_gives_a_reason_or_devices() {
        match devices() {
            Ok(found) => assert!(!found.is_empty()),
            Err(reason) => {
                assert!(!reason.is_empty());
                println!("cuda unavailable here: {reason}");
            }
        }
        // A second probe answers the same (it is cached, and must not panic either).
        assert_eq!(devices(), devices());
    }

    #[test]
    fn driver_failures_say_why() {
        assert!(driver_failure(CUresult::CUDA_ERROR_NO_DEVICE).starts_with("no CUDA device"));
        assert!(
            driver_failure(CUresult::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
                .starts_with("driver too old")
        );
        assert!(driver_failure(CUresult::CUDA_ERROR_STUB_LIBRARY).contains("no NVIDIA driver"));
        assert!(driver_failure(CUresult::CUDA_ERROR_UNKNOWN).contains("CUDA_ERROR_UNKNOWN"));
        assert_eq!(
            driver_too_old(11080).as_deref(),
            Some("driver too old: it supports CUDA 11.8, this build needs 12.0")
        );
        assert_eq!(driver_too_old(13000), None);
    }
}
