//! numpy `.npy` and `.npz` files. Headers are parsed and written by `ndarray-npy`;
//! bodies are raw little-endian elements, decoded by [`TensorData::from_le_bytes`].

use super::Tensor;
use crate::{DType, Error, Result};
use ndarray_npy::npy::header::{Header, Layout};
use py_literal::Value as PyValue;
use std::io::{Read, Seek, Write};
use std::path::Path;

/// Reads one `.npy` file.
pub fn read_npy(path: &Path) -> Result<Tensor> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    npy_from_bytes(&bytes).map_err(|e| with_path(e, path))
}

/// Writes one `.npy` file.
pub fn write_npy(path: &Path, tensor: &Tensor) -> Result<()> {
    std::fs::write(path, npy_to_bytes(tensor)?).map_err(|e| Error::io(path, e))
}

/// Decodes the bytes of a `.npy` file.
pub fn npy_from_bytes(bytes: &[u8]) -> Result<Tensor> {
    let mut reader = bytes;
    let header = Header::from_reader(&mut reader)
        .map_err(|e| Error::tensor_data(None, format!("bad .npy header: {e}")))?;
    let descr = match &header.type_descriptor {
        PyValue::String(s) => s.clone(),
        other => {
            return Err(Error::tensor_data(
                None,
                format!("unsupported .npy dtype {other}"),
            ));
        }
    };
    let dtype = DType::from_numpy_descr(&descr)
        .ok_or_else(|| Error::tensor_data(None, format!("unsupported .npy dtype '{descr}'")))?;
    if header.layout == Layout::Fortran && header.shape.len() > 1 {
        return Err(Error::tensor_data(
            None,
            "Fortran-ordered .npy arrays are not supported: save with numpy.ascontiguousarray",
        ));
    }
    let count: usize = header.shape.iter().product();
    let body_len = count * dtype.size_of();
    if reader.len() < body_len {
        return Err(Error::tensor_data(
            None,
            format!(
                "truncated .npy body: {} bytes for {count} elements of {dtype}",
                reader.len()
            ),
        ));
    }
    Tensor::from_le_bytes(dtype, header.shape, &reader[..body_len])
}

/// Encodes a tensor as the bytes of a `.npy` file.
pub fn npy_to_bytes(tensor: &Tensor) -> Result<Vec<u8>> {
    let header = Header {
        type_descriptor: PyValue::String(tensor.dtype().numpy_descr().to_string()),
        layout: Layout::Standard,
        shape: tensor.shape().to_vec(),
    };
    let mut bytes = header
        .to_bytes()
        .map_err(|e| Error::tensor_data(None, format!("cannot format .npy header: {e}")))?;
    bytes.extend(tensor.data().to_le_bytes());
    Ok(bytes)
}

/// Reads every array of an `.npz` archive, in archive order, named without the `.npy` suffix.
pub fn read_npz(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    npz_from_reader(file).map_err(|e| with_path(e, path))
}

/// Reads every array of an `.npz` archive from any seekable reader.
pub fn npz_from_reader(reader: impl Read + Seek) -> Result<Vec<(String, Tensor)>> {
    let mut archive = zip::ZipArchive::new(reader)
        .map_err(|e| Error::tensor_data(None, format!("not a .npz (zip) archive: {e}")))?;
    let mut arrays = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| Error::tensor_data(None, format!("bad .npz entry {index}: {e}")))?;
        let name = entry.name().trim_end_matches(".npy").to_string();
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(|e| {
            Error::tensor_data(None, format!("cannot read .npz entry '{name}': {e}"))
        })?;
        let tensor = npy_from_bytes(&bytes).map_err(|e| match e {
            Error::TensorData { reason, .. } => {
                Error::tensor_data(None, format!("entry '{name}': {reason}"))
            }
            other => other,
        })?;
        arrays.push((name, tensor));
    }
    Ok(arrays)
}

/// Writes named tensors into an uncompressed `.npz` archive (what `numpy.savez` writes).
pub fn write_npz(path: &Path, tensors: &[(String, Tensor)]) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut archive = zip::ZipWriter::new(file);
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, tensor) in tensors {
        archive
            .start_file(format!("{name}.npy"), options)
            .map_err(|e| Error::tensor_data(Some(path), e.to_string()))?;
        archive
            .write_all(&npy_to_bytes(tensor)?)
            .map_err(|e| Error::io(path, e))?;
    }
    archive
        .finish()
        .map_err(|e| Error::tensor_data(Some(path), e.to_string()))?;
    Ok(())
}

fn with_path(error: Error, path: &Path) -> Error {
    match error {
        Error::TensorData { path: None, reason } => Error::tensor_data(Some(path), reason),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trips_every_dtype() {
        for dtype in DType::ALL {
            let bytes: Vec<u8> = (0..6 * dtype.size_of()).map(|i| (i % 2) as u8).collect();
            let tensor = Tensor::from_le_bytes(dtype, vec![2, 3], &bytes).unwrap();
            let back = npy_from_bytes(&npy_to_bytes(&tensor).unwrap()).unwrap();
            assert_eq!(back, tensor, "{dtype}");
        }
    }

    #[test]
    fn truncated_npy_is_an_error() {
        let tensor = Tensor::from_vec(vec![4], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let bytes = npy_to_bytes(&tensor).unwrap();
        let err = npy_from_bytes(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        assert!(npy_from_bytes(b"garbage").is_err());
    }

    #[test]
    fn npz_round_trips() {
        let dir = std::env::temp_dir().join(format!("tessera-npz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.npz");
        let tensors = vec![
            (
                "x".to_string(),
                Tensor::from_vec(vec![2], vec![1i64, -2]).unwrap(),
            ),
            (
                "mask".to_string(),
                Tensor::from_vec(vec![1, 2], vec![true, false]).unwrap(),
            ),
        ];
        write_npz(&path, &tensors).unwrap();
        assert_eq!(read_npz(&path).unwrap(), tensors);
    }
}
