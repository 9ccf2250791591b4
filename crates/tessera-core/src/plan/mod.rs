//! The backend-neutral execution plan that GPU backends run.
//!
//! A [`Plan`] is built from tract's decluttered typed model for one input signature (see
//! [`crate::lower`]): a table of [`Value`]s with concrete shapes and dtypes, the constants a
//! backend uploads once, and the [`Step`]s in execution order (each a [`KernelOp`] with every
//! parameter concrete). Views that move no data (reshape, adding or removing unit axes) are not
//! steps: such a value names the value whose buffer it shares in [`Value::alias_of`]. A device
//! backend lays the intermediate values out with [`memory::MemoryPlan`] in its own element sizes
//! (one arena, shared by values that never live at the same time).
//!
//! Files: `kernel.rs` (the op enum), `shapes.rs` (shape rules, used to check plans),
//! `memory.rs` (liveness and arena offsets), `placement.rs` (device or host per step).

pub mod host;
pub mod kernel;
pub mod memory;
pub mod placement;
pub mod reference;
pub mod report;
pub mod shapes;

pub use kernel::{
    BinaryOp, GridPadding, GridSampleMode, KernelOp, MatLayout, PadMode, ReduceOp,
    ScatterReduction, UnaryOp, Window,
};
pub use memory::MemoryPlan;
pub use placement::{Device, Placement, Transfer, TransferDirection};
pub use report::{
    CopyCause, CopyPlacement, CountRead, DeviceMemory, NextStage, PlanReport, StepPlacement, Trace,
    Transfers,
};

use crate::error::UnsupportedOp;
use crate::{DType, Error, Result, Tensor};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Index of a value in [`Plan::values`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct ValueId(pub usize);

/// What a value is to the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Role {
    /// The k-th runtime input (folded inputs are constants instead).
    Input(usize),
    /// The k-th output, produced by a step (or a view of one).
    Output(usize),
    /// Known at plan time; uploaded once.
    Constant,
    /// Produced by one step and read by later ones.
    Intermediate,
}

/// One tensor of the plan.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Value {
    pub id: ValueId,
    /// tract's name for the outlet (node name, with `.k` for outputs after the first).
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub role: Role,
    /// Set for a view: the value whose bytes this one reads (same bytes, other shape).
    pub alias_of: Option<ValueId>,
    /// The tract outlet `(node, slot)` this value stands for, when it has one.
    pub outlet: Option<(usize, usize)>,
}

impl Value {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype.size_of()
    }
}

/// The data of a constant, kept in tract's tensor (not copied) until a backend asks for it.
#[derive(Debug, Clone)]
pub struct ConstantData(pub(crate) Arc<tract_onnx::prelude::Tensor>);

impl ConstantData {
    /// Identifies the tensor behind this constant: plans built from the same model share the
    /// tensors of unchanged weights, so a backend can upload each weight once per session.
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The constant as a Tessera tensor (tract's shape integers become i64, quantized bytes
    /// plain u8/i8).
    pub fn to_tensor(&self) -> Result<Tensor> {
        crate::tract_bridge::from_tract(&self.0)
    }
}

/// A constant value and its data.
#[derive(Debug, Clone)]
pub struct Constant {
    pub value: ValueId,
    pub data: ConstantData,
}

/// One kernel launch (or a few, at the backend's choice) in execution order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Step {
    /// The tract node it comes from.
    pub node: String,
    pub op: KernelOp,
    pub inputs: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
}

/// A lowered model: what a backend executes, with nothing left to infer.
#[derive(Debug, Clone)]
pub struct Plan {
    pub values: Vec<Value>,
    pub constants: Vec<Constant>,
    pub steps: Vec<Step>,
    /// Runtime inputs, in order.
    pub inputs: Vec<ValueId>,
    /// Outputs, in order (a value may be an input or a constant too).
    pub outputs: Vec<ValueId>,
}

impl Plan {
    /// Lowers a decluttered typed model with concrete shapes (what [`crate::Model::lower`]
    /// returns). Nodes that cannot be lowered become [`KernelOp::Opaque`] steps.
    pub fn build(model: &tract_onnx::prelude::TypedModel) -> Result<Plan> {
        crate::lower::build_plan(model)
    }

    /// The value with this id.
    pub fn value(&self, id: ValueId) -> Result<&Value> {
        self.values
            .get(id.0)
            .ok_or_else(|| Error::Internal(format!("plan has no value {}", id.0)))
    }

    /// Checks the indices of `Gather`, `GatherElements`, `GatherNd`, `ScatterElements` and
    /// `ScatterNd` steps that are
    /// runtime inputs (through views) before a device backend uploads them: an index outside
    /// its axis is the same error as on cpu, naming the node. `inputs[k]` is runtime input `k`,
    /// `None` when it is already on the device (not checked). Indices computed on the device are
    /// not checked either (see docs/robustness.md); constant ones were checked while lowering.
    pub fn check_host_indices(&self, backend: &str, inputs: &[Option<&Tensor>]) -> Result<()> {
        use crate::model::index_check::{IndexCheck, IndexRange};
        for step in &self.steps {
            let (data_shape, range) = match &step.op {
                KernelOp::Gather {
                    data_shape, axis, ..
                }
                | KernelOp::GatherElements {
                    data_shape, axis, ..
                }
                | KernelOp::ScatterElements {
                    data_shape, axis, ..
                } => (data_shape, IndexRange::DataAxis(*axis)),
                KernelOp::ScatterNd { data_shape, .. } => {
                    (data_shape, IndexRange::Nd { batch_dims: 0 })
                }
                KernelOp::GatherNd {
                    data_shape,
                    batch_dims,
                    ..
                } => (
                    data_shape,
                    IndexRange::Nd {
                        batch_dims: *batch_dims,
                    },
                ),
                _ => continue,
            };
            let Some(&indices) = step.inputs.get(1) else {
                continue;
            };
            let Role::Input(k) = self.value(self.root(indices)?)?.role else {
                continue;
            };
            let Some(Some(tensor)) = inputs.get(k) else {
                continue;
            };
            let check = IndexCheck {
                node: step.node.clone(),
                op: step.op.name(),
                range,
            };
            check
                .check(&crate::tract_bridge::to_tract(tensor)?, Some(data_shape))
                .map_err(|e| Error::Run {
                    backend: backend.into(),
                    message: crate::error::chain_message(&e),
                })?;
        }
        Ok(())
    }

    /// The value whose buffer `id` lives in (itself unless it is a view).
    pub fn root(&self, id: ValueId) -> Result<ValueId> {
        let mut current = id;
        for _ in 0..=self.values.len() {
            match self.value(current)?.alias_of {
                Some(source) => current = source,
                None => return Ok(current),
            }
        }
        Err(Error::Internal(format!("alias cycle at value {}", id.0)))
    }

    /// Steps that were not lowered ([`KernelOp::Opaque`]), grouped by tract op name.
    pub fn unsupported(&self) -> Vec<UnsupportedOp> {
        let mut found: BTreeMap<String, UnsupportedOp> = BTreeMap::new();
        for step in &self.steps {
            if let KernelOp::Opaque { tract_op } = &step.op {
                found
                    .entry(tract_op.clone())
                    .or_insert_with(|| UnsupportedOp {
                        op_type: tract_op.clone(),
                        first_node: step.node.clone(),
                        count: 0,
                        reason: None,
                    })
                    .count += 1;
            }
        }
        found.into_values().collect()
    }

    /// `Err(UnsupportedOps)` when some node was not lowered.
    pub fn require_lowered(&self) -> Result<()> {
        let ops = self.unsupported();
        if ops.is_empty() {
            Ok(())
        } else {
            Err(Error::UnsupportedOps { backend: None, ops })
        }
    }

    /// Checks every step against the shape rules of its op, and views against their sources.
    pub fn validate(&self) -> Result<()> {
        for (ix, value) in self.values.iter().enumerate() {
            if value.id.0 != ix {
                return Err(Error::Internal(format!("value {ix} has id {}", value.id.0)));
            }
            if let Some(source) = value.alias_of {
                let source = self.value(source)?;
                if source.bytes() != value.bytes() {
                    return Err(Error::Internal(format!(
                        "view '{}' ({:?} {}) does not match its source '{}' ({:?} {})",
                        value.name,
                        value.shape,
                        value.dtype,
                        source.name,
                        source.shape,
                        source.dtype
                    )));
                }
            }
        }
        let mut written = vec![false; self.values.len()];
        for step in &self.steps {
            for &out in &step.outputs {
                if let Some(w) = written.get_mut(out.0) {
                    *w = true;
                }
            }
        }
        for value in &self.values {
            let produced = matches!(value.role, Role::Intermediate | Role::Output(_));
            if produced && value.alias_of.is_none() && !written[value.id.0] {
                return Err(Error::Internal(format!(
                    "value '{}' is written by no step",
                    value.name
                )));
            }
        }
        for ix in 0..self.steps.len() {
            self.validate_step(ix)?;
        }
        Ok(())
    }

    /// Checks one step against the shape rules of its op: its outputs have the shapes and
    /// dtypes the op makes of its inputs' (nothing to check for [`KernelOp::Opaque`]).
    pub fn validate_step(&self, index: usize) -> Result<()> {
        let step = self
            .steps
            .get(index)
            .ok_or_else(|| Error::Internal(format!("plan has no step {index}")))?;
        let inputs = step
            .inputs
            .iter()
            .map(|&id| self.value(id).map(|v| (v.shape.as_slice(), v.dtype)))
            .collect::<Result<Vec<_>>>()?;
        let Some(expected) = shapes::output_shapes(&step.op, &inputs)? else {
            return Ok(());
        };
        let actual = step
            .outputs
            .iter()
            .map(|&id| self.value(id).map(|v| (v.shape.clone(), v.dtype)))
            .collect::<Result<Vec<_>>>()?;
        if expected != actual {
            return Err(Error::Internal(format!(
                "step '{}' ({}): outputs should be {expected:?}, the graph says {actual:?}",
                step.node,
                step.op.name()
            )));
        }
        Ok(())
    }
}
