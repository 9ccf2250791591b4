//! Checks that run before tract sees a value it would panic on.
//!
//! tract 0.23.9 trusts a model's attributes and constants while it infers shapes: an axis past
//! the rank is an index out of range, a negative dim an assertion, a zero stride a division by
//! zero, a constant `Gather` of a bad index an out-of-range read, and a constant that folds into
//! terabytes an aborting allocation. Natively such a panic is caught; in the browser build it
//! traps the whole module. So Tessera checks each case itself and returns an error naming the
//! node:
//!
//! - attributes tract-onnx's parser itself trusts (Scan's `num_scan_inputs`), on the protobuf
//!   before it is parsed ([`check_before_parsing`]);
//! - attributes that are wrong whatever the input (strides, kernel sizes, permutations) when the
//!   model is loaded ([`Preflight::of_parsed`]);
//! - ranks, shapes and constant values as they become known, node by node, in Tessera's own run
//!   of tract's fact analysis ([`analyse`]), before tract's rules for that node run;
//! - sizes: a value tract would fold while typing, and every tensor of the lowered graph, must
//!   fit [`max_tensor_bytes`].

use crate::model::info::op_key;
use anyhow::Context;
use std::collections::{BTreeSet, HashMap};
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::{InferenceFact, InferenceOp};
use tract_onnx::tract_hir::internal::{Factoid, InferenceNode, bail, format_err};

/// The largest tensor Tessera makes, in bytes: 1 GiB on 32-bit targets (wasm), whose whole
/// address space is 4 GiB and where a failed allocation traps the module; elsewhere 64 GiB, or
/// half the memory available now where that is less (Linux's `MemAvailable`, read again after
/// [`MEMORY_REREAD`]; half, as an op holds its input and its output at once). tract's allocator
/// panics when an allocation fails, and one that succeeds past the free memory is filled until
/// the OS kills the process: on a 24 GiB machine a ConstantOfShape fed `[100000, 100000]`
/// (40 GB) panicked, one fed `[1, 4294967301]` (17 GB, made twice) was killed.
pub fn max_tensor_bytes() -> u64 {
    const NATIVE: u64 = 1 << 36;
    if usize::BITS == 32 {
        return 1 << 30;
    }
    available_memory_now().map_or(NATIVE, |memory| (memory / 2).min(NATIVE))
}

/// The most bytes one model's values may hold at once: a run's values (what tract's plan holds
/// between a value's step and its last use), or the values folded while the model is planned
/// (all kept). Each tensor under [`max_tensor_bytes`] is not enough: several of them filled
/// past the free memory get the process killed. 3 GiB on 32-bit targets (wasm: 4 GiB for the
/// module, its weights and these); elsewhere the memory available now, at most 128 GiB.
pub fn max_live_bytes() -> u64 {
    const NATIVE: u64 = 1 << 37;
    if usize::BITS == 32 {
        return 3 << 30;
    }
    available_memory_now().map_or(NATIVE, |memory| memory.min(NATIVE))
}

/// [`available_memory`], read at most once per [`MEMORY_REREAD`].
fn available_memory_now() -> Option<u64> {
    static READ: std::sync::Mutex<Option<(std::time::Instant, Option<u64>)>> =
        std::sync::Mutex::new(None);
    let mut read = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match *read {
        Some((at, available)) if at.elapsed() < MEMORY_REREAD => available,
        _ => {
            let available = available_memory();
            *read = Some((std::time::Instant::now(), available));
            available
        }
    }
}

/// The most bytes a run of tract's plan holds in values at once, and the node it is at: each
/// node's outputs live from its step (its inputs still held) to the last step that reads them,
/// the model's outputs to the end, as `SimplePlan` frees them. Constants are in memory already
/// and not counted. `None` while a shape is not concrete.
pub fn peak_run_bytes(model: &TypedModel, order: &[usize]) -> TractResult<Option<(u64, usize)>> {
    let outputs = model.output_outlets()?;
    let mut last_use = vec![0usize; model.nodes().len()];
    for (step, &id) in order.iter().enumerate() {
        for input in &model.node(id).inputs {
            last_use[input.node] = last_use[input.node].max(step);
        }
    }
    for output in outputs {
        last_use[output.node] = order.len();
    }
    let mut freed_after = vec![0u64; order.len()];
    let (mut live, mut peak) = (0u64, None);
    for (step, &id) in order.iter().enumerate() {
        let node = model.node(id);
        if node.op_is::<tract_onnx::tract_core::ops::konst::Const>() {
            continue;
        }
        let mut bytes = 0u64;
        for output in &node.outputs {
            let Some(shape) = output.fact.shape.as_concrete() else {
                return Ok(None);
            };
            let size = output.fact.datum_type.size_of();
            bytes = bytes.saturating_add(bytes_of(size, shape.iter().map(|&d| d as u64)));
        }
        live = live.saturating_add(bytes);
        if peak.is_none_or(|(most, _)| live > most) {
            peak = Some((live, id));
        }
        if let Some(freed) = freed_after.get_mut(last_use[id].max(step)) {
            *freed = freed.saturating_add(bytes);
        }
        live = live.saturating_sub(freed_after[step]);
    }
    Ok(Some(peak.unwrap_or((0, 0))))
}

/// A plan whose run would hold more than [`max_live_bytes`] at once is refused before it runs.
pub fn check_run_memory(model: &TypedModel, order: &[usize]) -> TractResult<()> {
    let Some((peak, at)) = peak_run_bytes(model, order)? else {
        return Ok(());
    };
    let limit = max_live_bytes();
    if peak > limit {
        let node = model.node(at);
        bail!(
            "a run would hold {peak} bytes of values at once (at node '{}', {}), more than the {limit} bytes Tessera allows",
            node.name,
            node.op.name(),
        );
    }
    Ok(())
}

/// How long a reading of the available memory stands: a plan's analysis checks hundreds of
/// values in a few milliseconds.
const MEMORY_REREAD: std::time::Duration = std::time::Duration::from_millis(100);

/// The memory available to new allocations in bytes, where the OS says (Linux:
/// `/proc/meminfo`).
fn available_memory() -> Option<u64> {
    if cfg!(target_os = "linux") {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
        let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
        return kib.checked_mul(1024);
    }
    None
}

/// What one node of the model must satisfy once its input facts are known.
#[derive(Debug, Clone)]
enum Check {
    /// `axis` of input 0 in `-(rank + extra)..rank + extra` (Flatten: extra 1, the axis may be
    /// the rank itself).
    Axis { axis: i64, extra: i64 },
    /// Axes of input 0, from an attribute or from the values of input `slot`; Unsqueeze's count
    /// against the output rank (`unsqueeze`).
    Axes {
        attribute: Option<Vec<i64>>,
        slot: usize,
        unsqueeze: bool,
    },
    /// A permutation as long as the input's rank.
    Perm(Vec<i64>),
    /// The values of input `slot` are dims or repeat counts (`min` 0) or steps (`min` 1): none
    /// may be below `min`.
    AtLeast {
        slot: usize,
        min: i64,
        what: &'static str,
    },
    /// Pads (attribute, or the values of input 1) that leave no axis of input 0 below zero; with
    /// `edge` or `reflect` padding, pads that the axis can fill (tract indexes past it).
    Pads {
        attribute: Option<Vec<i64>>,
        mode: Padding,
    },
    /// Indices (input `indices`) into `axis` of input 0: Gather, GatherElements, Scatter*.
    IndicesOnAxis { axis: i64, indices: usize },
    /// GatherND / ScatterND indices: their last axis addresses data axes `batch_dims..`.
    IndicesNd { batch_dims: usize },
    /// Pooling: tract cannot pool an empty plane.
    NonEmptySpatial,
}

/// How a `Pad` fills: the modes that copy the input's own elements need enough of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Padding {
    /// A constant value (and `wrap`, which tract refuses itself).
    Constant,
    /// The edge element repeated: the axis must have one.
    Edge,
    /// Mirrored without the edge element: each pad must be shorter than the axis.
    Reflect,
}

/// The checks of a model's nodes, keyed by tract node id.
#[derive(Debug, Clone, Default)]
pub struct Preflight {
    checks: HashMap<usize, (String, Vec<Check>)>,
}

fn attribute<'a>(node: &'a pb::NodeProto, name: &str) -> Option<&'a pb::AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

fn ints(node: &pb::NodeProto, name: &str) -> Option<Vec<i64>> {
    attribute(node, name).map(|a| a.ints.clone())
}

fn int(node: &pb::NodeProto, name: &str, default: i64) -> i64 {
    attribute(node, name).map(|a| a.i).unwrap_or(default)
}

impl Preflight {
    /// The checks of `graph`'s nodes, as tract-onnx parsed it into `parsed` (reading `outer`
    /// values from enclosing graphs): tract numbers the graph's inputs and initializers first,
    /// then its nodes in order, then a source for each outer value. Attributes that are wrong
    /// whatever the input are refused here.
    pub fn of_parsed(
        graph: &pb::GraphProto,
        parsed: &InferenceModel,
        outer: usize,
    ) -> Result<Preflight, String> {
        let first_node = parsed
            .nodes()
            .len()
            .saturating_sub(graph.node.len() + outer);
        let mut checks = HashMap::new();
        for (ix, node) in graph.node.iter().enumerate() {
            let found = node_checks(node)?;
            if !found.is_empty() {
                checks.insert(first_node + ix, (describe(node), found));
            }
        }
        Ok(Preflight { checks })
    }
}

/// Attributes tract-onnx's parser itself trusts, checked on the protobuf before it runs (in every
/// graph, subgraphs included): Scan's `num_scan_inputs` sizes a subtraction there.
pub fn check_before_parsing(graph: &pb::GraphProto) -> Result<(), String> {
    let mut found = Ok(());
    crate::model::info::walk_nodes(graph, &mut |node| {
        if found.is_err() || node.op_type != "Scan" {
            return;
        }
        let scan_inputs = int(node, "num_scan_inputs", 0);
        let body_inputs = attribute(node, "body")
            .and_then(|a| a.g.as_ref())
            .map_or(0, |body| body.input.len());
        if scan_inputs < 1
            || scan_inputs as usize > node.input.len()
            || scan_inputs as usize > body_inputs
        {
            found = Err(format!(
                "{}: num_scan_inputs {scan_inputs} does not fit its {} inputs and a body of {body_inputs}",
                describe(node),
                node.input.len()
            ));
        }
    });
    found
}

/// The node as tract names it: its name, else its first output.
fn describe(node: &pb::NodeProto) -> String {
    let name = match node.output.first() {
        Some(output) if node.name.is_empty() => output,
        _ => &node.name,
    };
    format!("node '{name}' ({})", op_key(node))
}

fn node_checks(node: &pb::NodeProto) -> Result<Vec<Check>, String> {
    let op = node.op_type.as_str();
    let mut checks = vec![];
    match op {
        "Conv" | "ConvTranspose" | "ConvInteger" | "QLinearConv" | "MaxPool" | "AveragePool"
        | "LpPool" => {
            for name in ["kernel_shape", "strides", "dilations"] {
                if let Some(bad) = ints(node, name).and_then(|v| v.into_iter().find(|&v| v < 1)) {
                    return Err(format!(
                        "{}: {name} holds {bad}; each must be 1 or more",
                        describe(node)
                    ));
                }
            }
            if attribute(node, "group").is_some_and(|g| g.i < 1) {
                return Err(format!("{}: group must be 1 or more", describe(node)));
            }
            if matches!(op, "MaxPool" | "AveragePool" | "LpPool") {
                checks.push(Check::NonEmptySpatial);
            }
        }
        "Transpose" => {
            if let Some(perm) = ints(node, "perm") {
                let mut seen = vec![false; perm.len()];
                for &p in &perm {
                    if p < 0
                        || p as usize >= perm.len()
                        || std::mem::replace(&mut seen[p as usize], true)
                    {
                        return Err(format!(
                            "{}: perm {perm:?} is not a permutation of 0..{}",
                            describe(node),
                            perm.len()
                        ));
                    }
                }
                checks.push(Check::Perm(perm));
            }
        }
        "Flatten" => checks.push(Check::Axis {
            axis: int(node, "axis", 1),
            extra: 1,
        }),
        "ArgMax" | "ArgMin" | "Softmax" | "LogSoftmax" | "Hardmax"
            if attribute(node, "axis").is_some() =>
        {
            checks.push(Check::Axis {
                axis: int(node, "axis", 0),
                extra: 0,
            })
        }
        "Unsqueeze" | "Squeeze" => checks.push(Check::Axes {
            attribute: ints(node, "axes"),
            slot: 1,
            unsqueeze: op == "Unsqueeze",
        }),
        _ if op.starts_with("Reduce") => checks.push(Check::Axes {
            attribute: ints(node, "axes"),
            slot: 1,
            unsqueeze: false,
        }),
        "ConstantOfShape" => checks.push(Check::AtLeast {
            slot: 0,
            min: 0,
            what: "a dim",
        }),
        "Tile" => checks.push(Check::AtLeast {
            slot: 1,
            min: 0,
            what: "a repeat count",
        }),
        "Expand" => checks.push(Check::AtLeast {
            slot: 1,
            min: 0,
            what: "a dim",
        }),
        "STFT" => checks.push(Check::AtLeast {
            slot: 1,
            min: 1,
            what: "a frame step",
        }),
        // Opset 1's Slice: starts, ends and axes are attributes, read by tract-onnx's rules
        // position by position.
        "Slice" if attribute(node, "starts").is_some() => {
            let (starts, ends) = (ints(node, "starts").unwrap_or_default(), ints(node, "ends"));
            let axes = ints(node, "axes");
            if ends.as_ref().map(Vec::len) != Some(starts.len())
                || axes.as_ref().is_some_and(|a| a.len() != starts.len())
            {
                return Err(format!(
                    "{}: starts, ends and axes must have as many values",
                    describe(node)
                ));
            }
            checks.push(Check::Axes {
                attribute: Some(axes.unwrap_or_else(|| (0..starts.len() as i64).collect())),
                slot: 0,
                unsqueeze: false,
            });
        }
        // Pads given for some axes only (opset 18's `axes` input) are left to tract's own checks.
        "Pad" if node.input.len() < 4 => checks.push(Check::Pads {
            attribute: ints(node, "pads"),
            mode: match attribute(node, "mode").map(|a| a.s.as_slice()) {
                Some(b"edge") => Padding::Edge,
                Some(b"reflect") => Padding::Reflect,
                _ => Padding::Constant,
            },
        }),
        "OneHot" => checks.push(Check::Axis {
            axis: int(node, "axis", -1),
            extra: 1,
        }),
        "Gather" | "GatherElements" => {
            let axis = int(node, "axis", 0);
            checks.push(Check::Axis { axis, extra: 0 });
            checks.push(Check::IndicesOnAxis { axis, indices: 1 });
        }
        "Scatter" | "ScatterElements" => {
            let axis = int(node, "axis", 0);
            checks.push(Check::Axis { axis, extra: 0 });
            checks.push(Check::IndicesOnAxis { axis, indices: 1 });
        }
        "GatherND" | "ScatterND" => checks.push(Check::IndicesNd {
            batch_dims: int(node, "batch_dims", 0).max(0) as usize,
        }),
        _ => {}
    }
    Ok(checks)
}

fn rank(fact: &InferenceFact) -> Option<i64> {
    fact.shape.rank().concretize()
}

fn shape(fact: &InferenceFact) -> Option<TVec<usize>> {
    fact.shape.as_concrete_finite().ok().flatten()
}

fn values(fact: &InferenceFact) -> Option<Vec<i64>> {
    let tensor = fact.value.concretize()?;
    let cast = tensor.cast_to::<i64>().ok()?;
    let plain = cast.try_as_plain_ram().ok()?;
    plain.as_slice::<i64>().ok().map(|s| s.to_vec())
}

/// `axis` in `-len..len`, as a positive index.
fn in_range(axis: i64, len: i64) -> Option<usize> {
    let positive = if axis < 0 { axis + len } else { axis };
    (0..len).contains(&positive).then_some(positive as usize)
}

impl Check {
    /// Fails with what is wrong, given the facts known so far (a check whose facts are not yet
    /// known passes: it runs again when they are).
    fn check(&self, inputs: &[&InferenceFact]) -> Result<(), String> {
        let data = inputs.first().copied();
        let data_rank = data.and_then(rank);
        let fact = |slot: usize| inputs.get(slot).copied();
        match self {
            Check::Axis { axis, extra } => {
                if let Some(r) = data_rank
                    && in_range(*axis, r + extra).is_none()
                {
                    return Err(format!(
                        "axis {axis} is out of range for an input of rank {r}"
                    ));
                }
            }
            Check::Axes {
                attribute,
                slot,
                unsqueeze,
            } => {
                let axes = attribute.clone().or_else(|| fact(*slot).and_then(values));
                if let (Some(axes), Some(r)) = (axes, data_rank) {
                    let out_rank = if *unsqueeze { r + axes.len() as i64 } else { r };
                    let mut seen = BTreeSet::new();
                    for &a in &axes {
                        let Some(positive) = in_range(a, out_rank) else {
                            return Err(format!(
                                "axis {a} is out of range for {} of rank {out_rank}",
                                if *unsqueeze { "an output" } else { "an input" }
                            ));
                        };
                        if !seen.insert(positive) {
                            return Err(format!("axis {a} is given twice"));
                        }
                    }
                }
            }
            Check::Perm(perm) => {
                if let Some(r) = data_rank
                    && perm.len() as i64 != r
                {
                    return Err(format!("perm {perm:?} does not fit an input of rank {r}"));
                }
            }
            Check::AtLeast { slot, min, what } => {
                if let Some(bad) = fact(*slot)
                    .and_then(values)
                    .and_then(|v| v.into_iter().find(|v| v < min))
                {
                    let expected = if *min > 0 {
                        format!("; {min} or more expected")
                    } else {
                        String::new()
                    };
                    return Err(format!("input {slot} gives {what} of {bad}{expected}"));
                }
            }
            Check::Pads { attribute, mode } => {
                let pads = attribute.clone().or_else(|| fact(1).and_then(values));
                if let (Some(pads), Some(dims)) = (pads, data.and_then(shape)) {
                    if pads.len() != 2 * dims.len() {
                        return Err(format!(
                            "{} pads for an input of rank {} (2 per axis)",
                            pads.len(),
                            dims.len()
                        ));
                    }
                    let mut elements: u128 = 1;
                    for (axis, &dim) in dims.iter().enumerate() {
                        let padded =
                            (dim as i128) + pads[axis] as i128 + pads[axis + dims.len()] as i128;
                        if padded < 0 {
                            return Err(format!(
                                "pads {} and {} leave axis {axis} (of {dim}) with {padded} elements",
                                pads[axis],
                                pads[axis + dims.len()]
                            ));
                        }
                        elements = elements.saturating_mul(padded as u128);
                        let widest = pads[axis].max(pads[axis + dims.len()]);
                        let short = match mode {
                            Padding::Edge if widest > 0 && dim == 0 => {
                                Some("edge pads need an axis with elements".to_string())
                            }
                            Padding::Reflect if widest > 0 && widest >= dim as i64 => {
                                Some(format!(
                                    "reflect pads of {widest} need an axis longer than {widest}"
                                ))
                            }
                            _ => None,
                        };
                        if let Some(short) = short {
                            return Err(format!("{short}; axis {axis} has {dim}"));
                        }
                    }
                    // tract learns the padded size only by padding.
                    check_elements(elements, data)?;
                }
            }
            Check::IndicesOnAxis { axis, indices } => {
                if let (Some(dims), Some(r), Some(values)) = (
                    data.and_then(shape),
                    data_rank,
                    fact(*indices).and_then(values),
                ) && let Some(axis) = in_range(*axis, r)
                {
                    let len = dims[axis] as i64;
                    if let Some(bad) = values.iter().find(|&&v| v < -len || v >= len) {
                        return Err(format!(
                            "index {bad} is out of range for an axis of {len} (valid: -{len}..{len})"
                        ));
                    }
                }
            }
            Check::IndicesNd { batch_dims } => {
                if fact(1).and_then(rank) == Some(0) {
                    return Err("indices must have a rank of 1 or more".into());
                }
                if let (Some(dims), Some(index_shape), Some(values)) = (
                    data.and_then(shape),
                    fact(1).and_then(shape),
                    fact(1).and_then(values),
                ) {
                    let n = index_shape.last().copied().unwrap_or(0);
                    if batch_dims + n > dims.len() {
                        return Err(format!(
                            "indices address {n} axes after {batch_dims} batch axes of an input of rank {}",
                            dims.len()
                        ));
                    }
                    for (ix, &v) in values.iter().enumerate() {
                        let len = dims[batch_dims + ix % n.max(1)] as i64;
                        if v < 0 || v >= len {
                            return Err(format!(
                                "index {v} is out of range for an axis of {len} (valid: 0..{len})"
                            ));
                        }
                    }
                }
            }
            Check::NonEmptySpatial => {
                if let Some(dims) = data.and_then(shape)
                    && dims.iter().skip(2).any(|&d| d == 0)
                {
                    return Err(format!("its input {dims:?} has an empty spatial axis"));
                }
            }
        }
        Ok(())
    }
}

/// An output of `elements` elements of the input's type fits [`max_tensor_bytes`].
fn check_elements(elements: u128, like: Option<&InferenceFact>) -> Result<(), String> {
    let size = like
        .and_then(|f| f.datum_type.concretize())
        .map_or(1, |t| t.size_of()) as u128;
    let bytes = elements.saturating_mul(size);
    let limit = max_tensor_bytes();
    if bytes > limit as u128 {
        return Err(format!(
            "its output would hold {elements} elements ({bytes} bytes), more than the {limit} bytes Tessera allows"
        ));
    }
    Ok(())
}

/// The dims of a fact whose shape is known, as tract holds them (i64): converted to `usize` on a
/// 32-bit target (wasm), a dim of 2^32 + 5 would read as 5.
fn dims(fact: &InferenceFact) -> Option<Vec<i64>> {
    fact.shape
        .concretize()?
        .iter()
        .map(|d| d.to_i64().ok())
        .collect()
}

/// Bytes of a fact whose shape and type are known, `None` while they are not (saturating: a
/// shape whose size overflows is over any limit; negative dims are refused by the checks).
fn fact_bytes(fact: &InferenceFact) -> Option<u64> {
    let dims = dims(fact)?;
    let size = fact.datum_type.concretize()?.size_of();
    Some(bytes_of(size, dims.iter().map(|&d| d.max(0) as u64)))
}

/// Bytes of `dims` elements of `element_size` bytes, saturating: a size that overflows is over
/// any limit.
pub(crate) fn bytes_of(element_size: usize, dims: impl IntoIterator<Item = u64>) -> u64 {
    dims.into_iter()
        .fold(element_size as u64, |acc, d| acc.saturating_mul(d))
}

fn too_big(graph: &InferenceModel, outlet: OutletId, fact: &InferenceFact) -> TractResult<()> {
    let limit = max_tensor_bytes();
    if let Some(bytes) = fact_bytes(fact)
        && bytes > limit
    {
        let node = graph.node(outlet.node);
        let size = if bytes == u64::MAX {
            "more than 2^64 bytes".to_string()
        } else {
            format!("{bytes} bytes")
        };
        bail!(
            "node '{}' ({}) would make a tensor of shape {:?} ({size}), more than the {limit} bytes Tessera allows",
            node.name,
            node.op.name(),
            dims(fact).unwrap_or_default(),
        );
    }
    Ok(())
}

/// tract's fact analysis (`InferenceModel::analyse`, not obstinate), with each node's checks run
/// before its rules, the size of each value tract would fold checked before it is computed, and
/// every computed tensor's size checked at the end. A port of tract-hir 0.23.9's `Analyser`. Returns
/// whether any fact changed.
/// The values it computes count in `folded`.
pub fn analyse(
    graph: &mut InferenceModel,
    preflight: &Preflight,
    folded: &mut FoldedValues,
) -> TractResult<bool> {
    let mut any_changed = false;
    let mut to_visit: BTreeSet<usize> = graph.eval_order()?.into_iter().collect();
    to_visit.extend(0..graph.nodes().len());
    let mut observers: HashMap<OutletId, Vec<usize>> = HashMap::new();
    for node in graph.nodes() {
        for outlet in node.op.observe_outlets(graph, node)? {
            observers.entry(outlet).or_default().push(node.id);
        }
    }
    while let Some(node) = to_visit.pop_first() {
        let changed = analyse_one(graph, node, preflight, folded)
            .with_context(|| format!("Failed analyse for node {}", graph.node(node)))?;
        any_changed |= !changed.is_empty();
        for (outlet, _) in changed {
            for dst in &graph.node(outlet.node).outputs[outlet.slot].successors {
                if dst.node != outlet.node {
                    to_visit.insert(dst.node);
                }
            }
            if outlet.node != node {
                to_visit.insert(outlet.node);
            }
            to_visit.extend(observers.get(&outlet).into_iter().flatten());
        }
    }
    // Constants (the model's initializers, folded inputs) are in memory already: the limit is
    // for what a run would make.
    for node in graph.nodes() {
        if node.op_is::<tract_onnx::tract_hir::ops::konst::Const>() {
            continue;
        }
        for (slot, output) in node.outputs.iter().enumerate() {
            too_big(graph, OutletId::new(node.id, slot), &output.fact)?;
        }
    }
    Ok(any_changed)
}

/// The values computed while a model is planned (uniform constants, values tract folds while it
/// infers facts), all kept until the plan is built: their bytes, held to [`max_live_bytes`] in
/// all. Each under [`max_tensor_bytes`] is not enough: in a wasm module four of 0.9 GiB fill its
/// 4 GiB.
#[derive(Debug, Default)]
pub struct FoldedValues {
    held: u64,
    /// The limit where it is not [`max_live_bytes`] (tests).
    limit: Option<u64>,
}

impl FoldedValues {
    /// Whether `more` bytes fit beside those held.
    pub fn fit(&self, more: u64) -> bool {
        self.held.saturating_add(more) <= self.limit()
    }

    fn limit(&self) -> u64 {
        self.limit.unwrap_or_else(max_live_bytes)
    }

    /// Counts `bytes` more.
    pub fn hold(&mut self, bytes: u64) {
        self.held = self.held.saturating_add(bytes);
    }

    /// `node`'s `more` bytes, refused by name when they do not fit.
    fn check(&self, node: &InferenceNode, more: u64) -> TractResult<()> {
        let (total, limit) = (self.held.saturating_add(more), self.limit());
        if total > limit {
            bail!(
                "node '{}' ({}): the values computed while planning would hold {total} bytes, more than the {limit} bytes Tessera allows",
                node.name,
                node.op.name(),
            );
        }
        Ok(())
    }
}

/// One node's analysis; `folded` holds the bytes of the values computed so far.
fn analyse_one(
    graph: &mut InferenceModel,
    id: usize,
    preflight: &Preflight,
    folded: &mut FoldedValues,
) -> TractResult<Vec<(OutletId, InferenceFact)>> {
    let (inputs, outputs) = graph.node_facts(id)?;
    let inputs: TVec<InferenceFact> = inputs.into_iter().cloned().collect();
    let outputs: TVec<InferenceFact> = outputs.into_iter().cloned().collect();
    let node = graph.node(id);
    let observed_outlets = node.op.observe_outlets(graph, node)?;
    let observed: TVec<InferenceFact> = observed_outlets
        .iter()
        .map(|o| graph.outlet_fact(*o).cloned())
        .collect::<TractResult<_>>()?;
    if outputs.len() != node.op.nboutputs()? {
        bail!(
            "node '{}' has {} outputs, its op {}",
            node.name,
            outputs.len(),
            node.op.nboutputs()?
        );
    }
    let input_refs: TVec<&InferenceFact> = inputs.iter().collect();
    if let Some((what, checks)) = preflight.checks.get(&id) {
        for check in checks {
            check
                .check(&input_refs)
                .map_err(|e| format_err!("{what}: {e}"))?;
        }
    }
    let output_refs: TVec<&InferenceFact> = outputs.iter().collect();
    let observed_refs: TVec<&InferenceFact> = observed.iter().collect();
    // tract computes a node's value while inferring when every input is known: the shapes its
    // rules give come first, so the value is not computed when it would be too big.
    let mut op: Box<dyn InferenceOp> = node.op.clone();
    if !inputs.is_empty() && inputs.iter().all(|f| f.value.concretize().is_some()) {
        let (_, shapes, _) = op.infer_facts(
            input_refs.clone(),
            output_refs.clone(),
            observed_refs.clone(),
        )?;
        let mut bytes = 0u64;
        for (slot, fact) in shapes.iter().enumerate() {
            too_big(graph, OutletId::new(id, slot), fact)?;
            bytes = bytes.saturating_add(fact_bytes(fact).unwrap_or(0));
        }
        folded.check(graph.node(id), bytes)?;
    }
    let (inferred_inputs, inferred_outputs, inferred_observed) =
        op.infer(input_refs, output_refs, observed_refs)?;
    graph.node_mut(id).op = op;
    let node = graph.node(id);
    let mut changed = vec![];
    for (ix, &outlet) in node.inputs.iter().enumerate() {
        let old = graph.outlet_fact(outlet)?;
        let unified = inferred_inputs[ix].unify(old)?;
        if &unified != old {
            changed.push((outlet, unified));
        }
    }
    for (ix, fact) in inferred_outputs.iter().enumerate() {
        let outlet = OutletId::new(id, ix);
        let old = graph.outlet_fact(outlet)?;
        let unified = old.unify(fact)?;
        if let Some(value) = unified.value.concretize()
            && old.value.concretize().is_none()
        {
            let bytes = (value.datum_type().size_of() as u64).saturating_mul(value.len() as u64);
            folded.check(node, bytes)?;
            folded.hold(bytes);
        }
        if &unified != old {
            changed.push((outlet, unified));
        }
    }
    for (ix, &outlet) in observed_outlets.iter().enumerate() {
        let old = graph.outlet_fact(outlet)?;
        let unified = old.unify(&inferred_observed[ix])?;
        if &unified != old {
            changed.push((outlet, unified));
        }
    }
    for (outlet, fact) in &changed {
        graph.set_outlet_fact(*outlet, fact.clone())?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `y = ConstantOfShape(shape)`, `shape` an int64 input of 2 values.
    fn constant_of_shape_of_an_input() -> crate::Model {
        use crate::model::test_models::value_info as info;
        crate::model::test_models::from_graph(pb::GraphProto {
            name: "g".into(),
            node: vec![crate::model::test_models::node(
                "ConstantOfShape",
                &["shape"],
                "y",
            )],
            input: vec![info("shape", 7, &[2])],
            output: vec![info("y", 1, &[-1, -1])],
            ..Default::default()
        })
    }

    /// A value folded from a run-time input just past the limit is refused by name, not
    /// allocated: past the machine's memory the allocation failed and tract panicked, below it
    /// but past the free memory the process was killed.
    #[test]
    fn a_folded_value_past_the_limit_is_refused_before_it_is_allocated() {
        let limit = max_tensor_bytes();
        assert!(limit <= 1 << 36);
        if let Some(available) = available_memory() {
            // Other tests allocate meanwhile: the two readings are close, not equal.
            assert!(
                limit <= available,
                "{limit} bytes allowed, {available} available"
            );
        }
        let model = constant_of_shape_of_an_input();
        let before = crate::error::panics_seen_on_this_thread();
        // float32 values: one row of twice the limit (well past it, should memory be freed
        // before the check reads it again).
        let elements = (limit / 2) as i64;
        let shape = crate::Tensor::from_vec(vec![2], vec![1i64, elements]).unwrap();
        let error = model
            .lower_with(std::slice::from_ref(&shape), &[true])
            .unwrap_err();
        assert!(error.to_string().contains("Tessera allows"), "{error}");
        assert_eq!(
            crate::error::panics_seen_on_this_thread(),
            before,
            "{error}"
        );
        // Lowered as a session does (unfolded first), the reason is still given.
        let lowering = crate::model::specialize::Lowering::default();
        let error = model.lower_for(&[shape], None, lowering).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("with the inputs' values folded in: "),
            "{error}"
        );
        assert!(error.to_string().contains("Tessera allows"), "{error}");
        let small = crate::Tensor::from_vec(vec![2], vec![2i64, 3]).unwrap();
        assert!(model.lower_with(&[small], &[true]).is_ok());
    }

    /// tract-data cast int64 shape values to its dims through i32: a ConstantOfShape of
    /// [1, 2^32 + 5] made a [1, 5] tensor without a word (third_party/tract-data).
    #[test]
    fn an_int64_dim_past_32_bits_keeps_its_value() {
        let model = constant_of_shape_of_an_input();
        // No element to allocate: the shape alone is checked.
        let dims = crate::Tensor::from_vec(vec![2], vec![0i64, (1 << 32) + 5]).unwrap();
        let typed = model.lower_with(&[dims], &[true]).unwrap();
        let output = typed.output_outlets().unwrap()[0];
        let shape = typed
            .outlet_fact(output)
            .unwrap()
            .shape
            .as_concrete()
            .unwrap()
            .to_vec();
        assert_eq!(shape, [0, (1usize << 32) + 5]);
    }

    /// A tensor the allocator cannot give is an error naming its shape, not tract-data's panic
    /// (third_party/tract-data): in a wasm module, sizes under the limit above still fail when
    /// other tensors hold the rest of its 4 GiB.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_tensor_the_allocator_cannot_give_is_an_error() {
        use tract_onnx::prelude::{DatumType, Tensor};
        let before = crate::error::panics_seen_on_this_thread();
        // 2^60 float32s: 2^62 bytes, a valid layout past any address space.
        let elements = 1usize << 60;
        let error =
            unsafe { Tensor::uninitialized_dt(DatumType::F32, &[2, elements / 2]) }.unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains("cannot allocate 4611686018427387904 bytes"),
            "{message}"
        );
        assert!(message.contains("F32"), "{message}");
        let error = Tensor::zero_dt(DatumType::F32, &[elements]).unwrap_err();
        assert!(
            format!("{error:#}").contains("cannot allocate"),
            "{error:#}"
        );
        assert_eq!(crate::error::panics_seen_on_this_thread(), before);
        assert!(Tensor::zero_dt(DatumType::F32, &[2, 3]).is_ok());
    }

    /// `z = Relu(x) + Sigmoid(x)` over 1024 floats: x, then both branches, then their sum and
    /// the branches until it is made: three tensors at most.
    #[test]
    fn a_run_s_peak_counts_the_values_alive_together() {
        use crate::model::test_models::node;
        use crate::model::test_models::value_info as info;
        let model = crate::model::test_models::from_graph(pb::GraphProto {
            name: "g".into(),
            node: vec![
                node("Relu", &["x"], "a"),
                node("Sigmoid", &["x"], "b"),
                node("Add", &["a", "b"], "z"),
            ],
            input: vec![info("x", 1, &[1024])],
            output: vec![info("z", 1, &[1024])],
            ..Default::default()
        });
        let x = crate::Tensor::from_vec(vec![1024], vec![0.5f32; 1024]).unwrap();
        let typed = model.lower_with(&[x], &[false]).unwrap();
        let plan = typed.into_runnable().unwrap();
        let (peak, at) = peak_run_bytes(plan.model(), plan.order_without_consts())
            .unwrap()
            .unwrap();
        assert_eq!(peak, 3 * 4096);
        assert!(check_run_memory(plan.model(), plan.order_without_consts()).is_ok());
        // Where both branches are made (tract names Relu's node "a.low").
        let at = &plan.model().node(at).name;
        assert!(at.starts_with('a') || at.starts_with('b'), "{at}");
    }

    /// Four 64 KiB constants folded while planning: each fits, the fourth is refused where three
    /// is all the limit allows, before it is computed.
    #[test]
    fn values_folded_while_planning_are_held_to_a_limit_in_all() {
        use crate::model::test_models::{node, value_info as info};
        let shape = pb::TensorProto {
            name: "shape".into(),
            dims: vec![1],
            data_type: 7,
            raw_data: (1i64 << 14).to_le_bytes().to_vec(),
            ..Default::default()
        };
        let model = crate::model::test_models::from_graph(pb::GraphProto {
            name: "g".into(),
            node: (0..4)
                .map(|i| node("ConstantOfShape", &["shape"], &format!("c{i}")))
                .collect(),
            initializer: vec![shape],
            output: (0..4)
                .map(|i| info(&format!("c{i}"), 1, &[1 << 14]))
                .collect(),
            ..Default::default()
        });
        let analysed = |limit: u64| {
            let mut graph = model.graph().clone();
            let mut folded = FoldedValues {
                held: 0,
                limit: Some(limit),
            };
            analyse(&mut graph, model.preflight(), &mut folded)
        };
        let bytes = 4u64 << 14;
        assert!(analysed(4 * bytes).is_ok());
        let error = format!("{:#}", analysed(4 * bytes - 1).unwrap_err());
        assert!(
            error.contains(&format!("would hold {} bytes", 4 * bytes)),
            "{error}"
        );
        assert!(analysed(3 * bytes).is_err());
    }

    /// The pad check on an input of `dims` padded by `pads`.
    fn pad(mode: Padding, dims: &[usize], pads: &[i64]) -> Result<(), String> {
        let input = InferenceFact::dt_shape(f32::datum_type(), dims);
        let check = Check::Pads {
            attribute: Some(pads.to_vec()),
            mode,
        };
        check.check(&[&input])
    }

    #[test]
    fn reflect_pads_must_be_shorter_than_their_axis() {
        assert!(pad(Padding::Reflect, &[2, 3], &[0, 2, 0, 2]).is_ok());
        let error = pad(Padding::Reflect, &[2, 3], &[0, 3, 0, 0]).unwrap_err();
        assert_eq!(
            error,
            "reflect pads of 3 need an axis longer than 3; axis 1 has 3"
        );
        assert!(pad(Padding::Reflect, &[2, 3], &[0, 0, 0, 5]).is_err());
        // No padding on an empty axis reflects nothing.
        assert!(pad(Padding::Reflect, &[2, 0], &[1, 0, 1, 0]).is_ok());
        assert!(pad(Padding::Constant, &[2, 3], &[0, 9, 0, 9]).is_ok());
    }

    #[test]
    fn edge_pads_need_an_element_to_repeat() {
        assert!(pad(Padding::Edge, &[2, 1], &[0, 9, 0, 9]).is_ok());
        let error = pad(Padding::Edge, &[2, 0], &[0, 0, 0, 1]).unwrap_err();
        assert_eq!(error, "edge pads need an axis with elements; axis 1 has 0");
        assert!(pad(Padding::Edge, &[2, 0], &[1, 0, 1, 0]).is_ok());
    }
}
