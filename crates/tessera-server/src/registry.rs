//! The models a server serves: found from `--model NAME=PATH` specs or a model repository,
//! each loaded into a session with its own worker queue.

use crate::error::ServerError;
use crate::metrics::Metrics;
use crate::protocol::{ModelMetadata, TensorMetadata};
use crate::worker::{Batching, ModelWorkers};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tessera::SessionBuilder;

/// A model to serve: its name, version and file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub name: String,
    pub version: String,
    pub path: PathBuf,
}

impl ModelSpec {
    /// Parses `NAME=PATH` (version 1).
    pub fn parse(spec: &str) -> Result<ModelSpec, ServerError> {
        let (name, path) = spec.split_once('=').ok_or_else(|| {
            ServerError::Config(format!("--model '{spec}': expected NAME=PATH.onnx"))
        })?;
        check_name(name)?;
        Ok(ModelSpec {
            name: name.into(),
            version: "1".into(),
            path: path.into(),
        })
    }
}

fn check_name(name: &str) -> Result<(), ServerError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(ServerError::Config(format!(
            "model name '{name}': use letters, digits, '_', '-' and '.'"
        )))
    }
}

/// Every model in a repository folder: `DIR/NAME/model.onnx` (version 1), or Triton's layout
/// `DIR/NAME/<version>/model.onnx`, of which the highest version is served.
pub fn scan_repository(dir: &Path) -> Result<Vec<ModelSpec>, ServerError> {
    let io = |source| ServerError::Io {
        context: format!("reading the model repository {}", dir.display()),
        source,
    };
    let mut specs = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for folder in entries.into_iter().filter(|p| p.is_dir()) {
        let Some(name) = folder
            .file_name()
            .and_then(|n| n.to_str())
            .map(String::from)
        else {
            continue;
        };
        let direct = folder.join("model.onnx");
        if direct.is_file() {
            check_name(&name)?;
            specs.push(ModelSpec {
                name,
                version: "1".into(),
                path: direct,
            });
            continue;
        }
        let latest = std::fs::read_dir(&folder)
            .map_err(io)?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let version: u64 = e.file_name().to_str()?.parse().ok()?;
                let path = e.path().join("model.onnx");
                path.is_file().then_some((version, path))
            })
            .max_by_key(|(version, _)| *version);
        if let Some((version, path)) = latest {
            check_name(&name)?;
            specs.push(ModelSpec {
                name,
                version: version.to_string(),
                path,
            });
        }
    }
    if specs.is_empty() {
        return Err(ServerError::Config(format!(
            "no models in {}: expected NAME/model.onnx or NAME/<version>/model.onnx",
            dir.display()
        )));
    }
    Ok(specs)
}

/// A loaded model.
pub struct LoadedModel {
    pub version: String,
    pub metadata: ModelMetadata,
    /// Output names in the model's order.
    pub output_names: Vec<String>,
    pub workers: ModelWorkers,
}

/// How each model's session and workers are set up.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub session: SessionBuilder,
    pub workers_per_model: usize,
    pub queue_capacity: usize,
    pub batching: Option<Batching>,
}

/// Every served model, by name.
pub struct Registry {
    pub models: BTreeMap<String, LoadedModel>,
}

impl Registry {
    /// Loads every model (blocking: run it off the async runtime).
    pub fn load(
        specs: &[ModelSpec],
        options: &WorkerOptions,
        metrics: &Metrics,
    ) -> Result<Registry, ServerError> {
        if specs.is_empty() {
            return Err(ServerError::Config(
                "no models to serve: give --model NAME=PATH or --model-repository DIR".into(),
            ));
        }
        let mut models = BTreeMap::new();
        for spec in specs {
            if models.contains_key(&spec.name) {
                return Err(ServerError::Config(format!(
                    "model name '{}' is given twice",
                    spec.name
                )));
            }
            let session =
                options
                    .session
                    .clone()
                    .load(&spec.path)
                    .map_err(|source| ServerError::Load {
                        name: spec.name.clone(),
                        source,
                    })?;
            tracing::info!(
                model = %spec.name,
                version = %spec.version,
                path = %spec.path.display(),
                backend = %session.backend(),
                "loaded"
            );
            let info = session.info();
            let metadata = ModelMetadata {
                name: spec.name.clone(),
                versions: vec![spec.version.clone()],
                platform: "onnx",
                inputs: info.inputs.iter().map(TensorMetadata::from_io).collect(),
                outputs: info.outputs.iter().map(TensorMetadata::from_io).collect(),
            };
            let output_names = info.outputs.iter().map(|o| o.name.clone()).collect();
            metrics.register_model(&spec.name);
            let workers = ModelWorkers::start(
                &spec.name,
                Arc::new(session),
                options.workers_per_model,
                options.queue_capacity,
                options.batching,
                metrics.clone(),
            )?;
            models.insert(
                spec.name.clone(),
                LoadedModel {
                    version: spec.version.clone(),
                    metadata,
                    output_names,
                    workers,
                },
            );
        }
        Ok(Registry { models })
    }

    /// The model, checking the version when the path names one.
    pub fn get(&self, name: &str, version: Option<&str>) -> Result<&LoadedModel, ServerError> {
        let model = self.models.get(name).ok_or_else(|| {
            ServerError::NotFound(format!(
                "unknown model '{name}'; this server has: {}",
                self.models.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })?;
        match version {
            Some(v) if !v.is_empty() && v != model.version => Err(ServerError::NotFound(format!(
                "model '{name}' has no version '{v}' (served: {})",
                model.version
            ))),
            _ => Ok(model),
        }
    }

    /// Closes every queue and waits for the workers to finish what was accepted.
    pub fn close(&self) {
        for model in self.models.values() {
            model.workers.close();
        }
    }
}
