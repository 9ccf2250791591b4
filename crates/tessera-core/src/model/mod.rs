//! Loading an ONNX model through `tract-onnx`, and lowering it to tract's decluttered typed
//! graph for the concrete inputs of a run.
//!
//! The model's life: ONNX bytes → proto → [`ModelInfo`] (declared interface, checked dtypes and
//! ops) → tract inference graph (kept) → per input signature: facts set from the real inputs,
//! some inputs folded in as constants ([`specialize`]) → decluttered typed graph, which each
//! backend turns into its own plan.

pub mod info;
pub mod inputs;
pub mod specialize;

use crate::error::{UnsupportedOp, catch_panic, chain_message};
use crate::{Error, Result};
use info::{ModelInfo, op_key, walk_nodes};
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tract_onnx::pb;
use tract_onnx::prelude::InferenceModel;

/// A loaded ONNX model, ready to be lowered for any backend.
#[derive(Debug, Clone)]
pub struct Model {
    info: ModelInfo,
    graph: InferenceModel,
    source: Option<PathBuf>,
}

impl Model {
    /// Loads a model file. The file is memory-mapped while it is decoded; tensors stored as
    /// external data are read from the model's folder.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: the map is read-only and dropped before this function returns; a file
        // truncated underneath us is the one hazard, as with every mmap-based loader.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let mut model = Model::from_bytes_in_dir(&map, path.parent())?;
        model.source = Some(path.to_path_buf());
        Ok(model)
    }

    /// Loads a model from bytes held in memory (no external data).
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        Model::from_bytes_in_dir(bytes, None)
    }

    fn from_bytes_in_dir(bytes: &[u8], dir: Option<&Path>) -> Result<Model> {
        let proto = pb::ModelProto::decode(bytes)
            .map_err(|e| Error::InvalidModel(format!("cannot decode the protobuf: {e}")))?;
        let info = ModelInfo::from_proto(&proto)?;
        let graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| Error::InvalidModel("the model has no graph".into()))?;
        let onnx = crate::ops::onnx();
        let unsupported = unsupported_ops(graph, &|key| onnx.op_register.0.contains_key(key));
        if !unsupported.is_empty() {
            return Err(Error::UnsupportedOps {
                backend: None,
                ops: unsupported,
            });
        }
        let dir = dir.map(|d| d.to_string_lossy().into_owned());
        let graph = catch_panic("parsing the model", || {
            let parsed = onnx
                .parse(&proto, dir.as_deref())
                .map_err(|e| Error::InvalidModel(chain_message(&e)))?;
            if !parsed.unresolved_inputs.is_empty() {
                return Err(Error::InvalidModel(format!(
                    "these node inputs are produced by no node and are no graph input: {}",
                    parsed.unresolved_inputs.join(", ")
                )));
            }
            Ok(parsed.model)
        })?;
        Ok(Model {
            info,
            graph,
            source: None,
        })
    }

    /// The declared interface of the model.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The file the model came from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    pub(crate) fn graph(&self) -> &InferenceModel {
        &self.graph
    }
}

/// Every op type of a graph (subgraphs included) that `is_supported` rejects, with a count.
pub fn unsupported_ops(
    graph: &pb::GraphProto,
    is_supported: &dyn Fn(&str) -> bool,
) -> Vec<UnsupportedOp> {
    let mut found: BTreeMap<String, UnsupportedOp> = BTreeMap::new();
    walk_nodes(graph, &mut |node| {
        let key = op_key(node);
        if !is_supported(&key) {
            found
                .entry(key.clone())
                .or_insert_with(|| UnsupportedOp {
                    op_type: key,
                    first_node: node.name.clone(),
                    count: 0,
                })
                .count += 1;
        }
    });
    found.into_values().collect()
}
