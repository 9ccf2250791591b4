//! The cuda session on a real GPU: the GPU engine's session suite
//! (`tessera_gpu::testing::sessions`). Without a CUDA device each GPU test prints why and
//! returns (the only skip allowed; with `TESSERA_REQUIRE_CUDA=1` it fails instead);
//! `sessions_without_a_device_fail_with_the_reason` checks that path.

use std::sync::Arc;
use tessera_core::{Error, Model, Result};
use tessera_cuda::{CudaOptions, CudaSession};

struct Cuda;

impl tessera_gpu::testing::sessions::Backend for Cuda {
    type Gpu = tessera_cuda::CudaGpu;
    type Session = CudaSession;
    const NAME: &'static str = "cuda";

    fn open(model: Arc<Model>, allow_fallback: bool) -> Result<CudaSession> {
        CudaSession::new(model, CudaOptions { allow_fallback })
    }

    /// Whether a CUDA device is usable here; prints why not.
    fn device_here() -> bool {
        match tessera_cuda::devices() {
            Ok(_) => true,
            Err(reason) => {
                assert!(
                    std::env::var("TESSERA_REQUIRE_CUDA").as_deref() != Ok("1"),
                    "TESSERA_REQUIRE_CUDA=1 but no CUDA device is usable here: {reason}"
                );
                // Straight to stderr: `cargo test` captures println!, and a skip must show in
                // CI's log.
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "skipped: no CUDA device here ({reason})");
                false
            }
        }
    }
}

tessera_gpu::gpu_session_tests!(Cuda);

#[test]
fn sessions_without_a_device_fail_with_the_reason() {
    let Err(reason) = tessera_cuda::devices() else {
        println!("a CUDA device is present: the no-device path is not checked here");
        return;
    };
    let model = Arc::new(
        Model::load(tessera_gpu::testing::sessions::node_case("test_abs").join("model.onnx"))
            .unwrap(),
    );
    let error = CudaSession::new(model, CudaOptions::default()).expect_err("no device, no session");
    let Error::BackendUnavailable {
        backend,
        reason: said,
        ..
    } = &error
    else {
        panic!("expected BackendUnavailable, got {error}");
    };
    assert_eq!(backend, "cuda");
    assert_eq!(said, &reason);
    let status = tessera_cuda::status();
    assert!(status.compiled_in && !status.available);
    assert_eq!(status.detail, reason);
}
