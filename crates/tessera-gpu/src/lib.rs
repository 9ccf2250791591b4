//! Tessera's GPU engine, shared by the `wgpu` and `cuda` backends, so that what one GPU runs the
//! other runs too, by construction.
//!
//! - [`repr`]: how each element type is held on a GPU (one 32-bit word per element).
//! - [`kernels`]: each step of the core's plan encoded into launches: a kernel by name with its
//!   defines, `u32` parameters, tensors and grid, or a GEMM call where the device has a GEMM
//!   library. The kernels themselves are per backend: `shaders/wgsl/<name>.wgsl` and
//!   `shaders/cuda/<name>.cu`, the same families with the same parameters.
//! - [`engine`]: a plan made ready for a device and run on it (memory plan, constants, feeds,
//!   host-fallback boundaries, outputs, transfer counters, trace, profile), over the [`engine::Gpu`]
//!   trait a backend implements.
//! - `testing` (feature `testing`): the catalogue of kernel variants every backend must
//!   compile, for its compile checks.
//!
//! A backend keeps only its device: memory, compiling its shader sources, recording and
//! submitting launches.

pub mod engine;
pub mod kernels;
pub mod repr;
#[cfg(feature = "testing")]
pub mod testing;
