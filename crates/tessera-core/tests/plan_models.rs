//! Builds the backend-neutral plan of every shared real model and checks it against tract, and
//! its memory plan: overlap-free, and an arena at most 1.5x the peak live bytes, both with dtype
//! sizes and with the GPU backends' 4-byte words (256-byte aligned offsets).
//!
//! Shared data: `$TESSERA_SHARED`, else `../shared` beside the repository; missing data is a
//! failure, never a silent skip.

mod common;

use common::{read_set, shared_model_dirs};
use std::path::Path;
use tessera_core::plan::{MemoryPlan, Role, Value, placement};
use tessera_core::{Model, Plan, Tensor};

fn inputs(dir: &Path) -> Vec<Tensor> {
    read_set(dir, "input").unwrap_or_else(|e| panic!("{e}"))
}

/// The GPU backends' budget: the arena may be at most this many times the peak live bytes.
const MAX_ARENA_OVER_PEAK: f64 = 1.5;

fn ratio(memory: &MemoryPlan) -> f64 {
    memory.planned_bytes as f64 / memory.peak_live_bytes.max(1) as f64
}

/// The memory plan is overlap-free, no smaller than the peak live set, no larger than giving
/// every value its own buffer (else a panic), and within [`MAX_ARENA_OVER_PEAK`] of the peak
/// (else a problem, reported once every model is measured).
fn check_memory(
    name: &str,
    sizes: &str,
    memory: &MemoryPlan,
    plan: &Plan,
    problems: &mut Vec<String>,
) {
    memory
        .check(&plan.values)
        .unwrap_or_else(|e| panic!("{name} ({sizes}): {e}"));
    assert!(
        memory.peak_live_bytes <= memory.planned_bytes,
        "{name} ({sizes}): peak > planned"
    );
    assert!(
        memory.planned_bytes <= memory.naive_bytes,
        "{name} ({sizes}): planned > naive"
    );
    if ratio(memory) > MAX_ARENA_OVER_PEAK {
        problems.push(format!(
            "{name} ({sizes}): arena {} B is {:.3}x the peak live {} B (at most {MAX_ARENA_OVER_PEAK}x)",
            memory.planned_bytes,
            ratio(memory),
            memory.peak_live_bytes
        ));
    }
}

fn check_model(dir: &Path, problems: &mut Vec<String>) -> String {
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

    let memory = MemoryPlan::build(&plan.values, &plan.steps, &plan.outputs)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    check_memory(&name, "dtype sizes", &memory, &plan, problems);
    // The GPU backends hold every element in a 4-byte word and plan again with those sizes.
    let words = MemoryPlan::build_with(
        &plan.values,
        &plan.steps,
        &plan.outputs,
        &|v: &Value| v.len() * 4,
        MemoryPlan::DEFAULT_ALIGNMENT,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    check_memory(&name, "4-byte words", &words, &plan, problems);

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
        "| {name} | {} | {views} | {} | {unsupported} | {} | {} | {:.3} | {} | {} | {:.3} | {} |",
        plan.steps.len(),
        plan.constants.len(),
        memory.peak_live_bytes,
        memory.planned_bytes,
        ratio(&memory),
        memory.naive_bytes,
        words.peak_live_bytes,
        ratio(&words),
        fallback.fallback_bytes(),
    )
}

#[test]
fn plans_for_shared_models() {
    let dirs = shared_model_dirs();
    println!(
        "| model | steps | views | constants | unsupported | peak B | planned B | planned/peak | naive B \
         | peak B (words) | planned/peak (words) | fallback B |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut problems = vec![];
    for dir in dirs {
        println!("{}", check_model(&dir, &mut problems));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
