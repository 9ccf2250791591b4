//! Placement: which steps a backend runs on its device, which fall back to the host, and what
//! crosses between them.
//!
//! A backend states what it can run with a predicate over [`KernelOp`]s. Strict placement fails
//! with [`Error::UnsupportedOps`] naming every op it lacks; with fallback every such step runs on
//! the host and each value that crosses the boundary is listed once per direction. Runtime
//! inputs start on the host and outputs end there: those copies are listed apart
//! ([`Placement::io_transfers`]), since every device backend pays them. Constants are uploaded
//! once at load and stay readable on both sides.

use super::{KernelOp, Plan, Role, Value, ValueId};
use crate::error::UnsupportedOp;
use crate::{Error, Result};
use std::collections::{BTreeMap, HashSet};

/// Where one step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Device {
    /// On the backend's device.
    Device,
    /// On the host, as a fallback.
    Host,
}

/// Which way a copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TransferDirection {
    HostToDevice,
    DeviceToHost,
}

/// One copy of one value between host and device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Transfer {
    /// The value copied (the buffer's owner when a view is read).
    pub value: ValueId,
    pub bytes: usize,
    pub direction: TransferDirection,
    /// The step that needs it (`steps.len()` for outputs read back at the end).
    pub before_step: usize,
}

/// Where every step of a plan runs, for one backend.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Placement {
    pub backend: String,
    /// One entry per step.
    pub steps: Vec<Device>,
    /// Per step: why it runs on the host (`None` for device steps).
    pub host_reasons: Vec<Option<String>>,
    /// Copies caused by host fallback, in step order.
    pub fallback_transfers: Vec<Transfer>,
    /// Uploads of runtime inputs and read-backs of outputs.
    pub io_transfers: Vec<Transfer>,
}

impl Placement {
    /// How many steps fall back to the host.
    pub fn host_steps(&self) -> usize {
        self.steps.iter().filter(|&&d| d == Device::Host).count()
    }

    /// Bytes copied because of fallback.
    pub fn fallback_bytes(&self) -> usize {
        self.fallback_transfers.iter().map(|t| t.bytes).sum()
    }
}

/// Places every step of `plan` for `backend`. `host_reason(step_index)` says why the backend
/// cannot run a step (`None`: it can); [`KernelOp::Opaque`] steps never run on a device.
/// `bytes` is the size of a value on the device (transfers are counted in it).
pub fn place(
    plan: &Plan,
    backend: &str,
    host_reason: &dyn Fn(usize) -> Option<String>,
    allow_fallback: bool,
    bytes: &dyn Fn(&Value) -> usize,
) -> Result<Placement> {
    let reasons: Vec<Option<String>> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(ix, s)| match &s.op {
            KernelOp::Opaque { tract_op } => Some(format!("{tract_op} is not lowered to a kernel")),
            _ => host_reason(ix),
        })
        .collect();
    let steps: Vec<Device> = reasons
        .iter()
        .map(|r| {
            if r.is_some() {
                Device::Host
            } else {
                Device::Device
            }
        })
        .collect();
    if !allow_fallback {
        let mut missing: BTreeMap<(String, Option<String>), UnsupportedOp> = BTreeMap::new();
        for (step, reason) in plan.steps.iter().zip(&reasons) {
            let Some(reason) = reason else { continue };
            let name = step.op.name();
            // "no kernel" adds nothing to the op's name; other reasons (dtypes) are kept.
            let reason = (!reason.starts_with("no ")
                && !reason.ends_with("not lowered to a kernel"))
            .then(|| reason.clone());
            missing
                .entry((name.clone(), reason.clone()))
                .or_insert_with(|| UnsupportedOp {
                    op_type: name,
                    first_node: step.node.clone(),
                    count: 0,
                    reason,
                })
                .count += 1;
        }
        if !missing.is_empty() {
            return Err(Error::UnsupportedOps {
                backend: Some(backend.to_string()),
                ops: missing.into_values().collect(),
            });
        }
    }

    // Where each buffer owner was produced; inputs start on the host, constants are everywhere.
    let mut home: Vec<Option<Device>> = vec![None; plan.values.len()];
    for value in &plan.values {
        if let Role::Input(_) = value.role {
            home[value.id.0] = Some(Device::Host);
        }
    }
    let mut fallback_transfers = vec![];
    let mut io_transfers = vec![];
    let mut copied: HashSet<(ValueId, Device)> = HashSet::new();
    for (ix, (step, &device)) in plan.steps.iter().zip(&steps).enumerate() {
        for &input in &step.inputs {
            let root = plan.root(input)?;
            let Some(from) = home[root.0] else { continue };
            if from == device || !copied.insert((root, device)) {
                continue;
            }
            let transfer = Transfer {
                value: root,
                bytes: bytes(plan.value(root)?),
                direction: match device {
                    Device::Device => TransferDirection::HostToDevice,
                    Device::Host => TransferDirection::DeviceToHost,
                },
                before_step: ix,
            };
            if matches!(plan.value(root)?.role, Role::Input(_)) {
                io_transfers.push(transfer);
            } else {
                fallback_transfers.push(transfer);
            }
        }
        for &output in &step.outputs {
            if let Some(slot) = home.get_mut(output.0) {
                *slot = Some(device);
            }
        }
    }
    for &output in &plan.outputs {
        let root = plan.root(output)?;
        if home[root.0] == Some(Device::Device) && copied.insert((root, Device::Host)) {
            io_transfers.push(Transfer {
                value: root,
                bytes: bytes(plan.value(root)?),
                direction: TransferDirection::DeviceToHost,
                before_step: plan.steps.len(),
            });
        }
    }
    Ok(Placement {
        backend: backend.to_string(),
        steps,
        host_reasons: reasons,
        fallback_transfers,
        io_transfers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::plan::{Step, UnaryOp, Value};

    fn value(id: usize, role: Role) -> Value {
        Value {
            id: ValueId(id),
            name: format!("v{id}"),
            shape: vec![4],
            dtype: DType::F32,
            role,
            alias_of: None,
            outlet: None,
        }
    }

    fn unary(op: UnaryOp, input: usize, output: usize) -> Step {
        Step {
            node: format!("n{output}"),
            op: KernelOp::Unary {
                op,
                dtype: DType::F32,
                out_dtype: DType::F32,
            },
            inputs: vec![ValueId(input)],
            outputs: vec![ValueId(output)],
        }
    }

    /// x -> exp -> erf -> tanh -> erf -> out, on a backend without erf.
    fn plan() -> Plan {
        let values = vec![
            value(0, Role::Input(0)),
            value(1, Role::Intermediate),
            value(2, Role::Intermediate),
            value(3, Role::Intermediate),
            value(4, Role::Output(0)),
        ];
        let steps = vec![
            unary(UnaryOp::Exp, 0, 1),
            unary(UnaryOp::Erf, 1, 2),
            unary(UnaryOp::Tanh, 2, 3),
            unary(UnaryOp::Erf, 3, 4),
        ];
        Plan {
            values,
            constants: vec![],
            steps,
            inputs: vec![ValueId(0)],
            outputs: vec![ValueId(4)],
        }
    }

    /// A backend without erf.
    fn no_erf(plan: &Plan) -> impl Fn(usize) -> Option<String> + '_ {
        |ix| {
            matches!(
                plan.steps[ix].op,
                KernelOp::Unary {
                    op: UnaryOp::Erf,
                    ..
                }
            )
            .then(|| "no kernel for Unary.Erf".to_string())
        }
    }

    #[test]
    fn strict_names_every_missing_op() {
        let plan = plan();
        let Err(Error::UnsupportedOps { backend, ops }) =
            place(&plan, "wgpu", &no_erf(&plan), false, &Value::bytes)
        else {
            panic!("expected UnsupportedOps");
        };
        assert_eq!(backend.as_deref(), Some("wgpu"));
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].op_type, "Unary.Erf");
        assert_eq!(ops[0].count, 2);
        assert_eq!(ops[0].first_node, "n2");
    }

    #[test]
    fn fallback_lists_transfers() {
        let plan = plan();
        let placement = place(&plan, "wgpu", &no_erf(&plan), true, &Value::bytes).unwrap();
        let (d, h) = (Device::Device, Device::Host);
        assert_eq!(placement.steps, vec![d, h, d, h]);
        let moves: Vec<(usize, TransferDirection)> = placement
            .fallback_transfers
            .iter()
            .map(|t| (t.value.0, t.direction))
            .collect();
        assert_eq!(
            moves,
            vec![
                (1, TransferDirection::DeviceToHost),
                (2, TransferDirection::HostToDevice),
                (3, TransferDirection::DeviceToHost),
            ]
        );
        assert_eq!(placement.fallback_bytes(), 48);
        // The input is uploaded; the output was made on the host, so nothing is read back.
        assert_eq!(placement.io_transfers.len(), 1);
        assert_eq!(
            placement.io_transfers[0].direction,
            TransferDirection::HostToDevice
        );
        assert_eq!(placement.host_steps(), 2);
    }

    #[test]
    fn everything_on_device() {
        let placement = place(&plan(), "cuda", &|_| None, false, &Value::bytes).unwrap();
        assert!(placement.fallback_transfers.is_empty());
        assert_eq!(placement.io_transfers.len(), 2);
    }
}
