//! Builds the backend-neutral plan of every shared real model and checks it against tract.
//!
//! Shared data: `$TESSERA_SHARED`, else `../shared` beside the repository; missing data is a
//! failure, never a silent skip.

mod common;

use common::{read_set, shared_model_dirs};
use std::path::Path;
use tessera_core::plan::{Role, Value, placement};
use tessera_core::{Model, Plan, Tensor};

fn inputs(dir: &Path) -> Vec<Tensor> {
    read_set(dir, "input").unwrap_or_else(|e| panic!("{e}"))
}

fn check_model(dir: &Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let model = Model::load(dir.join("model.onnx")).unwrap_or_else(|e| panic!("{name}: {e}"));
    let lowered = model
        .lower(&inputs(dir), None)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let plan = Plan::build(&lowered.typed).unwrap_or_else(|e| panic!("{name}: {e}"));
    plan.validate().unwrap_or_else(|e| panic!("{name}: {e}"));

    // Every value that stands for a tract outlet has tract's shape.
    for value in &plan.values {
        if let Some((node, slot)) = value.outlet {
            let outlet = tessera_core::tract_onnx::prelude::OutletId::new(node, slot);
            let fact = lowered.typed.outlet_fact(outlet).unwrap();
            assert_eq!(
                Some(value.shape.as_slice()),
                fact.shape.as_concrete(),
                "{name}: {}",
                value.name
            );
        }
    }
    assert_eq!(plan.inputs.len(), lowered.typed.inputs.len(), "{name}");
    assert_eq!(plan.outputs.len(), lowered.typed.outputs.len(), "{name}");
    for (k, &id) in plan.inputs.iter().enumerate() {
        assert_eq!(plan.values[id.0].role, Role::Input(k), "{name}");
    }

    let memory = &plan.memory;
    memory
        .check(&plan.values)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        memory.peak_live_bytes <= memory.planned_bytes,
        "{name}: peak > planned"
    );
    assert!(
        memory.planned_bytes <= memory.naive_bytes,
        "{name}: planned > naive"
    );

    // A backend that runs everything lowered places the whole plan on the device when nothing is
    // opaque; with fallback, opaque steps go to the host.
    let all = |_: usize| None;
    let unsupported = plan.unsupported();
    let strict = placement::place(&plan, "test", &all, false, &Value::bytes);
    assert_eq!(strict.is_ok(), unsupported.is_empty(), "{name}");
    let fallback = placement::place(&plan, "test", &all, true, &Value::bytes)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let views = plan.values.iter().filter(|v| v.alias_of.is_some()).count();
    let unsupported = if unsupported.is_empty() {
        "-".to_string()
    } else {
        unsupported
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "| {name} | {} | {views} | {} | {unsupported} | {} | {} | {} | {} |",
        plan.steps.len(),
        plan.constants.len(),
        memory.peak_live_bytes,
        memory.planned_bytes,
        memory.naive_bytes,
        fallback.fallback_bytes(),
    )
}

#[test]
fn plans_for_shared_models() {
    let dirs = shared_model_dirs();
    println!(
        "| model | steps | views | constants | unsupported | peak B | planned B | naive B | fallback B |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for dir in dirs {
        println!("{}", check_model(&dir));
    }
}
