//! Tessera's ONNX op registry: tract-onnx's operators plus the ones the core adds or replaces.
//! One file per op (or small family); each module doc links the ONNX spec and states what it
//! supports. onnxruntime's `com.microsoft` quantization ops are rewritten into standard ops before
//! parsing ([`microsoft_quant`]), and reverse-direction recurrent layers into forward ones
//! ([`rnn_reverse`]).

mod affine_grid;
mod center_crop_pad;
mod constant_of_shape;
mod cumprod;
mod det;
mod graph_rewrite;
mod if_known;
mod loss;
mod lp_pool;
pub mod microsoft_quant;
mod reverse_sequence;
pub(crate) mod rnn_reverse;
mod upsample;

use tract_onnx::Onnx;

/// The ONNX front end with every operator Tessera knows.
pub fn onnx() -> Onnx {
    let mut onnx = tract_onnx::onnx();
    let reg = &mut onnx.op_register;
    reg.insert("If", if_known::parse);
    reg.insert("NegativeLogLikelihoodLoss", loss::nll_loss);
    reg.insert("SoftmaxCrossEntropyLoss", loss::softmax_cross_entropy_loss);
    reg.insert("ConstantOfShape", constant_of_shape::constant_of_shape);
    reg.insert("CumProd", cumprod::cumprod);
    reg.insert("LpPool", lp_pool::lp_pool);
    reg.insert("CenterCropPad", center_crop_pad::center_crop_pad);
    reg.insert("AffineGrid", affine_grid::affine_grid);
    reg.insert("Det", det::det);
    reg.insert("ReverseSequence", reverse_sequence::reverse_sequence);
    reg.insert("Upsample", upsample::upsample);
    onnx
}
