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
    static PROBED: std::sync::OnceLock<Result<Vec<AdapterSummary>, String>> =
        std::sync::OnceLock::new();
    PROBED.get_or_init(probe).clone()
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
    if cfg!(target_os = "linux") {
        let icds = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"]
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flat_map(|entries| entries.filter_map(|e| e.ok()))
            .count();
        if icds == 0 {
            return "no adapter: no Vulkan driver (ICD) is installed; install your GPU's driver, or \
                    Mesa's software driver lavapipe (Debian/Ubuntu: apt-get install mesa-vulkan-drivers)"
                .into();
        }
        return format!(
            "no adapter: {icds} Vulkan driver manifest(s) found but none opened a device \
             (is the Vulkan loader libvulkan1 installed? does the driver match the GPU?)"
        );
    }
    "no adapter: no Vulkan, Metal or DX12 device was found".into()
}
