//! The wgpu session on a real Vulkan driver (lavapipe in CI): the GPU engine's session suite
//! (`tessera_gpu::testing::sessions`). These tests fail, never skip, when no adapter is found
//! (CI installs mesa-vulkan-drivers).

use std::sync::Arc;
use tessera_core::{Model, Result};
use tessera_wgpu::{WgpuOptions, WgpuSession};

struct Wgpu;

impl tessera_gpu::testing::sessions::Backend for Wgpu {
    type Gpu = tessera_wgpu::GpuContext;
    type Session = WgpuSession;
    const NAME: &'static str = "wgpu";

    fn open(model: Arc<Model>, allow_fallback: bool) -> Result<WgpuSession> {
        WgpuSession::new(model, WgpuOptions { allow_fallback })
    }

    fn device_here() -> bool {
        true
    }
}

tessera_gpu::gpu_session_tests!(Wgpu);
