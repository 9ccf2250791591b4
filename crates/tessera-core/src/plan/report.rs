//! What a GPU backend tells about a plan: where each step runs, what crosses between host and
//! device, and the device memory it holds. One report for every backend.

use super::{Device, Placement, Plan, TransferDirection};
use std::fmt::Write;
use std::sync::Arc;

/// Bytes copied between host and device by one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Transfers {
    /// Runtime inputs uploaded.
    pub input_bytes: usize,
    /// Outputs read back.
    pub output_bytes: usize,
    /// Copies at host-fallback boundaries (both directions).
    pub fallback_bytes: usize,
}

impl Transfers {
    /// Every byte that crossed between host and device.
    pub fn total(&self) -> usize {
        self.input_bytes + self.output_bytes + self.fallback_bytes
    }
}

/// Device memory a plan holds, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceMemory {
    /// The arena holding every intermediate value (the memory plan's size).
    pub arena: usize,
    /// The most bytes of intermediate values alive at one step: what any arena must hold.
    pub peak_live: usize,
    /// Runtime input buffers.
    pub inputs: usize,
    /// Constants (weights) the plan reads, uploaded once per session.
    pub constants: usize,
    /// Kernel parameters.
    pub other: usize,
}

impl DeviceMemory {
    /// Everything the plan holds on the device.
    pub fn total(&self) -> usize {
        self.arena + self.inputs + self.constants + self.other
    }

    /// Arena size over the largest live set (1.0 is the best any plan can do).
    pub fn arena_ratio(&self) -> f64 {
        if self.peak_live == 0 {
            1.0
        } else {
            self.arena as f64 / self.peak_live as f64
        }
    }
}

/// Every value one run computed, with the plan it ran: what `tessera compare` walks to find
/// the first step where two backends part.
#[derive(Debug, Clone)]
pub struct Trace {
    pub plan: Arc<Plan>,
    /// The plan's runtime inputs, in plan order (inputs folded into the plan left out).
    pub inputs: Vec<crate::Tensor>,
    /// Step outputs, by value.
    pub values: std::collections::HashMap<super::ValueId, crate::Tensor>,
}

/// A plan as placed on one backend.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlanReport {
    pub backend: String,
    /// The device (adapter) name.
    pub device: String,
    pub placement: Placement,
    pub memory: DeviceMemory,
    #[serde(skip)]
    pub plan: Arc<Plan>,
}

/// Where one step runs, as data (`session.placement()` in browsers; `render` prints these).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepPlacement {
    /// The ONNX (tract) node it comes from.
    pub node: String,
    pub op: String,
    /// The backend's name when the step runs on its device, `"host"` when it falls back.
    pub runs_on: String,
    /// Why it falls back to the host (`None` on the device).
    pub why: Option<String>,
    /// Each output's dtype and shape, e.g. `f32[1, 16, 32, 32]`.
    pub outputs: Vec<String>,
}

/// One copy between host and device per run, as data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CopyPlacement {
    /// The value copied.
    pub value: String,
    pub bytes: usize,
    pub direction: TransferDirection,
    /// The step that needs it (the step count for outputs read back at the end).
    pub before_step: usize,
    pub cause: CopyCause,
}

/// Why a run copies a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CopyCause {
    /// A graph input or output: every device backend pays it.
    InputOutput,
    /// A step on the host (fallback).
    Fallback,
}

impl PlanReport {
    /// Every step: where it runs, and why when on the host.
    pub fn step_placements(&self) -> Vec<StepPlacement> {
        let plan = &self.plan;
        plan.steps
            .iter()
            .zip(&self.placement.steps)
            .enumerate()
            .map(|(ix, (step, device))| StepPlacement {
                node: step.node.clone(),
                op: step.op.name(),
                runs_on: match device {
                    Device::Device => self.backend.clone(),
                    Device::Host => "host".into(),
                },
                why: match device {
                    Device::Device => None,
                    Device::Host => Some(
                        self.placement
                            .host_reasons
                            .get(ix)
                            .cloned()
                            .flatten()
                            .unwrap_or_else(|| "fallback".into()),
                    ),
                },
                outputs: step
                    .outputs
                    .iter()
                    .filter_map(|&id| plan.value(id).ok())
                    .map(|v| format!("{}{:?}", v.dtype, v.shape))
                    .collect(),
            })
            .collect()
    }

    /// Every copy of a run: graph inputs and outputs first, then those fallback causes.
    pub fn copy_placements(&self) -> Vec<CopyPlacement> {
        let io = (self.placement.io_transfers.iter()).map(|t| (t, CopyCause::InputOutput));
        let fallback = (self.placement.fallback_transfers.iter()).map(|t| (t, CopyCause::Fallback));
        io.chain(fallback)
            .map(|(transfer, cause)| CopyPlacement {
                value: (self.plan.value(transfer.value))
                    .map(|v| v.name.clone())
                    .unwrap_or_default(),
                bytes: transfer.bytes,
                direction: transfer.direction,
                before_step: transfer.before_step,
                cause,
            })
            .collect()
    }

    /// A table of every step (device or host, with the reason), then every copy.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let steps = self.step_placements();
        let host = self.placement.host_steps();
        let _ = writeln!(
            out,
            "placement on {} ({}): {} step(s), {} on the device, {} on the host",
            self.backend,
            self.device,
            steps.len(),
            steps.len() - host,
            host
        );
        for (ix, step) in steps.iter().enumerate() {
            let place = match &step.why {
                None => step.runs_on.clone(),
                Some(why) => format!("HOST ({why})"),
            };
            let _ = writeln!(
                out,
                "  {ix:>4}  {:<24} {:<32} -> {:<28} {place}",
                step.op,
                step.node,
                step.outputs.join(", ")
            );
        }
        let _ = writeln!(out, "copies between host and device per run:");
        for copy in self.copy_placements() {
            let (what, direction) = match copy.direction {
                TransferDirection::HostToDevice => ("upload", "host -> device"),
                TransferDirection::DeviceToHost => ("read-back", "device -> host"),
            };
            let kind = match copy.cause {
                CopyCause::Fallback => "FALLBACK",
                CopyCause::InputOutput => "graph input/output",
            };
            let _ = writeln!(
                out,
                "  {what:<9} {:<32} {:>12} bytes  {direction}  ({kind}, before step {})",
                copy.value, copy.bytes, copy.before_step
            );
        }
        let m = &self.memory;
        let _ = writeln!(
            out,
            "device memory: {} total = arena {} (largest live set {}, ratio {:.2}) + inputs {} + weights {} + other {}",
            mib(m.total()),
            mib(m.arena),
            mib(m.peak_live),
            m.arena_ratio(),
            mib(m.inputs),
            mib(m.constants),
            mib(m.other)
        );
        out
    }
}

/// `12.3 MiB`.
pub fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
