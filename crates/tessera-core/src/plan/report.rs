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
    /// Counts read back to plan the next stage of a staged plan (data-dependent shapes:
    /// [`crate::lower::stages`]).
    pub count_bytes: usize,
}

impl Transfers {
    /// Every byte that crossed between host and device.
    pub fn total(&self) -> usize {
        self.input_bytes + self.output_bytes + self.fallback_bytes + self.count_bytes
    }
}

impl std::ops::AddAssign for Transfers {
    fn add_assign(&mut self, other: Transfers) {
        self.input_bytes += other.input_bytes;
        self.output_bytes += other.output_bytes;
        self.fallback_bytes += other.fallback_bytes;
        self.count_bytes += other.count_bytes;
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
    /// A staged plan's next stage (data-dependent shapes, [`crate::lower::stages`]): the counts
    /// read back after this one, and the plan made for them. This stage's outputs that it
    /// reads stay on the device.
    pub next: Option<Box<NextStage>>,
}

/// The stage after a count read back.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NextStage {
    pub counts: Vec<CountRead>,
    pub report: PlanReport,
}

/// One count a staged plan reads back between two stages.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CountRead {
    /// The data-dependent node (`NonZero`).
    pub node: String,
    pub op: String,
    /// What it counted in the run the report was made from.
    pub count: usize,
    /// Bytes read back.
    pub bytes: usize,
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
    /// A count a staged plan needs to plan its next stage (data-dependent shapes).
    Count,
}

impl PlanReport {
    /// Every step of every stage: where it runs, and why when on the host.
    pub fn step_placements(&self) -> Vec<StepPlacement> {
        let mut steps = self.stage_step_placements();
        if let Some(next) = &self.next {
            steps.extend(next.report.step_placements());
        }
        steps
    }

    /// The stages in order: this one, then each next one.
    pub fn stages(&self) -> impl Iterator<Item = &PlanReport> {
        std::iter::successors(Some(self), |r| r.next.as_ref().map(|n| &n.report))
    }

    fn stage_step_placements(&self) -> Vec<StepPlacement> {
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

    /// Every copy of a run: per stage, graph inputs and outputs first, then those fallback
    /// causes, then the counts read back for the next stage (`before_step` counts the steps of
    /// every stage before).
    pub fn copy_placements(&self) -> Vec<CopyPlacement> {
        let mut copies = vec![];
        let mut steps_before = 0;
        for stage in self.stages() {
            copies.extend(stage.stage_copy_placements(steps_before));
            steps_before += stage.plan.steps.len();
            if let Some(next) = &stage.next {
                copies.extend(next.counts.iter().map(|count| CopyPlacement {
                    value: count.node.clone(),
                    bytes: count.bytes,
                    direction: TransferDirection::DeviceToHost,
                    before_step: steps_before,
                    cause: CopyCause::Count,
                }));
            }
        }
        copies
    }

    fn stage_copy_placements(&self, steps_before: usize) -> Vec<CopyPlacement> {
        let io = (self.placement.io_transfers.iter()).map(|t| (t, CopyCause::InputOutput));
        let fallback = (self.placement.fallback_transfers.iter()).map(|t| (t, CopyCause::Fallback));
        io.chain(fallback)
            .map(|(transfer, cause)| CopyPlacement {
                value: (self.plan.value(transfer.value))
                    .map(|v| v.name.clone())
                    .unwrap_or_default(),
                bytes: transfer.bytes,
                direction: transfer.direction,
                before_step: steps_before + transfer.before_step,
                cause,
            })
            .collect()
    }

    /// A table of every step (device or host, with the reason), then every copy. A staged plan
    /// lists its stages in order, each under the counts it was planned for.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let stages: Vec<&PlanReport> = self.stages().collect();
        let steps: usize = stages.iter().map(|s| s.plan.steps.len()).sum();
        let host: usize = stages.iter().map(|s| s.placement.host_steps()).sum();
        let staged = if stages.len() > 1 {
            format!(
                ", in {} stages (shapes that depend on values computed at run time: each stage \
                 is planned for the counts read back before it)",
                stages.len()
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "placement on {} ({}): {steps} step(s), {} on the device, {host} on the host{staged}",
            self.backend,
            self.device,
            steps - host,
        );
        let mut ix = 0;
        for (k, stage) in stages.iter().enumerate() {
            if let Some(before) = k.checked_sub(1).and_then(|b| stages[b].next.as_ref()) {
                let counts: Vec<String> = (before.counts.iter())
                    .map(|c| format!("'{}' ({}) = {}", c.node, c.op, c.count))
                    .collect();
                let _ = writeln!(out, "  stage {}, planned for {}:", k + 1, counts.join(", "));
            }
            for step in stage.stage_step_placements() {
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
                ix += 1;
            }
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
                CopyCause::Count => "count that shapes the next stage",
            };
            let _ = writeln!(
                out,
                "  {what:<9} {:<32} {:>12} bytes  {direction}  ({kind}, before step {})",
                copy.value, copy.bytes, copy.before_step
            );
        }
        for (k, stage) in stages.iter().enumerate() {
            let m = &stage.memory;
            let which = if stages.len() > 1 {
                format!(" (stage {})", k + 1)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "device memory{which}: {} total = arena {} (largest live set {}, ratio {:.2}) + inputs {} + weights {} + other {}",
                mib(m.total()),
                mib(m.arena),
                mib(m.peak_live),
                m.arena_ratio(),
                mib(m.inputs),
                mib(m.constants),
                mib(m.other)
            );
        }
        out
    }
}

/// `12.3 MiB`.
pub fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
