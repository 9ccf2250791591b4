//! Tessera's shared core: loads ONNX models through `tract-onnx`, holds the [`Tensor`] type and
//! its file formats, checks inputs against the model, and names the backends.
//!
//! Backends (`tessera-cpu`, `tessera-wgpu`, `tessera-cuda`) build on this crate; applications
//! depend on the `tessera` facade instead.

pub mod backend;
pub mod dtype;
pub mod error;
pub mod lower;
pub mod model;
pub mod ops;
pub mod plan;
pub mod plan_cache;
pub mod tensor;
pub mod tract_bridge;

pub use backend::{Backend, BackendStatus};
pub use dtype::DType;
pub use error::{Error, Result, UnsupportedOp};
pub use model::Model;
pub use model::info::{Dim, IoInfo, ModelInfo};
pub use model::quantization::{QuantFormat, Quantization, QuantizedExecution};
pub use plan::Plan;
pub use tensor::{Element, Tensor, TensorData};

/// tract, re-exported for the backend crates (not a stable API).
#[doc(hidden)]
pub use tract_onnx;
