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

impl PlanReport {
    /// A table of every step (device or host, with the reason), then every copy.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let plan = &self.plan;
        let host = self.placement.host_steps();
        let _ = writeln!(
            out,
            "placement on {} ({}): {} step(s), {} on the device, {} on the host",
            self.backend,
            self.device,
            plan.steps.len(),
            plan.steps.len() - host,
            host
        );
        for (ix, (step, device)) in plan.steps.iter().zip(&self.placement.steps).enumerate() {
            let shapes: Vec<String> = step
                .outputs
                .iter()
                .filter_map(|&id| plan.value(id).ok())
                .map(|v| format!("{}{:?}", v.dtype, v.shape))
                .collect();
            let place = match device {
                Device::Device => self.backend.clone(),
                Device::Host => format!(
                    "HOST ({})",
                    self.placement
                        .host_reasons
                        .get(ix)
                        .cloned()
                        .flatten()
                        .unwrap_or_else(|| "fallback".into())
                ),
            };
            let _ = writeln!(
                out,
                "  {ix:>4}  {:<24} {:<32} -> {:<28} {place}",
                step.op.name(),
                step.node,
                shapes.join(", ")
            );
        }
        let _ = writeln!(out, "copies between host and device per run:");
        for transfer in self
            .placement
            .io_transfers
            .iter()
            .chain(&self.placement.fallback_transfers)
        {
            let name = plan
                .value(transfer.value)
                .map(|v| v.name.clone())
                .unwrap_or_default();
            let (what, direction) = match transfer.direction {
                TransferDirection::HostToDevice => ("upload", "host -> device"),
                TransferDirection::DeviceToHost => ("read-back", "device -> host"),
            };
            let kind = if self.placement.io_transfers.contains(transfer) {
                "graph input/output"
            } else {
                "FALLBACK"
            };
            let _ = writeln!(
                out,
                "  {what:<9} {name:<32} {:>12} bytes  {direction}  ({kind}, before step {})",
                transfer.bytes, transfer.before_step
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
