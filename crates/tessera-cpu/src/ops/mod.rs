//! Tessera's own cpu ops: where tract's kernel for an op is the limit, a cpu plan swaps it for
//! one of these before tract optimizes the plan (GPU plans keep tract's op, which they lower
//! themselves). One file per op.

mod avg_pool;
mod bin_chain;
#[cfg(target_arch = "x86_64")]
mod blocked_conv;
#[cfg(target_arch = "x86_64")]
mod blocked_pool;
mod conv_gemm;
mod conv_transpose;
mod depthwise_conv;
mod downsample;
pub(crate) mod gemm_common;
mod lrn;
mod matmul_gemm;
mod max_pool;
pub(crate) mod pool_2d;
pub mod qdq_products;
mod quantize_linear;
mod quantized_conv_in_f32;
mod quantized_depthwise_conv;
#[cfg(target_arch = "x86_64")]
mod quantized_matmul;
#[cfg(target_arch = "x86_64")]
mod quantized_tap_products;
mod reduce_extremum;
mod softmax;
mod tap_products;
mod weight_zero_point;

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::ops::Downsample;
use tessera_core::tract_onnx::tract_core::ops::cnn::Deconv;
use tessera_core::tract_onnx::tract_core::ops::cnn::{Conv, MaxPool, SumPool};
use tessera_core::tract_onnx::tract_core::ops::nn::{Reduce, Softmax};

pub use avg_pool::FastAvgPool;
pub use bin_chain::FastBinChain;
#[cfg(target_arch = "x86_64")]
pub use blocked_conv::{BlockedConv, Geometry, InputLayout};
#[cfg(target_arch = "x86_64")]
pub use blocked_pool::BlockedPool;
pub use conv_gemm::FastConv;
pub use conv_transpose::FastConvTranspose;
pub use depthwise_conv::FastDepthwiseConv;
pub use downsample::FastDownsample;
pub use lrn::FastLrn;
pub use matmul_gemm::FastMatMul;
pub use max_pool::FastMaxPool;
pub use quantize_linear::{
    FastDequantizeLinear, FastDynamicQuantizeLinear, FastQuantizeDequantize, FastQuantizeLinear,
};
pub use reduce_extremum::FastReduceExtremum;
pub use softmax::FastSoftmax;

/// The eval of every op here: `compute` reads the f32 input's elements in place (a tract tensor is
/// always dense, row-major) and writes those of a new tensor of `output_shape`: no copy on either
/// side (going through ndarray copied both, and more time than the pooling itself).
fn eval_f32(
    inputs: TVec<TValue>,
    output_shape: Option<&[usize]>,
    compute: impl FnOnce(&[f32], &[usize], &mut [f32]) -> TractResult<()>,
) -> TractResult<TVec<TValue>> {
    eval_f32_starting(OutputStart::Zeros, inputs, output_shape, compute)
}

/// What an op's output holds before its `compute` runs.
enum OutputStart {
    Zeros,
    /// Left as the allocator gives it: only for ops whose `compute` writes every value (zeroing
    /// a pool's output first was a tenth of its time).
    Unset,
}

fn eval_f32_starting(
    start: OutputStart,
    inputs: TVec<TValue>,
    output_shape: Option<&[usize]>,
    compute: impl FnOnce(&[f32], &[usize], &mut [f32]) -> TractResult<()>,
) -> TractResult<TVec<TValue>> {
    use tessera_core::tract_onnx::tract_core::internal::*;
    let input = args_1!(inputs);
    let plain = input.try_as_plain_ram()?;
    let values = plain.as_slice::<f32>()?;
    let shape = input.shape();
    let output_shape = output_shape.unwrap_or(shape);
    let mut output = match start {
        OutputStart::Zeros => Tensor::zero::<f32>(output_shape)?,
        // SAFETY: f32 has no invalid bit patterns, and the caller's `compute` writes every value.
        OutputStart::Unset => unsafe { Tensor::uninitialized::<f32>(output_shape)? },
    };
    compute(
        values,
        shape,
        output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?,
    )?;
    Ok(tvec!(output.into_tvalue()))
}

fn first_input_is_f32(model: &TypedModel, node: &TypedNode) -> bool {
    node.inputs
        .first()
        .and_then(|i| model.outlet_fact(*i).ok())
        .is_some_and(|f| f.datum_type == f32::datum_type())
}

/// Whether tract's integer matrix products run faster here than the same products in f32:
/// where the CPU has dot-product instructions (arm64; x86-64 with AVX-512 VNNI or AVX-VNNI).
/// x86-64 without VNNI has only tract's AVX2 integer kernel, which widens the bytes to 16 bits
/// and multiplies 8 pairs an instruction (at best half an f32 FMA's rate), and whose inner loop
/// (tract-linalg 0.23.9) loads each step with a legacy-SSE `movq` among VEX instructions: on the
/// AMD EPYC Zen 3 VM of 2026-12-02 each such load cost ~120 ns (a 7-instruction loop: 124.8 ns an
/// iteration against 1.4 with `vmovq`), and quantized models ran 26-48× slower than their float
/// versions. There, quantized products run as f32 sums of their centred integers
/// ([`qdq_products`]; QDQ ones stay f32 between their dequantization and quantization): there,
/// 1 thread, magika QOperator 801 -> 20.4 ms, ppocrv4_rec QOperator 1427 -> 54.9
/// (docs/benchmarks.md); but for unit-stride convolutions and products by constant weights,
/// which Tessera's own AVX2 kernels run as integers (`quantized_tap_products`,
/// `quantized_matmul`: 16-bit pairs, twice the f32 FMA's rate).
pub fn integer_products_pay() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vnni")
            || std::arch::is_x86_feature_detected!("avxvnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// Whether Tessera's tap kernel for quantized convolutions runs on this CPU (x86-64 with
/// AVX-512 VNNI or AVX2).
pub fn tap_products_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        quantized_tap_products::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether a quantized convolution of `conv`'s geometry runs as integers on Tessera's tap
/// kernel on this CPU (given weights that fit it): x86-64 with AVX-512 VNNI or AVX2.
pub fn quantized_conv_runs_on_tap_products(conv: &Conv) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        quantized_tap_products::runs_geometry(conv)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = conv;
        false
    }
}

/// Whether making a QDQ pattern's float convolution `conv` over an input of `shape` an integer
/// one for Tessera's tap kernel pays on this CPU (given weights that fit it).
pub fn tap_products_pay_over_float(conv: &Conv, shape: &[usize]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        quantized_tap_products::pays_over_float(conv, shape)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (conv, shape);
        false
    }
}

/// Whether Tessera's AVX2 kernel for quantized products by constant weights runs on this CPU.
pub fn quantized_matmul_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        quantized_matmul::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A quantized matrix product by constant weights, `centred` on their zero points (`depth ×
/// columns`, row-major), of a computed `input` (u8 or i8) centred on `input_zero` (`None`: the
/// op's second input), as exact i32 sums on Tessera's AVX2 kernel (`quantized_matmul`), or `None`
/// where it does not run (no AVX2, sums that could leave i32).
pub fn quantized_matmul_on_avx2(
    centred: &[i32],
    depth: usize,
    columns: usize,
    input: DatumType,
    input_zero: Option<i32>,
) -> Option<Box<dyn TypedOp>> {
    #[cfg(target_arch = "x86_64")]
    {
        let op = quantized_matmul::FastQuantizedMatMul::for_weights(
            centred, depth, columns, input, input_zero,
        )?;
        Some(Box::new(op))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (centred, depth, columns, input, input_zero);
        None
    }
}

/// Runs every quantized convolution of `model` that Tessera's tap kernel takes on it (x86-64
/// with AVX-512 VNNI or AVX2; elsewhere none). Returns how many.
pub fn quantized_convs_on_tap_products(model: &mut TypedModel) -> TractResult<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        quantized_tap_products::use_quantized_tap_products(model)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = model;
        Ok(0)
    }
}

/// Replaces, in place, the ops of `model` that have a faster cpu version here.
pub fn use_cpu_ops(model: &mut TypedModel) -> TractResult<()> {
    quantize_linear::gather_before_dequantize(model)?;
    quantized_depthwise_conv::use_quantized_depthwise(model)?;
    quantized_convs_on_tap_products(model)?;
    quantized_conv_in_f32::quantized_convs_in_f32(model)?;
    weight_zero_point::weight_zero_points_as_row_terms(model)?;
    #[cfg(target_arch = "x86_64")]
    crate::blocked_layout::use_blocked_layout(model)?;
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let f32_input = first_input_is_f32(model, node);
        if !f32_input {
            continue;
        }
        if let Some(fast) = node
            .op_as::<tessera_core::tract_onnx::tract_core::ops::einsum::EinSum>()
            .filter(|_| node.inputs.len() == 2 && all_inputs_f32(model, node))
            .and_then(|op| {
                let shapes = concrete_input_shapes(model, node)?;
                FastMatMul::for_op(op, &shapes[0], &shapes[1])
            })
            .filter(|fast| {
                let constant = |i: usize| crate::plan_graph::is_constant(model, node.inputs[i]);
                fast.worth_it(constant(0), constant(1))
            })
        {
            model.node_mut(id).op = Box::new(fast);
            continue;
        }
        if let Some(lrn) = node.op_as::<tract_onnx_opl::lrn::Lrn>() {
            let fast = FastLrn::from_tract(lrn);
            model.node_mut(id).op = Box::new(fast);
            continue;
        }
        let Some(shape) = model
            .outlet_fact(node.inputs[0])?
            .shape
            .as_concrete()
            .map(|s| s.to_vec())
        else {
            continue;
        };
        if let Some(fast) = node
            .op_as::<MaxPool>()
            .and_then(|pool| FastMaxPool::for_op(pool, &shape))
        {
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = node
            .op_as::<SumPool>()
            .and_then(|pool| FastAvgPool::for_op(pool, &shape))
        {
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = node
            .op_as::<Conv>()
            .filter(|_| node.inputs.len() == 3 && all_inputs_f32(model, node))
            .and_then(|conv| FastDepthwiseConv::for_op(conv, &shape))
        {
            model.node_mut(id).op = Box::new(fast);
        } else {
            if let Some(fast) = node
                .op_as::<Deconv>()
                .filter(|_| node.inputs.len() == 3 && all_inputs_f32(model, node))
                .and_then(|deconv| {
                    let bias = model.outlet_fact(node.inputs[2]).ok()?;
                    FastConvTranspose::for_op(deconv, &shape, bias.shape.as_concrete()?)
                })
            {
                let kernel_by_row =
                    lay_out_constant_kernel(model, id, "kernel_by_row", |k| fast.kernel_by_row(k))?;
                let fast = FastConvTranspose {
                    kernel_by_row,
                    ..fast
                };
                model.node_mut(id).op = Box::new(fast);
                continue;
            }
            if let Some(fast) = node
                .op_as::<Conv>()
                .filter(|_| node.inputs.len() == 3 && all_inputs_f32(model, node))
                .and_then(|conv| FastConv::for_op(conv, &shape))
                .filter(FastConv::worth_it)
            {
                let kernel_by_tap = fast.reads_kernel_by_tap()
                    && lay_out_constant_kernel(model, id, "kernel_by_tap", |k| {
                        fast.kernel_by_tap(k)
                    })?;
                let kernel_packed = fast.tap_products
                    && lay_out_constant_kernel(model, id, "kernel_packed", |k| {
                        fast.packed_kernel(k)
                    })?;
                let fast = FastConv {
                    kernel_by_tap,
                    kernel_packed,
                    ..fast
                };
                model.node_mut(id).op = Box::new(fast);
            }
        }
    }
    {
        gemm_common::fuse_epilogues::<FastConv>(model)?;
        gemm_common::fuse_epilogues::<FastMatMul>(model)?;
    }
    Ok(())
}

/// Lays out the constant kernel (input 1) of node `id` once, here, as its runs read it, and
/// rewires the node to the laid-out constant; `false` (nothing changed) when the kernel is
/// computed at run time. Rearranging on every run cost 2.4 MB of copying for 256 channels of a
/// 3×3 convolution, on one thread.
fn lay_out_constant_kernel(
    model: &mut TypedModel,
    id: usize,
    layout: &str,
    lay_out: impl FnOnce(&[f32]) -> Vec<f32>,
) -> TractResult<bool> {
    let kernel_outlet = model.node(id).inputs[1];
    let Some(kernel) = model.outlet_fact(kernel_outlet)?.konst.clone() else {
        return Ok(false);
    };
    let values = lay_out(kernel.try_as_plain_ram()?.as_slice::<f32>()?);
    let name = format!("{}.{layout}", model.node(id).name);
    let constant =
        tessera_core::model::constant_facts::add_const(model, name, tensor1(&values).into())?;
    model.add_edge(constant, InletId::new(id, 1))?;
    Ok(true)
}

/// The shapes of `node`'s inputs, when all are known.
fn concrete_input_shapes(model: &TypedModel, node: &TypedNode) -> Option<Vec<Vec<usize>>> {
    node.inputs
        .iter()
        .map(|i| {
            let fact = model.outlet_fact(*i).ok()?;
            fact.shape.as_concrete().map(|s| s.to_vec())
        })
        .collect()
}

/// Whether every input of `node` is f32 (what Tessera's ops here read).
fn all_inputs_f32(model: &TypedModel, node: &TypedNode) -> bool {
    node.inputs.iter().all(|i| {
        model
            .outlet_fact(*i)
            .is_ok_and(|f| f.datum_type == f32::datum_type())
    })
}

/// Whether `node` has one output, of f32.
fn output_is_f32(model: &TypedModel, node: &TypedNode) -> bool {
    node.outputs.len() == 1
        && model
            .outlet_fact(node.id.into())
            .is_ok_and(|f| f.datum_type == f32::datum_type())
}

/// Whether `node` casts 8- or 32-bit integers to f32.
fn casts_integers_to_f32(model: &TypedModel, node: &TypedNode) -> bool {
    use tessera_core::tract_onnx::tract_core::ops::cast::Cast;
    node.op_as::<Cast>()
        .is_some_and(|c| c.to == f32::datum_type())
        && node.inputs.len() == 1
        && model
            .outlet_fact(node.inputs[0])
            .is_ok_and(|f| [DatumType::U8, DatumType::I8, DatumType::I32].contains(&f.datum_type))
}

/// Replaces, in place, the ops of an optimized plan that have a faster cpu version here. After
/// tract's optimizer, not before: its QDQ pass looks for its own quantize ops.
pub fn use_cpu_ops_in_plan(model: &mut TypedModel) -> TractResult<()> {
    use tessera_core::tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
    use tessera_core::tract_onnx::tract_core::ops::quant::DequantizeLinearF32;
    // Before the loop below turns the PRelu's product into a chain of its own.
    bin_chain::fuse_prelu(model)?;
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let f32_input = first_input_is_f32(model, node);
        if let Some(fast) = node
            .op_as::<ElementWiseOp>()
            .filter(|_| f32_input)
            .and_then(FastQuantizeLinear::for_op)
        {
            model.node_mut(id).op = Box::new(fast);
        } else if FastDynamicQuantizeLinear::replaces(node.op.as_ref()) && f32_input {
            model.node_mut(id).op = Box::new(FastDynamicQuantizeLinear);
        } else if let Some(op) = node.op_as::<DequantizeLinearF32>() {
            let fast = FastDequantizeLinear::for_op(op);
            model.node_mut(id).op = Box::new(fast);
        } else if casts_integers_to_f32(model, node) {
            // A dequantization with scale 1: an integer product's sums cast to f32 (dynamic
            // quantization), vectorized, where tract converts value by value (minilm's dynamic
            // s8 variant: 0.96 ms per run).
            let fast = FastDequantizeLinear {
                scale: 1.0,
                zero_point: 0,
            };
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = Some(node)
            .filter(|_| all_inputs_f32(model, node) && output_is_f32(model, node))
            .and_then(|node| {
                FastBinChain::for_op(node.op.as_op(), &concrete_input_shapes(model, node)?)
            })
        {
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = node
            .op_as::<Downsample>()
            .filter(|_| f32_input && output_is_f32(model, node))
            .and_then(|op| FastDownsample::for_op(op, &concrete_input_shapes(model, node)?[0]))
        {
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = node
            .op_as::<Softmax>()
            .filter(|_| all_inputs_f32(model, node) && output_is_f32(model, node))
            .and_then(|op| FastSoftmax::for_op(op, &concrete_input_shapes(model, node)?[0]))
        {
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = node
            .op_as::<Reduce>()
            .filter(|_| all_inputs_f32(model, node) && output_is_f32(model, node))
            .and_then(|op| FastReduceExtremum::for_op(op, &concrete_input_shapes(model, node)?[0]))
        {
            model.node_mut(id).op = Box::new(fast);
        }
    }
    quantize_linear::fuse_quantize_dequantize(model)?;
    bin_chain::fold_round_trips(model)?;
    bin_chain::merge_chains(model)?;
    bin_chain::fold_quantizations(model)?;
    bin_chain::fold_dequantizations(model)?;
    Ok(())
}
