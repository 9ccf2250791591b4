//! [`Session`]: a model bound to one backend.

use crate::resolve_backend;
use std::path::Path;
use std::sync::Arc;
use tessera_core::model::inputs::order_inputs;
use tessera_core::{Backend, Error, Model, ModelInfo, Result, Tensor};

/// Options for building a [`Session`].
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    backend: Backend,
    threads: Option<usize>,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        SessionBuilder {
            backend: Backend::Cpu,
            threads: None,
        }
    }
}

impl SessionBuilder {
    /// The backend to run on (default: [`Backend::Cpu`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Worker threads for the cpu backend (default: one per available core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Loads a model file and binds it to the backend.
    pub fn load(self, path: impl AsRef<Path>) -> Result<Session> {
        self.build(Model::load(path)?)
    }

    /// Loads a model from bytes and binds it to the backend.
    pub fn load_bytes(self, bytes: &[u8]) -> Result<Session> {
        self.build(Model::from_bytes(bytes)?)
    }

    /// Binds an already loaded model to the backend.
    pub fn build(self, model: Model) -> Result<Session> {
        let (backend, choice) = resolve_backend(self.backend)?;
        let model = Arc::new(model);
        let engine = match backend {
            #[cfg(feature = "cpu")]
            Backend::Cpu => Engine::Cpu(tessera_cpu::CpuSession::new(
                model.clone(),
                &tessera_cpu::CpuOptions {
                    threads: self.threads,
                },
            )?),
            other => {
                return Err(Error::BackendUnavailable {
                    backend: other.to_string(),
                    reason: "not compiled in".into(),
                    available: vec![],
                });
            }
        };
        Ok(Session {
            model,
            backend,
            choice,
            engine,
        })
    }
}

#[derive(Debug)]
enum Engine {
    #[cfg(feature = "cpu")]
    Cpu(tessera_cpu::CpuSession),
}

/// A model bound to one backend. Plans are built per input signature and cached.
#[derive(Debug)]
pub struct Session {
    model: Arc<Model>,
    backend: Backend,
    choice: String,
    engine: Engine,
}

impl Session {
    /// Starts building a session.
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// The model's declared inputs, outputs, opset and ops.
    pub fn info(&self) -> &ModelInfo {
        self.model.info()
    }

    /// The backend that runs this session.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Why this backend was chosen (useful with [`Backend::Auto`]).
    pub fn backend_choice(&self) -> &str {
        &self.choice
    }

    /// Worker threads in use on the cpu backend.
    pub fn threads(&self) -> usize {
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.threads(),
        }
    }

    /// Runs the model on named inputs; returns the outputs, named, in the model's order.
    /// Inputs are checked against the model first: a wrong name, dtype, rank or dim is an error
    /// that names what the model expects.
    pub fn run(&self, inputs: Vec<(String, Tensor)>) -> Result<Vec<(String, Tensor)>> {
        let ordered = order_inputs(self.info(), inputs)?;
        let outputs = match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.run(ordered)?,
        };
        Ok(self
            .info()
            .outputs
            .iter()
            .map(|o| o.name.clone())
            .zip(outputs)
            .collect())
    }

    /// Builds the plan for these inputs without running it (to time loading apart from running).
    pub fn prepare(&self, inputs: Vec<(String, Tensor)>) -> Result<()> {
        let ordered = order_inputs(self.info(), inputs)?;
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.prepare(&ordered),
        }
    }
}
