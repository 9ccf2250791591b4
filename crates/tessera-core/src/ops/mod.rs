//! Tessera's ONNX op registry: tract-onnx's operators plus the ones the core adds or replaces.

mod if_known;

use tract_onnx::Onnx;

/// The ONNX front end with every operator Tessera knows.
pub fn onnx() -> Onnx {
    let mut onnx = tract_onnx::onnx();
    if_known::register(&mut onnx.op_register);
    onnx
}
