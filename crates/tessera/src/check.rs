//! Checks a model against reference data in the ONNX test layout:
//! `model.onnx` beside `test_data_set_N/{input_K,output_K}.pb`.
//!
//! An output passes when its dtype and shape match and every element satisfies
//! `|actual - expected| <= atol + rtol * |expected|` (numpy's `assert_allclose` rule;
//! NaN matches NaN, infinities must match exactly).

use crate::{Error, Result, Session, Tensor, TensorData, onnx_pb};
use std::path::{Path, PathBuf};

/// Tolerances of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// What the real-model checks use: rtol 1e-3, atol 1e-4.
    pub const MODELS: Tolerance = Tolerance {
        rtol: 1e-3,
        atol: 1e-4,
    };
    /// What the ONNX node suite uses: rtol 1e-3, atol 1e-5.
    pub const NODE_SUITE: Tolerance = Tolerance {
        rtol: 1e-3,
        atol: 1e-5,
    };
}

/// How one output compares with its reference.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OutputCheck {
    /// Output name.
    pub name: String,
    /// `dtype[shape]` produced.
    pub actual: String,
    /// `dtype[shape]` expected.
    pub expected: String,
    /// Largest absolute difference (NaN when shapes or dtypes differ).
    pub max_abs_err: f64,
    /// Largest difference relative to the expected magnitude, over non-zero expected values.
    pub max_rel_err: f64,
    /// Elements outside tolerance.
    pub mismatches: usize,
    /// Whether the output is within tolerance.
    pub passed: bool,
}

/// Compares one output with its reference.
pub fn compare(name: &str, actual: &Tensor, expected: &Tensor, tol: Tolerance) -> OutputCheck {
    let describe = |t: &Tensor| format!("{}{:?}", t.dtype(), t.shape());
    let mut check = OutputCheck {
        name: name.to_string(),
        actual: describe(actual),
        expected: describe(expected),
        max_abs_err: f64::NAN,
        max_rel_err: f64::NAN,
        mismatches: expected.len(),
        passed: false,
    };
    if actual.dtype() != expected.dtype() || actual.shape() != expected.shape() {
        return check;
    }
    // Integers and bools are exact: an index off by one is wrong whatever the tolerance, and
    // int64 beyond 2^53 must not be rounded through f64.
    if let (Some(a), Some(e)) = (exact_values(actual.data()), exact_values(expected.data())) {
        let (mut max_abs, mut mismatches) = (0u128, 0usize);
        for (a, e) in a.iter().zip(&e) {
            let diff = a.abs_diff(*e);
            max_abs = max_abs.max(diff);
            mismatches += usize::from(diff != 0);
        }
        check.max_abs_err = max_abs as f64;
        check.max_rel_err = if mismatches == 0 { 0.0 } else { f64::INFINITY };
        check.mismatches = mismatches;
        check.passed = mismatches == 0;
        return check;
    }
    let (mut max_abs, mut max_rel, mut mismatches) = (0f64, 0f64, 0usize);
    for (a, e) in actual
        .data()
        .to_f64_vec()
        .into_iter()
        .zip(expected.data().to_f64_vec())
    {
        let ok = if a.is_nan() || e.is_nan() {
            a.is_nan() && e.is_nan()
        } else if a.is_infinite() || e.is_infinite() {
            a == e
        } else {
            let diff = (a - e).abs();
            max_abs = max_abs.max(diff);
            if e != 0.0 {
                max_rel = max_rel.max(diff / e.abs());
            }
            diff <= tol.atol + tol.rtol * e.abs()
        };
        mismatches += usize::from(!ok);
    }
    check.max_abs_err = max_abs;
    check.max_rel_err = max_rel;
    check.mismatches = mismatches;
    check.passed = mismatches == 0;
    check
}

/// The values of an integer or bool tensor, widened without loss; `None` for floats.
fn exact_values(data: &TensorData) -> Option<Vec<i128>> {
    fn widen<T: Copy + Into<i128>>(v: &[T]) -> Option<Vec<i128>> {
        Some(v.iter().map(|&x| x.into()).collect())
    }
    match data {
        TensorData::I8(v) => widen(v),
        TensorData::I16(v) => widen(v),
        TensorData::I32(v) => widen(v),
        TensorData::I64(v) => widen(v),
        TensorData::U8(v) => widen(v),
        TensorData::U16(v) => widen(v),
        TensorData::U32(v) => widen(v),
        TensorData::U64(v) => widen(v),
        TensorData::Bool(v) => Some(v.iter().map(|&b| i128::from(b)).collect()),
        TensorData::F32(_) | TensorData::F64(_) | TensorData::F16(_) => None,
    }
}

/// The outcome of one `test_data_set_N` folder.
#[derive(Debug)]
pub struct DataSetCheck {
    /// The folder.
    pub dir: PathBuf,
    /// Per-output comparisons (empty when the run failed).
    pub outputs: Vec<OutputCheck>,
    /// Why the run failed, if it did.
    pub error: Option<Error>,
}

impl DataSetCheck {
    /// Whether the run succeeded and every output is within tolerance.
    pub fn passed(&self) -> bool {
        self.error.is_none() && !self.outputs.is_empty() && self.outputs.iter().all(|o| o.passed)
    }
}

/// The `test_data_set_*` folders of a model folder, sorted.
pub fn data_set_dirs(model_dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(model_dir).map_err(|e| Error::Io {
        path: model_dir.into(),
        source: e,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
        })
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Reads `prefix_0.pb`, `prefix_1.pb`... in order; unnamed tensors take `names[k]`.
pub fn read_numbered(dir: &Path, prefix: &str, names: &[String]) -> Result<Vec<(String, Tensor)>> {
    let mut tensors = Vec::new();
    for index in 0.. {
        let path = dir.join(format!("{prefix}_{index}.pb"));
        if !path.exists() {
            break;
        }
        let (name, tensor) = onnx_pb::read_pb(&path)?;
        let name = if name.is_empty() {
            names.get(index).cloned().unwrap_or_default()
        } else {
            name
        };
        tensors.push((name, tensor));
    }
    Ok(tensors)
}

/// Runs one data set and compares each output with its reference (by position).
pub fn check_data_set(session: &Session, dir: &Path, tol: Tolerance) -> DataSetCheck {
    let run = || -> Result<Vec<OutputCheck>> {
        let input_names: Vec<String> = session.info().input_names();
        let output_names: Vec<String> = session.info().output_names();
        let inputs = read_numbered(dir, "input", &input_names)?;
        let expected = read_numbered(dir, "output", &output_names)?;
        let actual = session.run(inputs)?;
        if actual.len() != expected.len() {
            return Err(Error::Internal(format!(
                "{} outputs produced, {} expected",
                actual.len(),
                expected.len()
            )));
        }
        Ok(actual
            .iter()
            .zip(&expected)
            .map(|((name, a), (_, e))| compare(name, a, e, tol))
            .collect())
    };
    match run() {
        Ok(outputs) => DataSetCheck {
            dir: dir.into(),
            outputs,
            error: None,
        },
        Err(error) => DataSetCheck {
            dir: dir.into(),
            outputs: vec![],
            error: Some(error),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(values: Vec<f32>) -> Tensor {
        Tensor::from_vec(vec![values.len()], values).unwrap()
    }

    #[test]
    fn tolerance_is_numpy_allclose() {
        let tol = Tolerance {
            rtol: 1e-3,
            atol: 1e-4,
        };
        assert!(compare("y", &t(vec![1.0005, 0.0]), &t(vec![1.0, 0.00005]), tol).passed);
        let out = compare("y", &t(vec![1.01, f32::NAN]), &t(vec![1.0, f32::NAN]), tol);
        assert!(!out.passed);
        assert_eq!(out.mismatches, 1);
        assert!((out.max_abs_err - 0.01).abs() < 1e-6);
    }

    #[test]
    fn shape_or_dtype_mismatch_fails() {
        let tol = Tolerance::MODELS;
        assert!(
            !compare(
                "y",
                &t(vec![1.0, 2.0]),
                &Tensor::from_vec(vec![1, 2], vec![1f32, 2.0]).unwrap(),
                tol
            )
            .passed
        );
        assert!(
            !compare(
                "y",
                &t(vec![1.0]),
                &Tensor::from_vec(vec![1], vec![1f64]).unwrap(),
                tol
            )
            .passed
        );
    }

    #[test]
    fn integers_and_bools_compare_exactly() {
        // A loose tolerance would let 1000 pass for 1001; integers must not.
        let loose = Tolerance {
            rtol: 0.01,
            atol: 1.0,
        };
        let ints = |v: Vec<i64>| Tensor::from_vec(vec![v.len()], v).unwrap();
        let off_by_one = compare("i", &ints(vec![0, 1000]), &ints(vec![0, 1001]), loose);
        assert!(!off_by_one.passed);
        assert_eq!(off_by_one.mismatches, 1);
        assert_eq!(off_by_one.max_abs_err, 1.0);
        // 2^53 + 1 and 2^53 are the same f64: they must still differ here.
        let big = 1i64 << 53;
        assert!(!compare("i", &ints(vec![big + 1]), &ints(vec![big]), loose).passed);
        assert!(
            compare(
                "i",
                &ints(vec![big + 1, -7]),
                &ints(vec![big + 1, -7]),
                loose
            )
            .passed
        );
        let unsigned = |v: Vec<u64>| Tensor::from_vec(vec![v.len()], v).unwrap();
        assert!(
            !compare(
                "u",
                &unsigned(vec![u64::MAX]),
                &unsigned(vec![u64::MAX - 1]),
                loose
            )
            .passed
        );
        let bools = |v: Vec<bool>| Tensor::from_vec(vec![v.len()], v).unwrap();
        assert!(
            !compare(
                "b",
                &bools(vec![true, false]),
                &bools(vec![true, true]),
                loose
            )
            .passed
        );
        assert!(
            compare(
                "b",
                &bools(vec![true, false]),
                &bools(vec![true, false]),
                loose
            )
            .passed
        );
    }
}
