//! Finding wgpu adapters, and saying why there are none.

use std::fmt;

/// One adapter as wgpu reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Adapter name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// Graphics API: Vulkan, Metal, Dx12, Gl, BrowserWebGpu.
    pub api: String,
    /// Integrated GPU, discrete GPU, virtual GPU, CPU (software) or other.
    pub device_type: String,
    /// Driver name and version, when reported.
    pub driver: String,
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {}", self.name, self.api, self.device_type)?;
        if !self.driver.is_empty() {
            write!(f, ", driver {}", self.driver)?;
        }
        f.write_str(")")
    }
}

/// Every adapter wgpu can see on the compute-capable APIs (Vulkan, Metal, DX12, browser
/// WebGPU); panics inside wgpu become an `Err`.
/// Probed once per process: drivers can be slow to open, and some print to stderr each time.
pub fn adapters() -> Result<Vec<AdapterSummary>, String> {
    // Browsers have one adapter, found when the context is opened (asynchronously).
    #[cfg(target_arch = "wasm32")]
    return match crate::context::opened_context() {
        Some(Ok(ctx)) => Ok(vec![ctx.adapter.clone()]),
        Some(Err(reason)) => Err(reason),
        None => Err("WebGPU was not opened yet: create the session with the async API".into()),
    };
    #[cfg(not(target_arch = "wasm32"))]
    {
        static PROBED: std::sync::OnceLock<Result<Vec<AdapterSummary>, String>> =
            std::sync::OnceLock::new();
        PROBED.get_or_init(probe).clone()
    }
}

/// The process's wgpu instance: one for probing and for opening the device (each instance
/// makes drivers load, and some print to stderr every time).
pub(crate) fn instance() -> &'static wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE.get_or_init(|| {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        // Compute needs Vulkan, Metal, DX12 or WebGPU; probing GL only prints EGL noise.
        descriptor.backends &= wgpu::Backends::PRIMARY;
        wgpu::Instance::new(descriptor)
    })
}

#[cfg(not(target_arch = "wasm32"))]
fn probe() -> Result<Vec<AdapterSummary>, String> {
    let found = std::panic::catch_unwind(|| {
        pollster::block_on(instance().enumerate_adapters(wgpu::Backends::PRIMARY))
    })
    .map_err(|_| "probing for wgpu adapters failed inside wgpu (a driver crashed?)".to_string())?;
    Ok(found
        .iter()
        .map(|adapter| {
            let info = adapter.get_info();
            AdapterSummary {
                name: info.name,
                api: format!("{:?}", info.backend),
                device_type: format!("{:?}", info.device_type),
                driver: format!("{} {}", info.driver, info.driver_info)
                    .trim()
                    .to_string(),
            }
        })
        .collect())
}

/// Why no adapter was found, with what to install.
pub fn why_no_adapter() -> String {
    if cfg!(target_arch = "wasm32") {
        return "this JavaScript environment has no WebGPU (navigator.gpu is missing or offers no adapter): use a browser with WebGPU enabled, e.g. Chrome or Edge 113+".into();
    }
    if cfg!(target_os = "linux") {
        return why_no_vulkan_device(&ICD_DIRS, &LIBRARY_DIRS);
    }
    "no adapter: no Vulkan, Metal or DX12 device was found".into()
}

/// Where Vulkan driver manifests (ICDs) are installed.
const ICD_DIRS: [&str; 2] = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"];
/// Where the loader and drivers' libraries are looked for.
const LIBRARY_DIRS: [&str; 6] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

fn library_installed(name: &str, library_dirs: &[&str]) -> bool {
    let path = std::path::Path::new(name);
    if path.is_absolute() {
        return path.exists();
    }
    library_dirs
        .iter()
        .any(|dir| std::path::Path::new(dir).join(name).exists())
}

/// The diagnosis on Linux: no driver manifest, no Vulkan loader, or manifests whose driver
/// library is missing (e.g. a container given the GPU for compute but without the NVIDIA
/// driver's graphics libraries).
fn why_no_vulkan_device(icd_dirs: &[&str], library_dirs: &[&str]) -> String {
    let manifests: Vec<std::path::PathBuf> = icd_dirs
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())))
        .collect();
    if manifests.is_empty() {
        return "no adapter: no Vulkan driver (ICD) is installed; install your GPU's driver, or \
                Mesa's software driver lavapipe (Debian/Ubuntu: apt-get install mesa-vulkan-drivers)"
            .into();
    }
    let mut problems = vec![];
    if !library_installed("libvulkan.so.1", library_dirs) {
        problems.push(
            "the Vulkan loader libvulkan.so.1 is not installed (Debian/Ubuntu: apt-get install libvulkan1)"
                .to_string(),
        );
    }
    for manifest in &manifests {
        let library = std::fs::read_to_string(manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|json| json["ICD"]["library_path"].as_str().map(str::to_string));
        if let Some(library) = library
            && !library_installed(&library, library_dirs)
        {
            let name = manifest
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            let hint = if library.contains("nvidia") {
                " (the NVIDIA driver's graphics libraries; in a container, the NVIDIA container \
                 toolkit mounts them when NVIDIA_DRIVER_CAPABILITIES includes graphics)"
            } else {
                ""
            };
            problems.push(format!(
                "driver manifest {} names {library}, which is not installed{hint}",
                name.unwrap_or_default()
            ));
        }
    }
    if problems.is_empty() {
        return format!(
            "no adapter: {} Vulkan driver manifest(s) found but none opened a device (does the \
             driver match the GPU and the kernel module?)",
            manifests.len()
        );
    }
    format!("no adapter: {}", problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_missing_loader_and_driver_library() {
        let root = std::env::temp_dir().join(format!("tessera-probe-{}", std::process::id()));
        let (icds, libs) = (root.join("icd.d"), root.join("lib"));
        std::fs::create_dir_all(&icds).unwrap();
        std::fs::create_dir_all(&libs).unwrap();
        let (icds_s, libs_s) = (icds.to_str().unwrap(), libs.to_str().unwrap());

        let none = why_no_vulkan_device(&[icds_s], &[libs_s]);
        assert!(
            none.contains("no Vulkan driver (ICD) is installed"),
            "{none}"
        );

        std::fs::write(
            icds.join("nvidia_icd.json"),
            r#"{"file_format_version": "1.0.1", "ICD": {"library_path": "libGLX_nvidia.so.0"}}"#,
        )
        .unwrap();
        let both = why_no_vulkan_device(&[icds_s], &[libs_s]);
        assert!(both.contains("libvulkan.so.1 is not installed"), "{both}");
        assert!(
            both.contains("names libGLX_nvidia.so.0, which is not installed"),
            "{both}"
        );
        assert!(both.contains("NVIDIA_DRIVER_CAPABILITIES"), "{both}");

        std::fs::write(libs.join("libvulkan.so.1"), b"").unwrap();
        std::fs::write(libs.join("libGLX_nvidia.so.0"), b"").unwrap();
        let neither = why_no_vulkan_device(&[icds_s], &[libs_s]);
        assert!(neither.contains("none opened a device"), "{neither}");
        std::fs::remove_dir_all(&root).ok();
    }
}
