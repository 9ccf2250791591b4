//! `tessera inspect MODEL`: the declared interface, the op histogram, and backend support.

use crate::args::InspectArgs;
use crate::inputs::gather;
use anyhow::Result;
use std::process::ExitCode;
use tessera::{Backend, Model, Quantization, QuantizedExecution, Session};

/// Per backend: `None` when not compiled in, else each op type and whether it runs there.
type Support = Vec<(Backend, Option<Vec<(String, bool)>>)>;

pub fn run(args: InspectArgs) -> Result<ExitCode> {
    if let Some(file) = &args.graph {
        return picture(&args, file);
    }
    if let Some(backend) = args.backend {
        return placement(&args, backend);
    }
    let (info, unsupported) = Model::inspect(&args.model)?;
    let support: Support = [Backend::Cpu, Backend::Wgpu, Backend::Cuda]
        .into_iter()
        .map(|backend| {
            let ops = tessera::supported_ops(backend, &info).map(|ops| {
                ops.into_iter()
                    .map(|(op, ok)| {
                        let ok = ok && !unsupported.iter().any(|u| u.op_type == op);
                        (op, ok)
                    })
                    .collect()
            });
            (backend, ops)
        })
        .collect();
    if args.json {
        let backends: serde_json::Map<String, serde_json::Value> = support
            .iter()
            .map(|(backend, ops)| {
                let mut value = match ops {
                    None => serde_json::json!({ "compiled_in": false }),
                    Some(ops) => serde_json::json!({
                        "compiled_in": true,
                        "unsupported": ops.iter().filter(|(_, ok)| !ok).map(|(op, _)| op).collect::<Vec<_>>(),
                    }),
                };
                if let Some(quantization) = &info.quantization {
                    value["quantized_ops"] = quantization
                        .computing_ops()
                        .into_iter()
                        .map(|op| {
                            let how = tessera::quantized_execution(*backend, op);
                            (op.to_string(), serde_json::json!(how))
                        })
                        .collect::<serde_json::Map<_, _>>()
                        .into();
                }
                (backend.to_string(), value)
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "model": info, "backends": backends })
            )?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("model: {}", args.model.display());
    println!(
        "opset: {}{}",
        info.opset,
        if info.producer.is_empty() {
            String::new()
        } else {
            format!(", producer: {}", info.producer)
        }
    );
    match &info.quantization {
        None => println!("quantized: no"),
        Some(quantization) => print_quantization(quantization),
    }
    println!("inputs:");
    for input in &info.inputs {
        println!("  {}: {}", input.name, input.signature());
    }
    println!("outputs:");
    for output in &info.outputs {
        println!("  {}: {}", output.name, output.signature());
    }
    let nodes: usize = info.op_histogram.values().sum();
    println!("ops ({} types, {nodes} nodes):", info.op_histogram.len());
    for (op, count) in &info.op_histogram {
        println!("  {op:<28} {count}");
    }
    println!("backends:");
    for (backend, ops) in &support {
        match ops {
            None => println!("  {backend:<5} not compiled in"),
            Some(ops) => {
                let missing: Vec<&str> = ops
                    .iter()
                    .filter(|(_, ok)| !ok)
                    .map(|(op, _)| op.as_str())
                    .collect();
                if missing.is_empty() {
                    println!("  {backend:<5} runs all {} op types", ops.len());
                } else {
                    println!("  {backend:<5} cannot run: {}", missing.join(", "));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The formats, then per backend how each quantized operator type runs.
fn print_quantization(quantization: &Quantization) {
    let formats: Vec<String> = quantization.formats.iter().map(|f| f.to_string()).collect();
    let mut line = format!("quantized: yes ({}", formats.join(", "));
    if formats.is_empty() {
        line = "quantized: yes (quantize/dequantize only".into();
    }
    if !quantization.contrib_ops.is_empty() {
        line += &format!(
            "; com.microsoft ops: {}",
            quantization.contrib_ops.join(", ")
        );
    }
    println!("{line})");
    let ops = quantization.computing_ops();
    if ops.is_empty() {
        return;
    }
    for backend in [Backend::Cpu, Backend::Wgpu, Backend::Cuda] {
        let mut by_execution: Vec<(QuantizedExecution, Vec<&str>)> = Vec::new();
        for op in &ops {
            let how = tessera::quantized_execution(backend, op);
            match by_execution.iter_mut().find(|(h, _)| *h == how) {
                Some((_, list)) => list.push(op),
                None => by_execution.push((how, vec![op])),
            }
        }
        let parts: Vec<String> = by_execution
            .iter()
            .map(|(how, list)| format!("{how}: {}", list.join(", ")))
            .collect();
        println!("  {backend:<5} {}", parts.join("; "));
    }
}

/// `inspect --backend B`: plan the model on B and show where every step runs.
fn placement(args: &InspectArgs, backend: Backend) -> Result<ExitCode> {
    let session = Session::builder()
        .backend(backend)
        .allow_fallback(args.allow_fallback)
        .load(&args.model);
    let session = match session {
        Ok(session) => session,
        Err(error @ tessera::Error::UnsupportedOps { .. }) => {
            println!("{error}");
            println!("(add --allow-fallback to see the placement with those steps on the host)");
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error.into()),
    };
    let inputs: Vec<_> = gather(session.info(), &args.input)?
        .into_iter()
        .map(|(n, t, _)| (n, t))
        .collect();
    let shapes: Vec<String> = inputs
        .iter()
        .map(|(n, t)| format!("{n}: {}{:?}", t.dtype(), t.shape()))
        .collect();
    match session.plan_report(inputs) {
        Ok(Some(report)) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("model: {}", args.model.display());
                println!("inputs: {}", shapes.join(", "));
                print!("{}", report.render());
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(None) => {
            println!(
                "{}: every op runs on the host ({})",
                session.backend(),
                session.backend_choice()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(error @ tessera::Error::UnsupportedOps { .. }) => {
            println!("{error}");
            println!("(add --allow-fallback to see the placement with those steps on the host)");
            Ok(ExitCode::FAILURE)
        }
        Err(error) => Err(error.into()),
    }
}

/// `inspect --graph FILE` in a build without pictures: refused, saying why.
#[cfg(not(feature = "pictures"))]
fn picture(_: &InspectArgs, _: &std::path::Path) -> Result<ExitCode> {
    Err(super::without_pictures("--graph"))
}

/// `inspect --graph FILE`: draw the placement on the backend (cpu by default).
#[cfg(feature = "pictures")]
fn picture(args: &InspectArgs, file: &std::path::Path) -> Result<ExitCode> {
    let html = match file.extension().and_then(|e| e.to_str()) {
        Some("html") | Some("htm") => true,
        Some("svg") => false,
        _ => anyhow::bail!(
            "--graph {}: the file must end in .svg or .html",
            file.display()
        ),
    };
    let backend = args.backend.unwrap_or(Backend::Cpu);
    let model = Model::load(&args.model)?;
    let inputs: Vec<_> = gather(model.info(), &args.input)?
        .into_iter()
        .map(|(n, t, _)| (n, t))
        .collect();
    drop(model);
    let (picture, refusal) =
        tessera::diagnostics::placement_picture(&args.model, backend, args.allow_fallback, inputs)?;
    let page = if html {
        picture.to_html()
    } else {
        picture.to_svg()
    };
    std::fs::write(file, page).map_err(|e| anyhow::anyhow!("writing {}: {e}", file.display()))?;
    println!(
        "wrote {}: {} plan steps in {} boxes on {} ({})",
        file.display(),
        picture.plan.steps.len(),
        picture.boxes(),
        picture.backend,
        picture.device
    );
    match refusal {
        Some(error) => {
            println!("{error}");
            println!(
                "(the picture marks those steps as unsupported; add --allow-fallback to run them on the host)"
            );
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
