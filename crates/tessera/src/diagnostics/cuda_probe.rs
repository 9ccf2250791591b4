//! Which CUDA libraries this machine has, loaded at run time with `libloading` (no CUDA
//! toolkit needed to build): the driver (`libcuda.so.1`), cuBLAS and NVRTC, with versions.
//! Self-contained on purpose: the cuda backend's own probe can replace [`probe`] later.
//!
//! Every call is one the libraries document as safe before `cuInit` (version queries), plus
//! `cuInit`/`cuDeviceGetCount`, which return an error code without a GPU rather than crash.

use libloading::{Library, Symbol};
use std::os::raw::c_int;

/// One library: which file opened, and its version.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LibraryProbe {
    /// What it is, e.g. `CUDA driver`.
    pub what: String,
    /// The file names tried, in order.
    pub tried: Vec<String>,
    /// The one that opened.
    pub found: Option<String>,
    pub version: Option<String>,
    /// Why it did not open, or why the version query failed.
    pub error: Option<String>,
}

/// The CUDA libraries found, and the GPUs the driver sees.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CudaProbe {
    pub driver: LibraryProbe,
    /// GPUs the driver reports (`None` when the driver did not initialise).
    pub devices: Option<usize>,
    /// `cuInit`'s error code, when it failed.
    pub init_error: Option<i32>,
    pub cublas: LibraryProbe,
    pub nvrtc: LibraryProbe,
}

/// Opens the first library of `names` that loads.
fn open(what: &str, names: &[&str]) -> (LibraryProbe, Option<Library>) {
    let mut probe = LibraryProbe {
        what: what.into(),
        tried: names.iter().map(|s| s.to_string()).collect(),
        found: None,
        version: None,
        error: None,
    };
    let mut last_error = None;
    for name in names {
        // SAFETY: loading runs the library's initialisers; these are NVIDIA's own libraries,
        // which are loaded the same way by every CUDA program.
        match unsafe { Library::new(name) } {
            Ok(lib) => {
                probe.found = Some(name.to_string());
                return (probe, Some(lib));
            }
            Err(e) => last_error = Some(e.to_string()),
        }
    }
    probe.error = last_error;
    (probe, None)
}

/// Probes the driver, cuBLAS and NVRTC.
pub fn probe() -> CudaProbe {
    let (mut driver, lib) = open("CUDA driver", &["libcuda.so.1", "libcuda.so"]);
    let (mut devices, mut init_error) = (None, None);
    if let Some(lib) = &lib {
        // SAFETY: signatures from cuda.h: CUresult cuDriverGetVersion(int*), cuInit(unsigned),
        // cuDeviceGetCount(int*); CUresult is an int enum.
        unsafe {
            let get_version: Result<Symbol<unsafe extern "C" fn(*mut c_int) -> c_int>, _> =
                lib.get(b"cuDriverGetVersion\0");
            match get_version {
                Ok(f) => {
                    let mut v: c_int = 0;
                    let status = f(&mut v);
                    if status == 0 {
                        driver.version = Some(format!("CUDA {}.{}", v / 1000, (v % 1000) / 10));
                    } else {
                        driver.error = Some(format!("cuDriverGetVersion returned {status}"));
                    }
                }
                Err(e) => driver.error = Some(e.to_string()),
            }
            let init: Result<Symbol<unsafe extern "C" fn(u32) -> c_int>, _> = lib.get(b"cuInit\0");
            let count: Result<Symbol<unsafe extern "C" fn(*mut c_int) -> c_int>, _> =
                lib.get(b"cuDeviceGetCount\0");
            if let (Ok(init), Ok(count)) = (init, count) {
                let status = init(0);
                if status == 0 {
                    let mut n: c_int = 0;
                    if count(&mut n) == 0 {
                        devices = Some(n.max(0) as usize);
                    }
                } else {
                    init_error = Some(status);
                }
            }
        }
    }
    let (mut cublas, lib) = open(
        "cuBLAS",
        &[
            "libcublas.so.12",
            "libcublas.so.13",
            "libcublas.so.11",
            "libcublas.so",
        ],
    );
    if let Some(lib) = &lib {
        // SAFETY: cublasStatus_t cublasGetProperty(libraryPropertyType, int*): 0 = major,
        // 1 = minor, 2 = patch; needs no handle.
        unsafe {
            let get: Result<Symbol<unsafe extern "C" fn(c_int, *mut c_int) -> c_int>, _> =
                lib.get(b"cublasGetProperty\0");
            if let Ok(get) = get {
                let mut parts = [0 as c_int; 3];
                let ok = (0..3).all(|k| get(k as c_int, &mut parts[k]) == 0);
                if ok {
                    cublas.version = Some(format!("{}.{}.{}", parts[0], parts[1], parts[2]));
                }
            }
        }
    }
    let (mut nvrtc, lib) = open(
        "NVRTC",
        &[
            "libnvrtc.so.12",
            "libnvrtc.so.13",
            "libnvrtc.so.11.2",
            "libnvrtc.so",
        ],
    );
    if let Some(lib) = &lib {
        // SAFETY: nvrtcResult nvrtcVersion(int* major, int* minor).
        unsafe {
            let get: Result<Symbol<unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int>, _> =
                lib.get(b"nvrtcVersion\0");
            if let Ok(get) = get {
                let (mut major, mut minor) = (0 as c_int, 0 as c_int);
                if get(&mut major, &mut minor) == 0 {
                    nvrtc.version = Some(format!("{major}.{minor}"));
                }
            }
        }
    }
    CudaProbe {
        driver,
        devices,
        init_error,
        cublas,
        nvrtc,
    }
}

impl CudaProbe {
    /// What is missing for CUDA, with what to install (empty when nothing is).
    pub fn missing(&self) -> Vec<String> {
        let mut missing = vec![];
        if self.driver.found.is_none() {
            missing.push(
                "no CUDA driver (libcuda.so.1): install the NVIDIA driver; in a container, run it \
                 with the NVIDIA container toolkit (--gpus all)"
                    .to_string(),
            );
        } else if self.devices == Some(0) || self.init_error.is_some() {
            missing.push(format!(
                "the CUDA driver sees no GPU{}",
                self.init_error
                    .map(|e| format!(" (cuInit returned {e})"))
                    .unwrap_or_default()
            ));
        }
        if self.cublas.found.is_none() {
            missing.push(
                "no cuBLAS: install the CUDA toolkit, or `pip install nvidia-cublas-cu12` and add \
                 its lib folder to LD_LIBRARY_PATH"
                    .to_string(),
            );
        }
        if self.nvrtc.found.is_none() {
            missing.push(
                "no NVRTC: install the CUDA toolkit, or `pip install nvidia-cuda-nvrtc-cu12` and \
                 add its lib folder to LD_LIBRARY_PATH"
                    .to_string(),
            );
        }
        missing
    }
}
