//! The channels-blocked layout of cpu plans on x86-64 CPUs with AVX-512, or AVX2 and FMA:
//! between the ops that support it, tensors are `[N, C/16, H, W, 16]` (onnxruntime's NCHWc with
//! blocks of 16), reordered from and to channels-first at the region's edges.
//!
//! In it a convolution's 16 output channels of a position are one vector
//! ([`BlockedConv`](crate::ops::BlockedConv)), a max pool's window is a vector max per tap
//! ([`BlockedPool`](crate::ops::BlockedPool), and an average), and each thread writes whole blocks.
//! Concatenations along channels (of whole blocks) and element-wise ops between tensors of the
//! region, or with per-channel or scalar constants, run as they are on the blocked shape (the
//! comparison and select of a PReLU too: its bool tensor is blocked as well).
//!
//! The pass: eligible convolutions (2-D, one group, a multiple of 16 output channels, inputs a
//! multiple of 16 or fewer than 16 channels, constant weights) become blocked convolutions and
//! take the bias, scale and clamp after them ([`gemm_common::fuse_epilogues`]); then, in
//! evaluation order, every op whose data inputs are all blocked joins the region when it
//! supports the layout; then reorders are wired where tensors enter and leave it.

use crate::ops::gemm_common;
use crate::ops::pool_2d::{Axis, Window2d};
use crate::ops::{BlockedConv, BlockedPool, Geometry, InputLayout};
use std::collections::HashMap;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::array::TypedConcat;
use tessera_core::tract_onnx::tract_core::ops::binary::TypedBinOp;
use tessera_core::tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, MaxPool, SumPool};
use tessera_core::tract_onnx::tract_core::ops::einsum::EinSum;
use tessera_core::tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tessera_core::tract_onnx::tract_core::ops::logic::Iff;
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

/// Channels per block: one AVX-512 vector of f32, two AVX ones.
pub const BLOCK: usize = 16;

/// Whether this CPU runs the blocked kernels (AVX-512, or AVX2 and FMA: elsewhere plans keep
/// channels first).
pub fn runs_here() -> bool {
    BlockedConv::runs_here()
}

/// Puts the regions of `model` that support it in the blocked layout (see the module); returns
/// how many convolutions run blocked.
pub fn use_blocked_layout(model: &mut TypedModel) -> TractResult<usize> {
    if !runs_here() {
        return Ok(0);
    }
    let worth = convolutions_worth_blocking(model)?;
    block(model, &worth)
}

/// Runs convolutions `ids` (eligible ones, [`blocked_conv_for`]) blocked, with the ops after
/// them that support it; returns how many.
fn block(model: &mut TypedModel, ids: &[usize]) -> TractResult<usize> {
    let convolutions = blocked_convolutions(model, ids)?;
    if convolutions == 0 {
        return Ok(0);
    }
    gemm_common::fuse_epilogues::<BlockedConv>(model)?;
    model.compact()?;
    lay_out(model)?;
    model.compact()?;
    Ok(convolutions)
}

/// Replaces convolutions `ids` (tract's `Conv`, and the `EinSum` of a 1×1 one) by
/// [`BlockedConv`]s still standing for their channels-first outputs. Returns how many.
fn blocked_convolutions(model: &mut TypedModel, ids: &[usize]) -> TractResult<usize> {
    let mut count = 0;
    for &id in ids {
        let node = model.node(id);
        let Some((conv, input)) = blocked_conv_for(model, node)? else {
            continue;
        };
        let patch = TypedModelPatch::replace_single_op(model, node, &[input], conv)?;
        patch.apply(model)?;
        count += 1;
    }
    Ok(count)
}

/// The constant of `outlet`, when it is one of f32 (read in place: weights are packed from it).
fn constant(model: &TypedModel, outlet: OutletId) -> Option<Arc<Tensor>> {
    crate::plan_graph::constant(model, outlet).filter(|v| v.datum_type() == f32::datum_type())
}

fn concrete_shape(model: &TypedModel, outlet: OutletId) -> Option<TVec<usize>> {
    let fact = model.outlet_fact(outlet).ok()?;
    if fact.datum_type != f32::datum_type() {
        return None;
    }
    fact.shape.as_concrete().map(|s| s.into())
}

/// Output positions below which a convolution with weights over [`STREAMED_WEIGHTS`] bytes stays
/// channels first.
const FEW_POSITIONS: usize = 100;

/// Bytes of weights a blocked convolution over few positions streams from memory each run, on
/// AVX-512 CPUs: ResNet-50's last stage (7×7 planes, 3×3 weights of 9.4 MB) ran 1.1–1.3× its
/// channels-first time blocked; at 2 threads the model 0.98× with that stage channels first. On
/// AVX2 CPUs the stage is faster blocked (Zen 3, 1 thread: 21.8 -> 19.5 ms; the model 0.98× /
/// 0.97× at 1 / 2 threads): channels first its strided convolution is a gathered `gemm` product.
const STREAMED_WEIGHTS: usize = 2 << 20;

/// Whether a convolution of `in_channels` into `out_channels` can run blocked.
fn channels_fit(in_channels: usize, out_channels: usize) -> bool {
    out_channels > 0
        && out_channels.is_multiple_of(BLOCK)
        && (in_channels < BLOCK || in_channels.is_multiple_of(BLOCK))
}

/// An eligible convolution, read from the graph's facts (no weight is copied).
struct Eligible {
    geometry: Geometry,
    layout: InputLayout,
    input: OutletId,
    kernel: OutletId,
    /// A `Conv`'s bias; a 1×1 convolution's `EinSum` has none.
    bias: Option<OutletId>,
}

/// The shape of `outlet` when it is a constant of f32.
fn constant_shape(model: &TypedModel, outlet: OutletId) -> Option<TVec<usize>> {
    let fact = model.outlet_fact(outlet).ok()?;
    (fact.konst.is_some() && fact.datum_type == f32::datum_type())
        .then(|| fact.shape.as_concrete().map(TVec::from))
        .flatten()
}

/// `node` as an eligible convolution, when it is one.
fn eligible(model: &TypedModel, node: &TypedNode) -> Option<Eligible> {
    let input = *node.inputs.first()?;
    let shape = concrete_shape(model, input).filter(|s| s.len() == 4)?;
    let layout = if shape[1] < BLOCK {
        InputLayout::ChannelsFirst
    } else {
        InputLayout::Blocked
    };
    let (geometry, bias) = if let Some(conv) = node.op_as::<Conv>() {
        if conv.group != 1
            || conv.q_params.is_some()
            || conv.kernel_fmt != KernelFormat::OIHW
            || conv.pool_spec.data_format != DataFormat::NCHW
            || node.inputs.len() != 3
        {
            return None;
        }
        let kernel_shape = constant_shape(model, node.inputs[1])?;
        constant_shape(model, node.inputs[2])?;
        let window = Window2d::new(&conv.pool_spec, &shape)?;
        if kernel_shape.len() != 4
            || kernel_shape[1] != shape[1]
            || window.rows.padded_end.is_some()
        {
            return None;
        }
        let geometry = Geometry {
            batch: shape[0],
            in_channels: shape[1],
            out_channels: kernel_shape[0],
            rows: window.rows,
            cols: window.cols,
        };
        (geometry, Some(node.inputs[2]))
    } else if let Some(einsum) = node.op_as::<EinSum>() {
        // tract's form of a 1×1 convolution, channels first.
        if einsum.q_params.is_some()
            || einsum.operating_dt != f32::datum_type()
            || einsum.axes.to_string() != "NIHW,OI->NOHW"
            || node.inputs.len() != 2
        {
            return None;
        }
        let weights_shape = constant_shape(model, node.inputs[1])?;
        if weights_shape.len() != 2 || weights_shape[1] != shape[1] {
            return None;
        }
        let unit = |len: usize| Axis {
            input: len,
            output: len,
            kernel: 1,
            stride: 1,
            dilation: 1,
            pad_before: 0,
            padded_end: None,
        };
        let geometry = Geometry {
            batch: shape[0],
            in_channels: shape[1],
            out_channels: weights_shape[0],
            rows: unit(shape[2]),
            cols: unit(shape[3]),
        };
        (geometry, None)
    } else {
        return None;
    };
    (channels_fit(geometry.in_channels, geometry.out_channels) && !streams_weights(&geometry))
        .then_some(Eligible {
            geometry,
            layout,
            input,
            kernel: node.inputs[1],
            bias,
        })
}

/// The blocked convolution for `node` and its data input, when it is an eligible convolution.
fn blocked_conv_for(
    model: &TypedModel,
    node: &TypedNode,
) -> TractResult<Option<(BlockedConv, OutletId)>> {
    let Some(e) = eligible(model, node) else {
        return Ok(None);
    };
    let Some(kernel) = constant(model, e.kernel) else {
        return Ok(None);
    };
    let bias = match e.bias.map(|b| constant(model, b)) {
        Some(Some(bias)) => Some(bias),
        Some(None) => return Ok(None),
        None => None,
    };
    let kernel = kernel.try_as_plain_ram()?;
    let bias_values = match &bias {
        Some(bias) => bias.try_as_plain_ram()?.as_slice::<f32>()?.to_vec(),
        None => vec![0.0],
    };
    let op = BlockedConv::new(
        e.geometry,
        e.layout,
        kernel.as_slice::<f32>()?,
        &bias_values,
    )?;
    Ok(Some((op, e.input)))
}

/// Whether a convolution's weights are many for the positions they are used at, on a CPU where
/// that makes it slower blocked ([`STREAMED_WEIGHTS`]).
fn streams_weights(g: &Geometry) -> bool {
    let weights = g.out_channels * g.in_channels * g.rows.kernel * g.cols.kernel;
    BlockedConv::runs_avx512()
        && weights * size_of::<f32>() > STREAMED_WEIGHTS
        && g.rows.output * g.cols.output < FEW_POSITIONS
}

/// `[N, C/16, H, W, 16]` of a channels-first 4-D shape.
pub fn blocked_shape(shape: &[usize]) -> TVec<usize> {
    tvec![shape[0], shape[1] / BLOCK, shape[2], shape[3], BLOCK]
}

/// How an input of an element-wise op in the region is read.
enum Operand {
    /// A blocked tensor of the region.
    Blocked,
    /// A constant of one value per channel (`[1, C, 1, 1]`) or one value (`[1, 1, 1, 1]`),
    /// reshaped to the blocked rank.
    Constant(Arc<Tensor>),
}

/// What a node is in the region, given which of its inputs are blocked (`blocked`: their
/// channels-first shapes).
enum Member {
    /// A convolution; the input `reorder`ed into the region first when it is from outside.
    Conv {
        macs: usize,
        reorder: Option<OutletId>,
    },
    Pool(BlockedPool),
    /// Runs as it is on the blocked shape, its output of this type; constant operands
    /// (`(slot, value)`) reshaped to the blocked rank.
    AsItIs(DatumType, Vec<(usize, Arc<Tensor>)>),
}

/// Whether and how node `id` joins the region, with its output's channels-first shape.
/// `planning`: convolutions are still tract's (see [`blocked_conv_for`]), not yet blocked.
fn member(
    model: &TypedModel,
    id: usize,
    blocked: &HashMap<OutletId, TVec<usize>>,
    planning: bool,
) -> TractResult<Option<(Member, TVec<usize>)>> {
    let node = model.node(id);
    let conv = match node.op_as::<BlockedConv>() {
        Some(conv) => Some((conv.geometry, conv.input_layout)),
        None if planning => eligible(model, node).map(|e| (e.geometry, e.layout)),
        None => None,
    };
    if let Some((g, layout)) = conv {
        let input = node.inputs[0];
        let reorder =
            (layout == InputLayout::Blocked && !blocked.contains_key(&input)).then_some(input);
        let nchw: TVec<usize> = tvec![g.batch, g.out_channels, g.rows.output, g.cols.output];
        let macs = nchw.iter().product::<usize>() * g.in_channels * g.rows.kernel * g.cols.kernel;
        return Ok(Some((Member::Conv { macs, reorder }, nchw)));
    }
    if node.outputs.len() != 1 || !node.inputs.iter().any(|i| blocked.contains_key(i)) {
        return Ok(None);
    }
    let output_fact = model.outlet_fact(OutletId::new(id, 0))?;
    let output_type = output_fact.datum_type;
    let Some(output_shape) = output_fact.shape.as_concrete().map(TVec::from) else {
        return Ok(None);
    };
    let first = &blocked.get(&node.inputs[0]);
    let pool = if let (Some(pool), Some(shape)) = (node.op_as::<MaxPool>(), first) {
        Window2d::new(&pool.pool_spec, shape)
            .filter(|_| pool.with_index_outputs.is_none())
            .map(BlockedPool::max)
    } else if let (Some(pool), Some(shape)) = (node.op_as::<SumPool>(), first) {
        Window2d::new(&pool.pool_spec, shape)
            .map(|w| BlockedPool::average(w, pool.count_include_pad, pool.normalize))
    } else {
        None
    };
    if let Some(pool) = pool {
        let nchw = pool.window.output_shape.clone();
        return Ok(Some((Member::Pool(pool), nchw)));
    }
    let all_blocked_alike = || {
        let shape = blocked.get(&node.inputs[0]);
        node.inputs.iter().all(|i| blocked.get(i) == shape)
    };
    let as_it_is = |constants| Some((Member::AsItIs(output_type, constants), output_shape.clone()));
    if node.op_is::<ElementWiseOp>() && node.inputs.len() == 1 && output_type == DatumType::F32 {
        return Ok(as_it_is(vec![]));
    }
    if let Some(concat) = node.op_as::<TypedConcat>() {
        let whole_blocks = node.inputs.iter().all(|i| blocked.contains_key(i));
        return Ok((concat.axis == 1 && whole_blocks)
            .then(|| as_it_is(vec![]))
            .flatten());
    }
    if node.op_is::<Iff>() {
        return Ok((all_blocked_alike() && output_type == DatumType::F32)
            .then(|| as_it_is(vec![]))
            .flatten());
    }
    if node.op_is::<TypedBinOp>() && node.inputs.len() == 2 {
        // f32, or the bool of a comparison (a PReLU's `0 > x`, read by its select).
        if ![DatumType::F32, DatumType::Bool].contains(&output_type) {
            return Ok(None);
        }
        let mut constants = vec![];
        for (slot, input) in node.inputs.iter().enumerate() {
            match element_wise_operand(model, blocked, *input, &output_shape) {
                Some(Operand::Blocked) => {}
                Some(Operand::Constant(value)) => constants.push((slot, value)),
                None => return Ok(None),
            }
        }
        return Ok(as_it_is(constants));
    }
    Ok(None)
}

/// Multiply-accumulates of a region's convolutions per value it reorders, below which it stays
/// channels first: a reorder moves each value through memory twice (ppocrv4_det's 1×1
/// convolutions over 320×320 planes of 32 channels spent more time in reorders than they saved),
/// a blocked convolution saves a fraction of a nanosecond per thousand multiply-accumulates.
const MIN_MACS_PER_REORDERED_VALUE: usize = 1000;

/// The convolutions of `model` worth running blocked: the regions they would form with the ops
/// after them (as [`lay_out`] forms them), each kept only when its convolutions' work pays for
/// its reorders ([`MIN_MACS_PER_REORDERED_VALUE`]).
fn convolutions_worth_blocking(model: &TypedModel) -> TractResult<Vec<usize>> {
    let mut blocked: HashMap<OutletId, TVec<usize>> = HashMap::new();
    // Each member's region (its first member), and each region's work and reorders.
    let mut region: HashMap<usize, usize> = HashMap::new();
    let mut macs: HashMap<usize, usize> = HashMap::new();
    let mut reordered: HashMap<usize, usize> = HashMap::new();
    let mut convs = vec![];
    let order = model.eval_order()?;
    for &id in &order {
        let Some((member, nchw)) = member(model, id, &blocked, true)? else {
            continue;
        };
        // The regions of its blocked inputs become one.
        let inputs: Vec<usize> = (model.node(id).inputs.iter())
            .filter(|i| blocked.contains_key(i))
            .map(|i| root(&region, i.node))
            .collect();
        let here = inputs.first().copied().unwrap_or(id);
        for other in inputs.iter().filter(|&&r| r != here) {
            region.insert(*other, here);
            let (m, r) = (
                macs.remove(other).unwrap_or(0),
                reordered.remove(other).unwrap_or(0),
            );
            *macs.entry(here).or_default() += m;
            *reordered.entry(here).or_default() += r;
        }
        region.insert(id, here);
        if let Member::Conv {
            macs: work,
            reorder,
        } = member
        {
            *macs.entry(here).or_default() += work;
            if let Some(input) = reorder {
                *reordered.entry(here).or_default() += values_of(model, input);
            }
            convs.push(id);
        }
        blocked.insert(OutletId::new(id, 0), nchw);
    }
    // Values leaving each region: read outside it, or model outputs.
    let outputs = model.output_outlets()?;
    for outlet in blocked.keys() {
        let leaves = outputs.contains(outlet)
            || (model.outlet_successors(*outlet).iter())
                .any(|inlet| !blocked.contains_key(&OutletId::new(inlet.node, 0)));
        if leaves {
            *reordered.entry(root(&region, outlet.node)).or_default() += values_of(model, *outlet);
        }
    }
    Ok(convs
        .into_iter()
        .filter(|&id| {
            let r = root(&region, id);
            macs.get(&r).copied().unwrap_or(0)
                >= MIN_MACS_PER_REORDERED_VALUE * reordered.get(&r).copied().unwrap_or(0)
        })
        .collect())
}

/// The first member of `id`'s region.
fn root(region: &HashMap<usize, usize>, mut id: usize) -> usize {
    while let Some(&up) = region.get(&id) {
        if up == id {
            break;
        }
        id = up;
    }
    id
}

fn values_of(model: &TypedModel, outlet: OutletId) -> usize {
    concrete_shape(model, outlet).map_or(0, |s| s.iter().product())
}

/// Chooses the region and rewires `model` (see the module).
fn lay_out(model: &mut TypedModel) -> TractResult<()> {
    // Channels-first shape of every blocked outlet.
    let mut blocked: HashMap<OutletId, TVec<usize>> = HashMap::new();
    let mut to_blocked: HashMap<OutletId, OutletId> = HashMap::new();
    for id in model.eval_order()? {
        let Some((member, nchw)) = member(model, id, &blocked, false)? else {
            continue;
        };
        let output = OutletId::new(id, 0);
        match member {
            Member::Conv { reorder, .. } => {
                if let Some(input) = reorder {
                    let reordered = match to_blocked.get(&input) {
                        Some(r) => *r,
                        None => {
                            let name = format!("{}.to_blocked", model.node(input.node).name);
                            let r = model.wire_node(name, Reorder::ToBlocked, &[input])?[0];
                            to_blocked.insert(input, r);
                            r
                        }
                    };
                    model.add_edge(reordered, InletId::new(id, 0))?;
                }
                let Some(conv) = model.node(id).op_as::<BlockedConv>() else {
                    bail!("a blocked convolution expected at node {id}");
                };
                let mut conv = conv.clone();
                conv.blocked_output = true;
                model.set_outlet_fact(output, f32::fact(&*conv.output_shape()))?;
                model.node_mut(id).op = Box::new(conv);
            }
            Member::Pool(pool) => {
                model.set_outlet_fact(output, f32::fact(&*pool.output_shape()))?;
                model.node_mut(id).op = Box::new(pool);
            }
            Member::AsItIs(datum_type, constants) => {
                for (slot, value) in constants {
                    let name = format!("{}.blocked.{slot}", model.node(id).name);
                    let constant =
                        tessera_core::model::constant_facts::add_const(model, name, value)?;
                    model.add_edge(constant, InletId::new(id, slot))?;
                }
                model.set_outlet_fact(output, datum_type.fact(&*blocked_shape(&nchw)))?;
            }
        }
        blocked.insert(output, nchw);
    }
    leave_region(model, &blocked)
}

/// How input `outlet` of an element-wise op reads in the region with tensors of channels-first
/// `shape`, when it can.
fn element_wise_operand(
    model: &TypedModel,
    blocked: &HashMap<OutletId, TVec<usize>>,
    outlet: OutletId,
    shape: &[usize],
) -> Option<Operand> {
    if let Some(other) = blocked.get(&outlet) {
        return (other[..] == shape[..]).then_some(Operand::Blocked);
    }
    let fact = model.outlet_fact(outlet).ok()?;
    let value = fact.konst.as_ref()?;
    if value.datum_type() != f32::datum_type() || value.rank() != 4 {
        return None;
    }
    let channels = value.shape()[1];
    let per_channel_or_one = value.shape()[0] == 1
        && value.shape()[2..] == [1, 1]
        && (channels == 1 || channels == shape[1]);
    // One value per channel only for a single image: element-wise chains read such an
    // operand block by block ([`crate::ops::FastBinChain`]'s lanes), not image by image.
    if !per_channel_or_one || (channels > 1 && shape[0] != 1) {
        return None;
    }
    // Channel `c` is block `c / 16`, lane `c % 16`: the same values in the same order.
    let target: TVec<usize> = if channels == 1 {
        tvec![1, 1, 1, 1, 1]
    } else {
        tvec![1, channels / BLOCK, 1, 1, BLOCK]
    };
    let mut reshaped = value.clone().into_tensor();
    reshaped.set_shape(&target).ok()?;
    Some(Operand::Constant(reshaped.into_arc_tensor()))
}

/// Wires a reorder back to channels first for every blocked outlet read outside the region
/// (by an op that stayed channels-first, or as a model output).
fn leave_region(
    model: &mut TypedModel,
    blocked: &HashMap<OutletId, TVec<usize>>,
) -> TractResult<()> {
    let outputs = model.output_outlets()?.to_vec();
    let mut outlets: Vec<&OutletId> = blocked.keys().collect();
    outlets.sort();
    for &outlet in outlets {
        let readers: Vec<InletId> = model.outlet_successors(outlet).to_vec();
        let outside: Vec<InletId> = readers
            .into_iter()
            .filter(|inlet| !blocked.contains_key(&OutletId::new(inlet.node, 0)))
            .collect();
        let is_output = outputs.contains(&outlet);
        if outside.is_empty() && !is_output {
            continue;
        }
        let name = format!("{}.from_blocked", model.node(outlet.node).name);
        let back = model.wire_node(name, Reorder::FromBlocked, &[outlet])?[0];
        for inlet in outside {
            model.add_edge(back, inlet)?;
        }
        if is_output {
            let new_outputs: Vec<OutletId> = model
                .output_outlets()?
                .iter()
                .map(|o| if *o == outlet { back } else { *o })
                .collect();
            if let Some(label) = model.outlet_label(outlet).map(str::to_string) {
                model.set_outlet_label(back, label)?;
            }
            model.select_output_outlets(&new_outputs)?;
        }
    }
    Ok(())
}

/// A reorder between channels-first `[N, C, H, W]` and blocked `[N, C/16, H, W, 16]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reorder {
    ToBlocked,
    FromBlocked,
}

impl Reorder {
    fn output_shape(&self, input: &[usize]) -> TractResult<TVec<usize>> {
        Ok(match self {
            Reorder::ToBlocked => {
                ensure!(
                    input.len() == 4 && input[1].is_multiple_of(BLOCK),
                    "blocking a tensor of shape {input:?}"
                );
                blocked_shape(input)
            }
            Reorder::FromBlocked => {
                ensure!(
                    input.len() == 5 && input[4] == BLOCK,
                    "unblocking a tensor of shape {input:?}"
                );
                tvec![input[0], input[1] * BLOCK, input[2], input[3]]
            }
        })
    }

    /// Moves each image's values: blocks of `BLOCK` channels × the plane's positions (`shape`
    /// is the channels-first one).
    fn compute<T: Copy + Send + Sync>(
        &self,
        input: &[T],
        shape: &[usize],
        output: &mut [T],
    ) -> TractResult<()> {
        ensure!(input.len() == output.len(), "a reorder keeps every value");
        let plane: usize = shape[2] * shape[3];
        let block_len = plane * BLOCK;
        let to_blocked = *self == Reorder::ToBlocked;
        crate::parallel::par_chunks_mut(output, block_len, output.len(), |first, chunk| {
            for (b, out) in chunk.chunks_exact_mut(block_len).enumerate() {
                let src = &input[(first + b) * block_len..][..block_len];
                // In runs of positions whose 16 channels' values (4 KiB of f32) stay in L1
                // while they are gathered: walking a whole channel's plane with a stride of
                // 16 values touched a new cache line per value.
                const RUN: usize = 64;
                for p0 in (0..plane).step_by(RUN) {
                    let run = RUN.min(plane - p0);
                    for c in 0..BLOCK {
                        for p in p0..p0 + run {
                            if to_blocked {
                                out[p * BLOCK + c] = src[c * plane + p];
                            } else {
                                out[c * plane + p] = src[p * BLOCK + c];
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }
}

impl Op for Reorder {
    fn name(&self) -> StaticName {
        match self {
            Reorder::ToBlocked => "ToBlocked".into(),
            Reorder::FromBlocked => "FromBlocked".into(),
        }
    }

    op_as_typed_op!();
}

impl EvalOp for Reorder {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let shape: TVec<usize> = input.shape().into();
        let out_shape = self.output_shape(&shape)?;
        let nchw = if *self == Reorder::ToBlocked {
            &shape
        } else {
            &out_shape
        };
        let values = input.try_as_plain_ram()?;
        // SAFETY: f32 and bool tensors only (matched below); `compute` writes every value.
        let mut output = unsafe { Tensor::uninitialized_dt(input.datum_type(), &out_shape)? };
        let mut out = output.try_as_plain_ram_mut()?;
        match input.datum_type() {
            DatumType::F32 => {
                self.compute(values.as_slice::<f32>()?, nchw, out.as_slice_mut::<f32>()?)?
            }
            DatumType::Bool => self.compute(
                values.as_slice::<bool>()?,
                nchw,
                out.as_slice_mut::<bool>()?,
            )?,
            other => bail!("reordering a tensor of {other:?}"),
        }
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for Reorder {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let Some(shape) = inputs[0].shape.as_concrete() else {
            bail!("a reorder of a symbolic shape");
        };
        Ok(tvec!(
            inputs[0].datum_type.fact(&*self.output_shape(shape)?)
        ))
    }
}

/// Test values in [-1, 1), a pattern without short repeats, by `seed`.
#[cfg(test)]
pub fn test_values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0)
        .collect()
}

/// `x` of channels-first `shape` (`[N, C, H, W]`, `C` a multiple of 16) in the blocked layout.
#[cfg(test)]
pub fn blocked_values(x: &[f32], shape: &[usize]) -> Vec<f32> {
    let mut out = vec![f32::NAN; x.len()];
    Reorder::ToBlocked
        .compute(x, shape, &mut out)
        .expect("a tensor of whole blocks");
    out
}

#[cfg(test)]
mod tests {
    use super::test_values as values;
    use super::*;
    use crate::onnx_test_graph::*;
    use tessera_core::model::specialize::Lowering;
    use tessera_core::{Model, Tensor as TesseraTensor};
    use tract_linalg::multithread::{Executor, multithread_tract_scope};

    /// An RGB convolution (stride 2, channels-first input), a ReLU that is also a model output,
    /// a max pool, a 1×1 convolution with bias and ReLU, a 3×3 one of a second input (16
    /// channels: reordered into the region), their concatenation, a per-channel addition, a
    /// sigmoid and a last 1×1 convolution, the model's other output.
    fn model() -> Vec<u8> {
        let initializers = vec![
            f32s("w1", &[16, 3, 3, 3], &values(16 * 27, 1)),
            f32s("b1", &[16], &values(16, 2)),
            f32s("w2", &[32, 16, 1, 1], &values(32 * 16, 3)),
            f32s("b2", &[32], &values(32, 4)),
            f32s("w3", &[32, 16, 3, 3], &values(32 * 16 * 9, 5)),
            f32s("k", &[1, 64, 1, 1], &values(64, 6)),
            f32s("w4", &[16, 64, 1, 1], &values(16 * 64, 7)),
            f32s("b4", &[16], &values(16, 8)),
        ];
        let nodes = vec![
            node(
                "Conv",
                &["x", "w1", "b1"],
                "c1",
                vec![ints("strides", &[2, 2]), ints("pads", &[1, 1, 1, 1])],
            ),
            node("Relu", &["c1"], "r1", vec![]),
            node(
                "MaxPool",
                &["r1"],
                "p1",
                vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])],
            ),
            node("Conv", &["p1", "w2", "b2"], "c2", vec![]),
            node("Relu", &["c2"], "r2", vec![]),
            node(
                "Conv",
                &["z", "w3"],
                "c3",
                vec![ints("pads", &[1, 1, 1, 1])],
            ),
            node("Concat", &["r2", "c3"], "cat", vec![int("axis", 1)]),
            node("Add", &["cat", "k"], "s", vec![]),
            node("Sigmoid", &["s"], "sg", vec![]),
            node("Conv", &["sg", "w4", "b4"], "y", vec![]),
        ];
        model_bytes(
            nodes,
            initializers,
            vec![value("x", &[1, 3, 20, 20]), value("z", &[1, 16, 10, 10])],
            vec![value("y", &[1, 16, 10, 10]), value("r1", &[1, 16, 10, 10])],
        )
    }

    fn count(model: &TypedModel, op: &str) -> usize {
        model.nodes().iter().filter(|n| n.op.name() == op).count()
    }

    #[test]
    fn a_region_in_blocked_layout_computes_what_channels_first_does() {
        if !runs_here() {
            // The pass leaves plans alone on CPUs without AVX-512: nothing to compare.
            let model = Model::from_bytes(&model()).unwrap();
            let inputs = [
                TesseraTensor::from_vec(vec![1, 3, 20, 20], values(1200, 9)).unwrap(),
                TesseraTensor::from_vec(vec![1, 16, 10, 10], values(1600, 10)).unwrap(),
            ];
            let mut typed = model
                .lower_for(&inputs, None, Lowering::default())
                .unwrap()
                .typed;
            assert_eq!(use_blocked_layout(&mut typed).unwrap(), 0);
            return;
        }
        let model = Model::from_bytes(&model()).unwrap();
        let (x, z) = (values(1200, 9), values(1600, 10));
        let inputs = [
            TesseraTensor::from_vec(vec![1, 3, 20, 20], x.clone()).unwrap(),
            TesseraTensor::from_vec(vec![1, 16, 10, 10], z.clone()).unwrap(),
        ];
        let lowering = Lowering {
            keep_axes: true,
            ..Lowering::default()
        };
        let plain = model.lower_for(&inputs, None, lowering).unwrap().typed;
        // Too little work for its reorders: left channels first.
        assert_eq!(use_blocked_layout(&mut plain.clone()).unwrap(), 0);
        let mut blocked = plain.clone();
        let eligible: Vec<usize> = (0..plain.nodes().len())
            .filter(|&id| eligible(&plain, plain.node(id)).is_some())
            .collect();
        assert_eq!(block(&mut blocked, &eligible).unwrap(), 4);
        assert_eq!(count(&blocked, "BlockedConv"), 4);
        assert_eq!(count(&blocked, "BlockedMaxPool"), 1);
        // Only the 16-channel input enters through a reorder (the RGB one is read as it is);
        // each model output leaves through one.
        assert_eq!(count(&blocked, "ToBlocked"), 1);
        assert_eq!(count(&blocked, "FromBlocked"), 2);
        let feed = || {
            tvec![
                Tensor::from_shape(&[1, 3, 20, 20], &x)
                    .unwrap()
                    .into_tvalue(),
                Tensor::from_shape(&[1, 16, 10, 10], &z)
                    .unwrap()
                    .into_tvalue(),
            ]
        };
        let want = plain.into_runnable().unwrap().run(feed()).unwrap();
        let blocked = blocked.into_runnable().unwrap();
        for threads in [1, 2] {
            let got = multithread_tract_scope(Executor::multithread(threads), || {
                blocked.run(feed()).unwrap()
            });
            assert_eq!(got.len(), 2);
            for (got, want) in got.iter().zip(&want) {
                assert_eq!(got.shape(), want.shape());
                let got = got.try_as_plain_ram().unwrap();
                let want = want.try_as_plain_ram().unwrap();
                let (got, want) = (
                    got.as_slice::<f32>().unwrap(),
                    want.as_slice::<f32>().unwrap(),
                );
                for (g, w) in got.iter().zip(want) {
                    assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{g} against {w}");
                }
            }
        }
    }

    /// `depth` 3×3 convolutions of 64 channels after one from 16, on 8×8 planes.
    fn chain(depth: usize) -> Vec<u8> {
        let mut initializers = vec![f32s("w0", &[64, 16, 3, 3], &values(64 * 144, 1))];
        let pads = || vec![ints("pads", &[1, 1, 1, 1])];
        let mut nodes = vec![node("Conv", &["x", "w0"], "c0", pads())];
        for i in 1..=depth {
            let (w, input, output) = (format!("w{i}"), format!("c{}", i - 1), format!("c{i}"));
            initializers.push(f32s(&w, &[64, 64, 3, 3], &values(64 * 576, i + 1)));
            nodes.push(node("Conv", &[&input, &w], &output, pads()));
        }
        let last = format!("c{depth}");
        nodes.push(node("Relu", &[&last], "y", vec![]));
        model_bytes(
            nodes,
            initializers,
            vec![value("x", &[1, 16, 8, 8])],
            vec![value("y", &[1, 64, 8, 8])],
        )
    }

    #[test]
    fn a_region_runs_blocked_when_its_work_pays_for_its_reorders() {
        // Reordered: 1024 values in, 4096 out; multiply-accumulates 0.59 M for the first
        // convolution and 2.36 M for each after it.
        for (depth, blocked) in [(1, 0), (3, 4)] {
            let model = Model::from_bytes(&chain(depth)).unwrap();
            let input = TesseraTensor::from_vec(vec![1, 16, 8, 8], values(1024, 3)).unwrap();
            let mut typed = model
                .lower_for(&[input], None, Lowering::default())
                .unwrap()
                .typed;
            let want = if runs_here() { blocked } else { 0 };
            assert_eq!(
                use_blocked_layout(&mut typed).unwrap(),
                want,
                "depth {depth}"
            );
        }
    }

    #[test]
    fn reorders_round_trip_exactly() {
        let shape = [2, 32, 3, 5];
        let x = values(2 * 32 * 15, 3);
        let mut blocked = vec![0.0; x.len()];
        Reorder::ToBlocked
            .compute(&x, &shape, &mut blocked)
            .unwrap();
        // Channel 17 of image 1 at position 4: block 1, lane 1.
        assert_eq!(
            blocked[((2 + 1) * 15 + 4) * BLOCK + 1],
            x[(32 + 17) * 15 + 4]
        );
        let mut back = vec![0.0; x.len()];
        Reorder::FromBlocked
            .compute(&blocked, &shape, &mut back)
            .unwrap();
        assert_eq!(back, x);
    }
}
