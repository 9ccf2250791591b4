//! CUDA driver, cuBLAS and NVRTC failures as Tessera errors that name the CUDA error
//! (`CUDA_ERROR_OUT_OF_MEMORY`, `CUBLAS_STATUS_NOT_SUPPORTED`, `NVRTC_ERROR_COMPILATION`...).

use cudarc::cublas::result::CublasError;
use cudarc::driver::DriverError;
use cudarc::driver::sys::CUresult;
use cudarc::nvrtc::CompileError;
use tessera_core::Error;

/// What went wrong in a CUDA library, with the library's own error name.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("out of device memory ({name}) while {doing}")]
    OutOfMemory { name: String, doing: String },
    #[error("the CUDA driver failed ({name}) while {doing}")]
    Driver { name: String, doing: String },
    #[error("cuBLAS failed ({name}) while {doing}")]
    Cublas { name: String, doing: String },
    #[error("NVRTC could not compile {kernel} ({name}):\n{log}")]
    Compile {
        kernel: String,
        name: String,
        log: String,
    },
}

impl CudaError {
    /// A driver error: `CUDA_ERROR_OUT_OF_MEMORY` becomes [`CudaError::OutOfMemory`].
    pub fn driver(error: DriverError, doing: impl Into<String>) -> CudaError {
        let name = format!("{:?}", error.0);
        let doing = doing.into();
        if error.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            CudaError::OutOfMemory { name, doing }
        } else {
            CudaError::Driver { name, doing }
        }
    }

    pub fn cublas(error: CublasError, doing: impl Into<String>) -> CudaError {
        let name = format!("{:?}", error.0);
        let doing = doing.into();
        // cuBLAS reports its own allocations failing as ALLOC_FAILED.
        if name == "CUBLAS_STATUS_ALLOC_FAILED" {
            CudaError::OutOfMemory { name, doing }
        } else {
            CudaError::Cublas { name, doing }
        }
    }

    pub fn compile(error: CompileError, kernel: impl Into<String>) -> CudaError {
        let kernel = kernel.into();
        match error {
            CompileError::CompileError { nvrtc, log, .. } => CudaError::Compile {
                kernel,
                name: format!("{:?}", nvrtc.0),
                log: log.to_string_lossy().into_owned(),
            },
            CompileError::CreationError(e)
            | CompileError::GetLogError(e)
            | CompileError::GetPtxError(e)
            | CompileError::DestroyError(e) => CudaError::Compile {
                kernel,
                name: format!("{:?}", e.0),
                log: String::new(),
            },
        }
    }

    /// As a Tessera error of a run (`running`) or of preparing a plan.
    pub fn into_error(self, running: bool) -> Error {
        let message = self.to_string();
        if running {
            Error::Run {
                backend: "cuda".into(),
                message,
            }
        } else {
            Error::Prepare {
                backend: "cuda".into(),
                message,
            }
        }
    }
}

/// `Result<T, DriverError>` → a Tessera error naming what was being done.
pub(crate) trait DriverContext<T> {
    fn doing(self, doing: &str, running: bool) -> tessera_core::Result<T>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn doing(self, doing: &str, running: bool) -> tessera_core::Result<T> {
        self.map_err(|e| CudaError::driver(e, doing).into_error(running))
    }
}

impl<T> DriverContext<T> for Result<T, CublasError> {
    fn doing(self, doing: &str, running: bool) -> tessera_core::Result<T> {
        self.map_err(|e| CudaError::cublas(e, doing).into_error(running))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::cublas::sys::cublasStatus_t;
    use cudarc::nvrtc::result::NvrtcError;
    use cudarc::nvrtc::sys::nvrtcResult;

    #[test]
    fn out_of_memory_is_named_and_typed() {
        let e = CudaError::driver(
            DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            "allocating the arena (12 bytes)",
        );
        assert!(matches!(e, CudaError::OutOfMemory { .. }));
        let text = e.into_error(false).to_string();
        assert!(text.contains("CUDA_ERROR_OUT_OF_MEMORY"), "{text}");
        assert!(text.contains("out of device memory"), "{text}");
        assert!(text.contains("allocating the arena"), "{text}");
    }

    #[test]
    fn driver_cublas_and_nvrtc_errors_keep_their_names() {
        let e = CudaError::driver(DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED), "running");
        let text = e.into_error(true).to_string();
        assert!(text.contains("CUDA_ERROR_LAUNCH_FAILED"), "{text}");
        assert!(text.contains("cuda"), "{text}");

        let e = CudaError::cublas(
            CublasError(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED),
            "a GEMM",
        );
        assert!(e.to_string().contains("CUBLAS_STATUS_NOT_SUPPORTED"));
        let e = CudaError::cublas(
            CublasError(cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED),
            "creating a handle",
        );
        assert!(matches!(e, CudaError::OutOfMemory { .. }));

        let e = CudaError::compile(
            CompileError::CompileError {
                nvrtc: NvrtcError(nvrtcResult::NVRTC_ERROR_COMPILATION),
                options: vec![],
                log: std::ffi::CString::new("unary.cu(3): error: identifier \"q\" is undefined")
                    .unwrap(),
            },
            "unary.cu",
        );
        let text = e.to_string();
        assert!(text.contains("NVRTC_ERROR_COMPILATION"), "{text}");
        assert!(text.contains("identifier \"q\""), "{text}");
    }
}
