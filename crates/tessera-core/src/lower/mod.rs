//! Lowering tract's decluttered typed model to a backend-neutral [`Plan`].
//!
//! Each op family has a file (`elementwise.rs`, `matmul.rs`, `einsum.rs`, `conv.rs`, `pool.rs`,
//! `reduce.rs`, `shape.rs`, `resize.rs`, `grid_sample.rs`, `fft.rs`) that registers translators
//! keyed by the tract op's type. A translator sees the node and its concrete [`NodeFacts`] and
//! returns a [`Lowering`] (steps, temporaries, or "this output is a view of input 0"), or
//! `Ok(None)` for a configuration it does not handle. A node no translator takes becomes a
//! [`KernelOp::Opaque`] step, reported by [`Plan::unsupported`] with tract's op name and the
//! node's name. `attention.rs`, `branches.rs` and `scan.rs` are passes on the typed graph before
//! that: they take tract's fused attention apart, run both branches of a run-time `If`, and
//! unroll loops for GPU plans ([`prepare_for_gpu`]). `stages.rs` cuts a graph whose shapes depend
//! on values (`NonZero`, `NonMaxSuppression`) into stages a GPU session plans one after another.
//!
//! Translators are pure: they read facts and return a description; this module wires values.

pub mod attention;
pub mod branches;
mod conv;
mod einsum;
mod elementwise;
mod fft;
mod grid_sample;
mod matmul;
mod pool;
mod quantized;
mod reduce;
mod resize;
pub mod scan;
mod shape;
pub mod stages;
mod subgraph;

use crate::model::quantization::QuantizedExecution;
use crate::plan::{Constant, ConstantData, KernelOp, Plan, Role, Step, Value, ValueId};
use crate::{DType, Error, Result};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tract_onnx::prelude::{DatumType, OutletId, Tensor as TractTensor, TypedModel, TypedNode};
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::source::TypedSource;

/// tract's typed graph made ready for a GPU plan before tract declutters it: attention taken
/// apart ([`attention`]), `If`s of run-time conditions run as both branches and a select
/// ([`branches`]), loops unrolled ([`scan`]: after the branches, which may hold loops). A
/// [`crate::model::specialize::BeforeDeclutter`] pass.
pub fn prepare_for_gpu(
    model: &mut TypedModel,
    source: &crate::model::Model,
) -> tract_onnx::prelude::TractResult<()> {
    attention::take_apart(model, source)?;
    branches::run_both(model, source)?;
    scan::unroll_loops(model, source)
}

/// How a GPU plan runs a quantized operator type (what the translators here take): integer
/// products (QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger, and DynamicQuantizeMatMul
/// and DynamicQuantizeLSTM, which the core rewrites into them, the LSTM's loop unrolled) as i32
/// steps and DynamicQuantizeLinear element-wise (`quantized.rs`); the float operators of a QDQ
/// pattern and the other `com.microsoft` operators, rewritten into standard ones, dequantized.
/// `crates/tessera-cli/tests/cli.rs` checks what `tessera inspect` says from it.
pub fn quantized_execution(op: &str) -> QuantizedExecution {
    match op {
        "QLinearConv"
        | "QLinearMatMul"
        | "MatMulInteger"
        | "ConvInteger"
        | "DynamicQuantizeMatMul"
        | "DynamicQuantizeLSTM" => QuantizedExecution::Integer,
        "DynamicQuantizeLinear" => QuantizedExecution::ElementWise,
        _ => QuantizedExecution::Dequantized,
    }
}

/// The elements of a known tensor as `T` (cast), or `None` when it has none or does not cast.
pub(super) fn konst_values<T: tract_onnx::prelude::Datum + Copy>(
    tensor: &Option<Arc<TractTensor>>,
) -> Option<Vec<T>> {
    let cast = tensor.as_ref()?.cast_to::<T>().ok()?;
    let plain = cast.try_as_plain_ram().ok()?;
    plain.as_slice::<T>().ok().map(<[T]>::to_vec)
}

/// Concrete shape, dtype and (when known) value of one tensor around a node.
#[derive(Debug, Clone)]
pub struct Fact {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub konst: Option<Arc<TractTensor>>,
}

/// The facts of a node's inputs and outputs, in order.
#[derive(Debug, Clone)]
pub struct NodeFacts {
    pub inputs: Vec<Fact>,
    pub outputs: Vec<Fact>,
}

impl NodeFacts {
    /// Input `ix`, or an error naming the node.
    pub fn input(&self, ix: usize) -> Result<&Fact> {
        self.inputs
            .get(ix)
            .ok_or_else(|| Error::Internal(format!("node has no input {ix}")))
    }

    /// Output `ix`, or an error.
    pub fn output(&self, ix: usize) -> Result<&Fact> {
        self.outputs
            .get(ix)
            .ok_or_else(|| Error::Internal(format!("node has no output {ix}")))
    }
}

/// A tensor a lowered step reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// The node's input `k`.
    In(usize),
    /// The node's output `k`.
    Out(usize),
    /// Temporary `k` of the [`Lowering`].
    Temp(usize),
    /// Constant `k` of the [`Lowering`].
    Const(usize),
}

/// What a translator makes of one node.
#[derive(Debug, Clone, Default)]
pub struct Lowering {
    /// Temporaries (shape, dtype) the steps pass between them.
    pub temps: Vec<(Vec<usize>, DType)>,
    /// Constants the steps read (clamp bounds, a quantizer's range ends...).
    pub constants: Vec<Arc<TractTensor>>,
    /// Steps in order: op, inputs, outputs.
    pub steps: Vec<(KernelOp, Vec<Operand>, Vec<Operand>)>,
    /// (view, source): the first operand (an output or temporary) shares the second's bytes
    /// under its own shape.
    pub aliases: Vec<(Operand, Operand)>,
}

impl Lowering {
    /// One step reading every input of the node and writing every output.
    pub fn step(op: KernelOp, facts: &NodeFacts) -> Lowering {
        Lowering::step_on(op, (0..facts.inputs.len()).collect(), facts.outputs.len())
    }

    /// One step reading the given node inputs and writing the first `outputs` outputs.
    pub fn step_on(op: KernelOp, inputs: Vec<usize>, outputs: usize) -> Lowering {
        Lowering {
            steps: vec![(
                op,
                inputs.into_iter().map(Operand::In).collect(),
                (0..outputs).map(Operand::Out).collect(),
            )],
            ..Lowering::default()
        }
    }

    /// A new temporary of `shape` and `dtype`.
    pub fn temp(&mut self, shape: Vec<usize>, dtype: DType) -> Operand {
        self.temps.push((shape, dtype));
        Operand::Temp(self.temps.len() - 1)
    }

    /// A new constant holding `tensor`.
    pub fn constant(&mut self, tensor: TractTensor) -> Operand {
        self.constants.push(Arc::new(tensor));
        Operand::Const(self.constants.len() - 1)
    }

    /// Appends the step `op` from `inputs` to `outputs`.
    pub fn push(&mut self, op: KernelOp, inputs: Vec<Operand>, outputs: Vec<Operand>) {
        self.steps.push((op, inputs, outputs));
    }

    /// Output 0 shares input 0's buffer (no step, same bytes).
    pub fn view() -> Lowering {
        Lowering {
            aliases: vec![(Operand::Out(0), Operand::In(0))],
            ..Lowering::default()
        }
    }
}

/// A translator for one op type.
pub type Translator = fn(&TypedNode, &NodeFacts) -> Result<Option<Lowering>>;

/// Translators keyed by the tract op's type (or, for op types a crate keeps private, its
/// name), tried in registration order.
#[derive(Default)]
pub struct Registry {
    by_type: HashMap<TypeId, Vec<Translator>>,
    by_name: HashMap<&'static str, Vec<Translator>>,
}

impl Registry {
    /// Adds a translator for op type `O`.
    pub fn add<O: Any>(&mut self, translator: Translator) {
        self.by_type
            .entry(TypeId::of::<O>())
            .or_default()
            .push(translator);
    }

    /// Adds a translator for the ops tract names `name`.
    pub fn add_named(&mut self, name: &'static str, translator: Translator) {
        self.by_name.entry(name).or_default().push(translator);
    }

    fn translators(&self, node: &TypedNode) -> &[Translator] {
        let any: &dyn Any = tract_onnx::tract_core::downcast_rs::Downcast::as_any(node.op());
        if let Some(found) = self.by_type.get(&any.type_id()) {
            return found;
        }
        self.by_name
            .get(node.op().name().as_ref())
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Every family's translators.
    pub fn standard() -> &'static Registry {
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        REGISTRY.get_or_init(|| {
            let mut registry = Registry::default();
            elementwise::register(&mut registry);
            matmul::register(&mut registry);
            // After the matrix product: the forms it does not take.
            einsum::register(&mut registry);
            conv::register(&mut registry);
            pool::register(&mut registry);
            reduce::register(&mut registry);
            resize::register(&mut registry);
            grid_sample::register(&mut registry);
            fft::register(&mut registry);
            shape::register(&mut registry);
            quantized::register(&mut registry);
            stages::register(&mut registry);
            registry
        })
    }
}

/// Tessera's dtype for a tract datum type (tract's shape integers are i64, quantized bytes plain).
pub fn dtype_of(dt: DatumType) -> Result<DType> {
    Ok(match dt.unquantized() {
        DatumType::F32 => DType::F32,
        DatumType::F64 => DType::F64,
        DatumType::F16 => DType::F16,
        DatumType::I8 => DType::I8,
        DatumType::I16 => DType::I16,
        DatumType::I32 => DType::I32,
        DatumType::I64 | DatumType::TDim => DType::I64,
        DatumType::U8 => DType::U8,
        DatumType::U16 => DType::U16,
        DatumType::U32 => DType::U32,
        DatumType::U64 => DType::U64,
        DatumType::Bool => DType::Bool,
        other => {
            return Err(Error::UnsupportedDtype {
                dtype: format!("{other:?}"),
                context: "planning for a device backend".into(),
            });
        }
    })
}

fn fact(model: &TypedModel, outlet: OutletId) -> Result<Fact> {
    let fact = model
        .outlet_fact(outlet)
        .map_err(|e| Error::Internal(format!("{e:#}")))?;
    let shape = fact.shape.as_concrete().ok_or_else(|| {
        let node = model.node(outlet.node);
        Error::Prepare {
            backend: "plan".into(),
            message: format!(
                "the shape of '{}' ({}) is {:?}: it depends on values computed at run time, and a \
                 device plan needs every shape when it is made",
                node.name,
                node.op().name(),
                fact.shape
            ),
        }
    })?;
    Ok(Fact {
        shape: shape.to_vec(),
        dtype: dtype_of(fact.datum_type)?,
        konst: fact.konst.clone(),
    })
}

/// Builds the plan of a decluttered typed model with concrete shapes.
pub fn build_plan(model: &TypedModel) -> Result<Plan> {
    crate::error::catch_panic("planning the model", || Builder::new(model).run())
}

struct Builder<'a> {
    model: &'a TypedModel,
    values: Vec<Value>,
    of_outlet: HashMap<OutletId, ValueId>,
    constants: Vec<Constant>,
    steps: Vec<Step>,
}

impl<'a> Builder<'a> {
    fn new(model: &'a TypedModel) -> Builder<'a> {
        Builder {
            model,
            values: vec![],
            of_outlet: HashMap::new(),
            constants: vec![],
            steps: vec![],
        }
    }

    fn new_value(
        &mut self,
        name: String,
        shape: Vec<usize>,
        dtype: DType,
        role: Role,
        outlet: Option<OutletId>,
    ) -> ValueId {
        let id = ValueId(self.values.len());
        self.values.push(Value {
            id,
            name,
            shape,
            dtype,
            role,
            alias_of: None,
            outlet: outlet.map(|o| (o.node, o.slot)),
        });
        if let Some(outlet) = outlet {
            self.of_outlet.insert(outlet, id);
        }
        id
    }

    fn outlet_name(&self, outlet: OutletId) -> String {
        let name = &self.model.node(outlet.node).name;
        if outlet.slot == 0 {
            name.clone()
        } else {
            format!("{name}.{}", outlet.slot)
        }
    }

    fn run(mut self) -> Result<Plan> {
        let model = self.model;
        let inputs = model
            .input_outlets()
            .map_err(|e| Error::Internal(format!("{e:#}")))?
            .to_vec();
        let outputs = model
            .output_outlets()
            .map_err(|e| Error::Internal(format!("{e:#}")))?
            .to_vec();
        let mut order = model
            .eval_order()
            .map_err(|e| Error::Internal(format!("{e:#}")))?;
        // Inputs no output depends on (a Shape of x needs only x's shape) are still fed.
        for input in &inputs {
            if !order.contains(&input.node) {
                order.insert(0, input.node);
            }
        }
        let registry = Registry::standard();
        for id in order {
            let node = model.node(id);
            let facts = NodeFacts {
                inputs: node
                    .inputs
                    .iter()
                    .map(|&o| fact(model, o))
                    .collect::<Result<_>>()?,
                outputs: (0..node.outputs.len())
                    .map(|slot| fact(model, OutletId::new(id, slot)))
                    .collect::<Result<_>>()?,
            };
            if node.op_is::<TypedSource>() {
                let outlet = OutletId::new(id, 0);
                let k = inputs.iter().position(|&o| o == outlet).unwrap_or(0);
                let f = facts.output(0)?;
                self.new_value(
                    node.name.clone(),
                    f.shape.clone(),
                    f.dtype,
                    Role::Input(k),
                    Some(outlet),
                );
                continue;
            }
            // Constants (Const nodes, and any output tract already knows) are uploaded once.
            if node.op_is::<Const>()
                || (!facts.outputs.is_empty() && facts.outputs.iter().all(|f| f.konst.is_some()))
            {
                for (slot, f) in facts.outputs.iter().enumerate() {
                    let outlet = OutletId::new(id, slot);
                    let konst = f.konst.clone().ok_or_else(|| {
                        Error::Internal(format!("constant '{}' has no value", node.name))
                    })?;
                    let v = self.new_value(
                        self.outlet_name(outlet),
                        f.shape.clone(),
                        f.dtype,
                        Role::Constant,
                        Some(outlet),
                    );
                    self.constants.push(Constant {
                        value: v,
                        data: ConstantData(konst),
                    });
                }
                continue;
            }
            let mut lowering = None;
            for translator in registry.translators(node) {
                if let Some(found) = translator(node, &facts)? {
                    lowering = Some(found);
                    break;
                }
            }
            let lowering = lowering.unwrap_or_else(|| {
                Lowering::step(
                    KernelOp::Opaque {
                        tract_op: node.op().name().to_string(),
                    },
                    &facts,
                )
            });
            self.wire(node, &facts, lowering)?;
        }
        let output_ids = outputs
            .iter()
            .map(|o| {
                self.of_outlet
                    .get(o)
                    .copied()
                    .ok_or_else(|| Error::Internal(format!("output {o:?} was not planned")))
            })
            .collect::<Result<Vec<_>>>()?;
        for (k, id) in output_ids.iter().enumerate() {
            let value = &mut self.values[id.0];
            if value.role == Role::Intermediate {
                value.role = Role::Output(k);
            }
        }
        let input_ids = inputs
            .iter()
            .map(|o| {
                self.of_outlet
                    .get(o)
                    .copied()
                    .ok_or_else(|| Error::Internal(format!("input {o:?} was not planned")))
            })
            .collect::<Result<Vec<_>>>()?;
        let plan = Plan {
            values: self.values,
            constants: self.constants,
            steps: self.steps,
            inputs: input_ids,
            outputs: output_ids,
        };
        plan.validate()?;
        Ok(plan)
    }

    fn wire(&mut self, node: &TypedNode, facts: &NodeFacts, lowering: Lowering) -> Result<()> {
        let input_ids = node
            .inputs
            .iter()
            .map(|o| {
                self.of_outlet.get(o).copied().ok_or_else(|| {
                    Error::Internal(format!("input {o:?} of '{}' was not planned", node.name))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut output_ids = vec![];
        for (slot, f) in facts.outputs.iter().enumerate() {
            let outlet = OutletId::new(node.id, slot);
            output_ids.push(self.new_value(
                self.outlet_name(outlet),
                f.shape.clone(),
                f.dtype,
                Role::Intermediate,
                Some(outlet),
            ));
        }
        let temp_ids: Vec<ValueId> = lowering
            .temps
            .iter()
            .enumerate()
            .map(|(k, (shape, dtype))| {
                self.new_value(
                    format!("{}.tmp{k}", node.name),
                    shape.clone(),
                    *dtype,
                    Role::Intermediate,
                    None,
                )
            })
            .collect();
        let mut constant_ids = vec![];
        for (k, tensor) in lowering.constants.iter().enumerate() {
            let dtype = dtype_of(tensor.datum_type())?;
            let id = self.new_value(
                format!("{}.const{k}", node.name),
                tensor.shape().to_vec(),
                dtype,
                Role::Constant,
                None,
            );
            self.constants.push(Constant {
                value: id,
                data: ConstantData(tensor.clone()),
            });
            constant_ids.push(id);
        }
        let resolve = |operand: &Operand| -> Result<ValueId> {
            let found = match *operand {
                Operand::In(k) => input_ids.get(k),
                Operand::Out(k) => output_ids.get(k),
                Operand::Temp(k) => temp_ids.get(k),
                Operand::Const(k) => constant_ids.get(k),
            };
            found
                .copied()
                .ok_or_else(|| Error::Internal(format!("'{}': no operand {operand:?}", node.name)))
        };
        for (view, source) in &lowering.aliases {
            let (view, source) = (resolve(view)?, resolve(source)?);
            self.values[view.0].alias_of = Some(source);
        }
        for (op, inputs, outputs) in lowering.steps {
            let inputs = inputs.iter().map(resolve).collect::<Result<Vec<_>>>()?;
            let outputs = outputs.iter().map(resolve).collect::<Result<Vec<_>>>()?;
            self.steps.push(Step {
                node: node.name.clone(),
                op,
                inputs,
                outputs,
            });
        }
        Ok(())
    }
}
