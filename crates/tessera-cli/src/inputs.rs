//! Turns `--input NAME=FILE`, `--dim SYMBOL=N` and `--seed` into the tensors of a run.

use crate::args::InputArgs;
use anyhow::{Context, Result, bail};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::path::Path;
use tessera::{DType, Dim, IoInfo, ModelInfo, Tensor, TensorData, npy, onnx_pb};

/// The most elements a random input may have (2^28: 1 GiB of float32). `--dim` values are
/// the user's to choose, so the shape they make is checked against this before anything is
/// allocated; a larger input can still be given as a file.
pub const MAX_GENERATED_ELEMENTS: usize = 1 << 28;

/// Where an input came from, for the report.
pub enum Origin {
    File(String),
    Random,
}

/// The named inputs of a run, in the model's order, with their origin.
pub fn gather(info: &ModelInfo, args: &InputArgs) -> Result<Vec<(String, Tensor, Origin)>> {
    let mut given: HashMap<String, (Tensor, String)> = HashMap::new();
    let check_name = |name: &str| {
        if info.input_index(name).is_none() {
            let names: Vec<&str> = info.inputs.iter().map(|i| i.name.as_str()).collect();
            bail!("input '{name}': the model has no such input; its inputs are {names:?}");
        }
        Ok(())
    };
    for spec in &args.inputs {
        match spec.split_once('=') {
            Some((name, file)) => {
                check_name(name)?;
                given.insert(
                    name.to_string(),
                    (read_tensor(Path::new(file))?, file.to_string()),
                );
            }
            // A .npz holds several named arrays: each feeds the input of the same name.
            None if spec.ends_with(".npz") => {
                for (name, tensor) in npy::read_npz(Path::new(spec))? {
                    check_name(&name)?;
                    given.insert(name.clone(), (tensor, format!("{spec}:{name}")));
                }
            }
            None => bail!("--input '{spec}' is not NAME=FILE (or an .npz file of named arrays)"),
        }
    }
    let mut dims: HashMap<String, usize> = HashMap::new();
    for spec in &args.dims {
        let (symbol, size) = spec
            .split_once('=')
            .with_context(|| format!("--dim '{spec}' is not SYMBOL=N"))?;
        dims.insert(
            symbol.to_string(),
            size.parse()
                .with_context(|| format!("--dim '{spec}': N must be a number"))?,
        );
    }
    let mut rng = StdRng::seed_from_u64(args.seed);
    info.inputs
        .iter()
        .map(|input| match given.remove(&input.name) {
            Some((tensor, origin)) => Ok((input.name.clone(), tensor, Origin::File(origin))),
            None => Ok((
                input.name.clone(),
                random_tensor(input, &dims, &mut rng)?,
                Origin::Random,
            )),
        })
        .collect()
}

/// Reads a tensor from `.npy` or ONNX `.pb`.
pub fn read_tensor(path: &Path) -> Result<Tensor> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("npy") => Ok(npy::read_npy(path)?),
        Some("pb") => Ok(onnx_pb::read_pb(path)?.1),
        _ => bail!("{}: expected a .npy or .pb file", path.display()),
    }
}

fn random_tensor(
    input: &IoInfo,
    dims: &HashMap<String, usize>,
    rng: &mut StdRng,
) -> Result<Tensor> {
    let shape: Vec<usize> = input
        .dims
        .iter()
        .flatten()
        .map(|d| match d {
            Dim::Fixed(n) => *n,
            Dim::Symbol(s) => dims.get(s).copied().unwrap_or(1),
            Dim::Unknown => 1,
        })
        .collect();
    let n = tessera::element_count(&shape)
        .filter(|&n| n <= MAX_GENERATED_ELEMENTS)
        .with_context(|| {
            format!(
                "input '{}': a random input of shape {shape:?} would have more than {MAX_GENERATED_ELEMENTS} elements, \
                 the limit for generated inputs; give smaller --dim values or the input as a file (--input)",
                input.name
            )
        })?;
    // Floats uniform in [0, 1); integers small and non-negative so they are valid ids and indices.
    let data = match input.dtype {
        DType::F32 => TensorData::F32((0..n).map(|_| rng.random::<f32>()).collect()),
        DType::F64 => TensorData::F64((0..n).map(|_| rng.random::<f64>()).collect()),
        DType::F16 => TensorData::F16(
            (0..n)
                .map(|_| half::f16::from_f32(rng.random::<f32>()))
                .collect(),
        ),
        DType::I64 => TensorData::I64((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::I32 => TensorData::I32((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::I16 => TensorData::I16((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::I8 => TensorData::I8((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::U8 => TensorData::U8((0..n).map(|_| rng.random()).collect()),
        DType::U16 => TensorData::U16((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::U32 => TensorData::U32((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::U64 => TensorData::U64((0..n).map(|_| rng.random_range(0..100)).collect()),
        DType::Bool => TensorData::Bool((0..n).map(|_| rng.random()).collect()),
    };
    Ok(Tensor::new(shape, data)?)
}
