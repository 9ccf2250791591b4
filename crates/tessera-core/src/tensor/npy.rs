//! numpy `.npy` and `.npz` files. Headers are read and written by [`super::npy_header`];
//! bodies are raw little-endian elements, decoded by [`TensorData::from_le_bytes`].

use super::npy_header::NpyHeader;
use super::{Tensor, byte_count};
use crate::{DType, Error, Result};
use std::io::{Read, Seek, SeekFrom, Write};
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

/// The `.npy` magic string, then one byte each of major and minor version.
const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Checks that the header length a `.npy` file states fits in the bytes present (version 2 and 3
/// headers state up to 4 GiB) and returns where the header's text lies.
fn check_header_len(bytes: &[u8]) -> Result<std::ops::Range<usize>> {
    let prefix = NPY_MAGIC.len() + 2;
    if bytes.len() < prefix || !bytes.starts_with(NPY_MAGIC) {
        return Err(Error::tensor_data(
            None,
            "bad .npy header: not a .npy file (no \\x93NUMPY magic string)",
        ));
    }
    let (len_bytes, header_len) = match bytes[NPY_MAGIC.len()] {
        1 => (
            2,
            bytes
                .get(prefix..prefix + 2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as u64),
        ),
        _ => (
            4,
            bytes
                .get(prefix..prefix + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64),
        ),
    };
    let header_len = header_len
        .ok_or_else(|| Error::tensor_data(None, "truncated .npy header: no header length"))?;
    let present = (bytes.len() - prefix - len_bytes) as u64;
    if header_len > present {
        return Err(Error::tensor_data(
            None,
            format!(
                "truncated .npy header: it states {header_len} bytes but only {present} follow"
            ),
        ));
    }
    // numpy writes a flat dict holding one tuple: deeper nesting is refused with its reason (a
    // backtracking parser once took minutes on a 262-byte header of open braces).
    let start = prefix + len_bytes;
    let header = &bytes[start..start + header_len as usize];
    let mut depth = 0usize;
    for &b in header {
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_HEADER_NESTING {
            return Err(Error::tensor_data(
                None,
                format!("bad .npy header: brackets nested deeper than {MAX_HEADER_NESTING}"),
            ));
        }
    }
    Ok(start..start + header_len as usize)
}

/// Bracket nesting allowed in a `.npy` header: numpy writes 2, a dict holding the shape tuple
/// (deeper means a structured dtype, which Tessera does not read).
const MAX_HEADER_NESTING: usize = 2;

/// Decodes the bytes of a `.npy` file. Sizes the file states (header length, shape) are checked
/// against the bytes present before anything of that size is allocated.
pub fn npy_from_bytes(bytes: &[u8]) -> Result<Tensor> {
    let header_range = check_header_len(bytes)?;
    let header = NpyHeader::parse(&bytes[header_range.clone()])
        .map_err(|e| Error::tensor_data(None, format!("bad .npy header: {e}")))?;
    let reader = &bytes[header_range.end..];
    let descr = header.descr;
    let dtype = DType::from_numpy_descr(&descr)
        .ok_or_else(|| Error::tensor_data(None, format!("unsupported .npy dtype '{descr}'")))?;
    if header.fortran_order && header.shape.len() > 1 {
        return Err(Error::tensor_data(
            None,
            "Fortran-ordered .npy arrays are not supported: save with numpy.ascontiguousarray",
        ));
    }
    let body_len = byte_count(dtype, &header.shape).ok_or_else(|| {
        Error::tensor_data(
            None,
            format!(
                "the .npy shape {:?} is too large: its size overflows",
                header.shape
            ),
        )
    })?;
    if reader.len() < body_len {
        return Err(Error::tensor_data(
            None,
            format!(
                "truncated .npy body: shape {:?} of {dtype} needs {body_len} bytes, the file has {}",
                header.shape,
                reader.len()
            ),
        ));
    }
    Tensor::from_le_bytes(dtype, header.shape, &reader[..body_len])
}

/// Encodes a tensor as the bytes of a `.npy` file.
pub fn npy_to_bytes(tensor: &Tensor) -> Result<Vec<u8>> {
    let header = NpyHeader {
        descr: tensor.dtype().numpy_descr().to_string(),
        fortran_order: false,
        shape: tensor.shape().to_vec(),
    };
    // Version 1.0 (a 2-byte header length) unless the header is longer than that can say.
    let mut text = header.to_text(NPY_MAGIC.len() + 2 + 2);
    let mut bytes = NPY_MAGIC.to_vec();
    match u16::try_from(text.len()) {
        Ok(len) => {
            bytes.extend([1, 0]);
            bytes.extend(len.to_le_bytes());
        }
        Err(_) => {
            text = header.to_text(NPY_MAGIC.len() + 2 + 4);
            let len = u32::try_from(text.len()).map_err(|_| {
                Error::tensor_data(None, "cannot write a .npy header over 4 GiB".to_string())
            })?;
            bytes.extend([2, 0]);
            bytes.extend(len.to_le_bytes());
        }
    }
    bytes.extend(text.as_bytes());
    bytes.extend(tensor.data().to_le_bytes());
    Ok(bytes)
}

/// Reads every array of an `.npz` archive, in archive order, named without the `.npy` suffix.
pub fn read_npz(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    npz_from_reader(file).map_err(|e| with_path(e, path))
}

/// Reads every array of an `.npz` archive from any seekable reader. The sizes zip entries state
/// are not trusted: each entry is read as far as its data really goes (never past its stated
/// size, and never reserving more than the archive's own length up front).
pub fn npz_from_reader(mut reader: impl Read + Seek) -> Result<Vec<(String, Tensor)>> {
    let archive_len = reader
        .seek(SeekFrom::End(0))
        .and_then(|len| reader.seek(SeekFrom::Start(0)).map(|_| len))
        .map_err(|e| Error::tensor_data(None, format!("cannot read the .npz archive: {e}")))?;
    let mut archive = zip::ZipArchive::new(reader)
        .map_err(|e| Error::tensor_data(None, format!("not a .npz (zip) archive: {e}")))?;
    let mut arrays = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| Error::tensor_data(None, format!("bad .npz entry {index}: {e}")))?;
        let name = entry.name().trim_end_matches(".npy").to_string();
        let stated = entry.size();
        let mut bytes = Vec::with_capacity(stated.min(archive_len) as usize);
        (&mut entry)
            .take(stated)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                Error::tensor_data(None, format!("cannot read .npz entry '{name}': {e}"))
            })?;
        if (bytes.len() as u64) < stated {
            return Err(Error::tensor_data(
                None,
                format!(
                    "entry '{name}' states {stated} bytes but holds only {}",
                    bytes.len()
                ),
            ));
        }
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

    /// A `.npy` file whose header states `shape` for `descr`, followed by `body`.
    fn npy_with_shape(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        let mut header = dict.into_bytes();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(b' ');
        }
        header.push(b'\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header);
        bytes.extend(body);
        bytes
    }

    #[test]
    fn hostile_npy_headers_are_errors() {
        // The helper writes what numpy writes.
        let ok = npy_with_shape("<f4", "(2,)", &[0; 8]);
        assert_eq!(npy_from_bytes(&ok).unwrap().shape(), &[2]);
        // A shape of 10^12 with 4 bytes of body.
        let err = npy_from_bytes(&npy_with_shape("<f4", "(1000000000000,)", &[0; 4])).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        // Shapes whose element or byte count overflows (they used to wrap to a small count).
        for shape in [
            "(4294967296, 4294967296, 16)",
            "(4611686018427387904,)",
            "(1073741824, 1073741824, 0, 7)",
        ] {
            let result = npy_from_bytes(&npy_with_shape("<f8", shape, &[0; 8]));
            if shape.contains(" 0,") {
                assert_eq!(result.unwrap().len(), 0);
            } else {
                let err = result.unwrap_err();
                assert!(err.to_string().contains("too large"), "{shape}: {err}");
            }
        }
        // A version 2 header that states 4 GiB of header in a file of a few bytes.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend(u32::MAX.to_le_bytes());
        v2.extend(b"{'descr': '<f4'}");
        let err = npy_from_bytes(&v2).unwrap_err();
        assert!(err.to_string().contains("4294967295"), "{err}");
        // Cut anywhere, a valid file is an error, never a panic.
        for cut in 0..ok.len() {
            assert!(npy_from_bytes(&ok[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// A zip member that states a size of 2^62 bytes (a zip64 extra field) must not make the
    /// reader reserve that much: it used to call `Vec::with_capacity(entry.size())`.
    #[test]
    fn npz_member_stating_a_huge_size_is_an_error() {
        let npy = npy_to_bytes(&Tensor::from_vec(vec![2], vec![1.0f32, 2.0]).unwrap()).unwrap();
        let zip = zip64_stored("x.npy", &npy, 1 << 62);
        let err = npz_from_reader(std::io::Cursor::new(&zip)).unwrap_err();
        assert!(err.to_string().contains("'x'"), "{err}");
        // The same archive stating the true size reads.
        let zip = zip64_stored("x.npy", &npy, npy.len() as u64);
        assert_eq!(
            npz_from_reader(std::io::Cursor::new(&zip)).unwrap()[0].0,
            "x"
        );
    }

    /// An uncompressed one-member zip whose uncompressed size is `stated`, given in zip64 extra
    /// fields (local and central), the 32-bit fields saying 0xFFFFFFFF.
    fn zip64_stored(name: &str, data: &[u8], stated: u64) -> Vec<u8> {
        let crc = crc32(data);
        let extra = |with_offset: bool| {
            let mut e = Vec::new();
            e.extend(1u16.to_le_bytes());
            e.extend((if with_offset { 24u16 } else { 16u16 }).to_le_bytes());
            e.extend(stated.to_le_bytes());
            e.extend((data.len() as u64).to_le_bytes());
            if with_offset {
                e.extend(0u64.to_le_bytes());
            }
            e
        };
        let mut out = Vec::new();
        // Local file header.
        out.extend(0x04034b50u32.to_le_bytes());
        out.extend(45u16.to_le_bytes()); // version needed
        out.extend(0u16.to_le_bytes()); // flags
        out.extend(0u16.to_le_bytes()); // stored
        out.extend(0u32.to_le_bytes()); // time, date
        out.extend(crc.to_le_bytes());
        out.extend(u32::MAX.to_le_bytes());
        out.extend(u32::MAX.to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        let local_extra = extra(false);
        out.extend((local_extra.len() as u16).to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&local_extra);
        out.extend(data);
        let central_start = out.len();
        // Central directory header.
        out.extend(0x02014b50u32.to_le_bytes());
        out.extend(45u16.to_le_bytes()); // made by
        out.extend(45u16.to_le_bytes()); // needed
        out.extend(0u16.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(crc.to_le_bytes());
        out.extend(u32::MAX.to_le_bytes());
        out.extend(u32::MAX.to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
        let central_extra = extra(true);
        out.extend((central_extra.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes()); // comment length
        out.extend(0u16.to_le_bytes()); // disk
        out.extend(0u16.to_le_bytes()); // internal attributes
        out.extend(0u32.to_le_bytes()); // external attributes
        out.extend(u32::MAX.to_le_bytes()); // offset: in the zip64 field
        out.extend(name.as_bytes());
        out.extend(&central_extra);
        let central_len = out.len() - central_start;
        // End of central directory.
        out.extend(0x06054b50u32.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend((central_len as u32).to_le_bytes());
        out.extend((central_start as u32).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in data {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
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
