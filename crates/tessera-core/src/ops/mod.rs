//! Tessera's ONNX op registry: tract-onnx's operators plus the ones the core adds or replaces.

use tract_onnx::Onnx;

/// The ONNX front end with every operator Tessera knows.
pub fn onnx() -> Onnx {
    tract_onnx::onnx()
}
