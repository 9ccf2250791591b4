//! Helpers shared by the integration tests that read `../shared/models`.

use std::path::{Path, PathBuf};
use tessera_core::Tensor;
use tessera_core::tensor::onnx_pb::read_pb;

/// `$TESSERA_SHARED`, else `../shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("TESSERA_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// The 20 shared real model folders, sorted; missing data fails the test (never a skip).
pub fn shared_model_dirs() -> Vec<PathBuf> {
    let models = shared_dir().join("models");
    let entries = std::fs::read_dir(&models).unwrap_or_else(|e| {
        panic!(
            "no shared models at {}: {e} (set TESSERA_SHARED)",
            models.display()
        )
    });
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("model.onnx").exists())
        .collect();
    dirs.sort();
    assert_eq!(
        dirs.len(),
        20,
        "expected the 20 shared real models in {}",
        models.display()
    );
    dirs
}

/// `test_data_set_0/{prefix}_K.pb` for K = 0, 1, ... in order.
pub fn read_set(dir: &Path, prefix: &str) -> Result<Vec<Tensor>, String> {
    let mut tensors = vec![];
    for k in 0.. {
        let path = dir.join("test_data_set_0").join(format!("{prefix}_{k}.pb"));
        if !path.exists() {
            break;
        }
        tensors.push(
            read_pb(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .1,
        );
    }
    if tensors.is_empty() {
        return Err(format!("no {prefix}_0.pb in {}", dir.display()));
    }
    Ok(tensors)
}
