//! `tessera doctor`: one report of what this machine offers each backend, and for every
//! backend that cannot run here, the reason and what to install.

use super::cuda_probe::{self, CudaProbe};
use crate::{Backend, BackendStatus};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One CPU feature and whether this CPU has it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CpuFeature {
    pub name: String,
    pub present: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CpuReport {
    pub model: String,
    pub arch: String,
    /// SIMD features tract's kernels select on (x86_64: AVX2/FMA/AVX-512; aarch64: NEON...).
    pub features: Vec<CpuFeature>,
    /// The kernel families tract picked at run time.
    pub tract_kernels: Vec<String>,
    /// Worker threads the cpu backend uses by default.
    pub threads: usize,
}

/// One Vulkan driver manifest (ICD) and whether the library it names is installed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VulkanDriver {
    pub manifest: String,
    pub library: String,
    pub library_found: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct VulkanReport {
    /// Where the Vulkan loader (`libvulkan.so.1`) is installed.
    pub loader: Option<String>,
    pub drivers: Vec<VulkanDriver>,
}

/// One backend: whether it runs here, why not, and what to install.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackendLine {
    pub backend: String,
    pub compiled_in: bool,
    pub available: bool,
    /// A software device only (lavapipe): correct, slower than cpu.
    pub software_only: bool,
    /// What the backend says: its devices or the one-line reason it is unavailable.
    pub detail: String,
    /// What to install or change to use it (`None` when it is usable).
    pub fix: Option<String>,
}

/// The whole environment report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DoctorReport {
    pub tessera: String,
    pub os: String,
    pub cpu: CpuReport,
    pub vulkan: VulkanReport,
    /// Adapters the wgpu backend found (empty when none, or when not compiled in).
    pub wgpu_adapters: Vec<String>,
    pub cuda: CudaProbe,
    pub compiled_in: Vec<String>,
    pub backends: Vec<BackendLine>,
    /// What `--backend auto` picks, and why.
    pub auto: String,
}

/// Gathers the report (probes Vulkan/wgpu and the CUDA libraries: takes up to a second).
pub fn doctor() -> DoctorReport {
    let statuses = crate::backends();
    let cpu_status = crate::backend_status(Backend::Cpu);
    let cuda = cuda_probe::probe();
    let vulkan = vulkan();
    let wgpu_status = statuses.iter().find(|s| s.backend == Backend::Wgpu);
    let wgpu_adapters = wgpu_status
        .filter(|s| s.available)
        .map(|s| s.devices.clone())
        .unwrap_or_default();
    let backends = statuses
        .iter()
        .map(|s| backend_line(s, &cuda, &vulkan))
        .collect();
    DoctorReport {
        tessera: env!("CARGO_PKG_VERSION").to_string(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        cpu: CpuReport {
            model: cpu_status.devices.first().cloned().unwrap_or_default(),
            arch: std::env::consts::ARCH.to_string(),
            features: cpu_features(),
            tract_kernels: tract_kernels(&cpu_status.detail),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        vulkan,
        wgpu_adapters,
        cuda,
        compiled_in: statuses
            .iter()
            .filter(|s| s.compiled_in)
            .map(|s| s.backend.to_string())
            .collect(),
        backends,
        auto: match crate::resolve_backend(Backend::Auto) {
            Ok((_, why)) => why,
            Err(e) => e.to_string(),
        },
    }
}

/// The features tract's kernels are chosen by, as this CPU reports them.
pub fn cpu_features() -> Vec<CpuFeature> {
    #[allow(unused_mut)]
    let mut features: Vec<(&str, bool)> = vec![];
    #[cfg(target_arch = "x86_64")]
    {
        features = vec![
            ("sse4.1", std::arch::is_x86_feature_detected!("sse4.1")),
            ("avx", std::arch::is_x86_feature_detected!("avx")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("f16c", std::arch::is_x86_feature_detected!("f16c")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
            (
                "avx512vnni",
                std::arch::is_x86_feature_detected!("avx512vnni"),
            ),
        ];
    }
    #[cfg(target_arch = "aarch64")]
    {
        features = vec![
            ("neon", std::arch::is_aarch64_feature_detected!("neon")),
            ("fp16", std::arch::is_aarch64_feature_detected!("fp16")),
            (
                "dotprod",
                std::arch::is_aarch64_feature_detected!("dotprod"),
            ),
            ("i8mm", std::arch::is_aarch64_feature_detected!("i8mm")),
        ];
    }
    features
        .into_iter()
        .map(|(name, present)| CpuFeature {
            name: name.into(),
            present,
        })
        .collect()
}

/// `tract kernels: a,b; 2 thread(s)` → `[a, b]`.
fn tract_kernels(detail: &str) -> Vec<String> {
    detail
        .strip_prefix("tract kernels: ")
        .and_then(|rest| rest.split(';').next())
        .map(|list| {
            list.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Where Vulkan driver manifests are installed, and where libraries are looked for.
const ICD_DIRS: [&str; 2] = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"];
const LIBRARY_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

fn find_library(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        return path.exists().then(|| path.to_path_buf());
    }
    LIBRARY_DIRS
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.exists())
}

/// The Vulkan loader and every driver manifest, with whether its library is installed.
pub fn vulkan() -> VulkanReport {
    let mut manifests: Vec<PathBuf> = ICD_DIRS
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    manifests.sort();
    let drivers = manifests
        .into_iter()
        .map(|manifest| {
            let library = std::fs::read_to_string(&manifest)
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|json| json["ICD"]["library_path"].as_str().map(str::to_string))
                .unwrap_or_default();
            VulkanDriver {
                manifest: manifest.display().to_string(),
                library_found: !library.is_empty() && find_library(&library).is_some(),
                library,
            }
        })
        .collect();
    VulkanReport {
        loader: find_library("libvulkan.so.1").map(|p| p.display().to_string()),
        drivers,
    }
}

fn backend_line(status: &BackendStatus, cuda: &CudaProbe, vulkan: &VulkanReport) -> BackendLine {
    let fix = if !status.compiled_in {
        let mut fix = format!(
            "rebuild with the `{}` cargo feature of the tessera crate",
            status.backend
        );
        if status.backend == Backend::Cuda {
            let missing = cuda.missing();
            if !missing.is_empty() {
                let _ = write!(fix, "; this machine also lacks: {}", missing.join("; "));
            }
        }
        Some(fix)
    } else if !status.available {
        Some(match status.backend {
            Backend::Wgpu if vulkan.drivers.is_empty() => {
                "install a Vulkan driver: your GPU's, or Mesa's lavapipe (Debian/Ubuntu: apt-get install mesa-vulkan-drivers)".into()
            }
            Backend::Wgpu if vulkan.loader.is_none() => {
                "install the Vulkan loader (Debian/Ubuntu: apt-get install libvulkan1)".into()
            }
            Backend::Cuda => cuda.missing().join("; "),
            _ => status.detail.clone(),
        })
    } else if status.software_only {
        Some("only a software device (e.g. lavapipe): results are right but slower than cpu; install your GPU's Vulkan driver for speed".into())
    } else {
        None
    };
    BackendLine {
        backend: status.backend.to_string(),
        compiled_in: status.compiled_in,
        available: status.available,
        software_only: status.software_only,
        detail: status.detail.clone(),
        fix,
    }
}

impl DoctorReport {
    /// The report as text, one finding per line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let yes = |b: bool| if b { "yes" } else { "no" };
        let _ = writeln!(out, "tessera {} on {}", self.tessera, self.os);
        let _ = writeln!(out, "cpu: {}", self.cpu.model);
        let features: Vec<String> = self
            .cpu
            .features
            .iter()
            .map(|f| format!("{} {}", f.name, yes(f.present)))
            .collect();
        let _ = writeln!(out, "  features: {}", features.join(", "));
        let _ = writeln!(
            out,
            "  tract kernels: {}",
            self.cpu.tract_kernels.join(", ")
        );
        let _ = writeln!(out, "  threads: {}", self.cpu.threads);
        let _ = writeln!(out, "vulkan:");
        let _ = writeln!(
            out,
            "  loader: {}",
            self.vulkan
                .loader
                .as_deref()
                .unwrap_or("libvulkan.so.1 not found")
        );
        if self.vulkan.drivers.is_empty() {
            let _ = writeln!(out, "  drivers: none installed");
        }
        for d in &self.vulkan.drivers {
            let _ = writeln!(
                out,
                "  driver: {} -> {} ({})",
                d.manifest,
                d.library,
                if d.library_found {
                    "installed"
                } else {
                    "NOT installed"
                }
            );
        }
        let _ = writeln!(out, "wgpu adapters:");
        if self.wgpu_adapters.is_empty() {
            let _ = writeln!(out, "  none");
        }
        for a in &self.wgpu_adapters {
            let _ = writeln!(out, "  {a}");
        }
        let _ = writeln!(out, "cuda:");
        for lib in [&self.cuda.driver, &self.cuda.cublas, &self.cuda.nvrtc] {
            let _ = match (&lib.found, &lib.version) {
                (Some(file), Some(v)) => writeln!(out, "  {}: {file}, version {v}", lib.what),
                (Some(file), None) => writeln!(out, "  {}: {file}, version unknown", lib.what),
                (None, _) => writeln!(
                    out,
                    "  {}: not found (tried {})",
                    lib.what,
                    lib.tried.join(", ")
                ),
            };
        }
        if let Some(n) = self.cuda.devices {
            let _ = writeln!(out, "  GPUs the driver sees: {n}");
        }
        let _ = writeln!(out, "compiled-in backends: {}", self.compiled_in.join(", "));
        let _ = writeln!(out, "backends:");
        for b in &self.backends {
            let state = match (b.available, b.software_only) {
                (true, false) => "available",
                (true, true) => "available (software only)",
                (false, _) => "unavailable",
            };
            let _ = writeln!(out, "  {:<5} {state}: {}", b.backend, b.detail);
            if let Some(fix) = &b.fix {
                let _ = writeln!(out, "        fix: {fix}");
            }
        }
        let _ = writeln!(out, "auto: {}", self.auto);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tract_kernel_list_is_parsed() {
        assert_eq!(
            tract_kernels("tract kernels: generic,fma; 2 thread(s) by default"),
            vec!["generic".to_string(), "fma".to_string()]
        );
        assert!(tract_kernels("something else").is_empty());
    }
}
