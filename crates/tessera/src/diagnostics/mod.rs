//! Diagnostics a user can look at: where a model runs ([`placement_picture`]), the first node
//! whose output is NaN or Inf ([`check_finite`]), the environment ([`doctor`]), and a
//! benchmark as a page ([`bench_report`]).
//!
//! Files: `graph_picture.rs` (the placement picture's content), `picture_drawing.rs` (drawn as
//! SVG/HTML; the `pictures` feature), `finite.rs` (first NaN/Inf,
//! cpu and GPU), `doctor.rs` (environment report), `cuda_probe.rs` (CUDA libraries found at
//! run time, self-contained), `bench_report.rs` (per-op profile and latency histogram, HTML).

pub mod bench_report;
pub mod cuda_probe;
pub mod doctor;
pub mod finite;
pub mod graph_picture;
#[cfg(feature = "pictures")]
mod picture_drawing;

pub use finite::{FiniteCheck, NonFinite, ValueRange, check_finite};
pub use graph_picture::{PlacementPicture, StepPlace};

use crate::{Backend, Error, Result, Session, Tensor};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tessera_core::model::inputs::order_inputs;
use tessera_core::plan::{Device, Plan};

/// The placement picture of `model` on `backend` for these inputs. On a GPU backend without
/// fallback, a model with ops the backend lacks still gets its picture (those steps marked
/// unsupported) and `refused` says why the backend refuses it.
pub fn placement_picture(
    model: &Path,
    backend: Backend,
    allow_fallback: bool,
    inputs: Vec<(String, Tensor)>,
) -> Result<(PlacementPicture, Option<Error>)> {
    // A strict refusal (at load or when planning): place it with fallback to see which steps
    // are missing, and draw those in red.
    let refused = |refusal: Error, inputs: Vec<(String, Tensor)>| {
        let (mut picture, _) = placement_picture(model, backend, true, inputs)?;
        for place in &mut picture.places {
            if *place == StepPlace::HostFallback {
                *place = StepPlace::Unsupported;
            }
        }
        Ok((picture, Some(refusal)))
    };
    let session = match Session::builder()
        .backend(backend)
        .allow_fallback(allow_fallback)
        .load(model)
    {
        Ok(session) => session,
        Err(refusal @ Error::UnsupportedOps { .. }) if !allow_fallback => {
            return refused(refusal, inputs);
        }
        Err(e) => return Err(e),
    };
    let onnx_ops = onnx_op_types(model);
    let onnx_nodes = session.info().op_histogram.values().sum();
    let name = model.display().to_string();
    let report = match session.plan_report(inputs.clone()) {
        Ok(report) => report,
        Err(refusal @ Error::UnsupportedOps { .. }) if !allow_fallback => {
            return refused(refusal, inputs);
        }
        Err(e) => return Err(e),
    };
    let picture = match report {
        Some(report) => PlacementPicture {
            model: name,
            backend: report.backend.clone(),
            device: report.device.clone(),
            onnx_nodes,
            places: report
                .placement
                .steps
                .iter()
                .map(|d| match d {
                    Device::Device => StepPlace::Backend,
                    Device::Host => StepPlace::HostFallback,
                })
                .collect(),
            reasons: report.placement.host_reasons.clone(),
            plan: report.plan.clone(),
            placement: Some(report.placement),
            onnx_ops,
        },
        None => {
            // cpu: tract runs its own optimized graph; the picture shows the plan lowered from
            // the same decluttered graph, every step on the cpu.
            let ordered = order_inputs(session.info(), inputs)?;
            let (_, plan) = session.model().lower_then(&ordered, None, Plan::build)?;
            let steps = plan.steps.len();
            PlacementPicture {
                model: name,
                backend: session.backend().to_string(),
                device: crate::backend_status(session.backend())
                    .devices
                    .first()
                    .cloned()
                    .unwrap_or_default(),
                onnx_nodes,
                places: vec![StepPlace::Backend; steps],
                reasons: vec![None; steps],
                plan: Arc::new(plan),
                placement: None,
                onnx_ops,
            }
        }
    };
    Ok((picture, None))
}

/// Node name → ONNX op type, read from the model file (empty when it cannot be read: the
/// picture then shows the plan's kernel names only).
pub fn onnx_op_types(model: &Path) -> HashMap<String, String> {
    use prost::Message;
    use tessera_core::tract_onnx::pb;
    fn walk(graph: &pb::GraphProto, out: &mut HashMap<String, String>) {
        for node in &graph.node {
            if !node.name.is_empty() {
                out.insert(node.name.clone(), node.op_type.clone());
            }
            for attribute in &node.attribute {
                for sub in attribute.g.iter().chain(&attribute.graphs) {
                    walk(sub, out);
                }
            }
        }
    }
    let mut out = HashMap::new();
    if let Ok(bytes) = std::fs::read(model)
        && let Ok(proto) = pb::ModelProto::decode(bytes.as_slice())
        && let Some(graph) = &proto.graph
    {
        walk(graph, &mut out);
    }
    out
}
