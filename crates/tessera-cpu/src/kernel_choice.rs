//! Where tract's own kernel choice measured slower on a CPU, the choice Tessera makes instead, as
//! a deployment default of tract's knob: a user's environment variable still decides.
//!
//! tract's AVX-512 VNNI integer products have an 8×8 tile on ymm registers and a 16×16 one on
//! zmm; it takes the wide one only where a probe measures two 512-bit VPDPBUSD per cycle (its
//! authors measured the wide tile 4–11% slower on Intel client cores). On AMD Zen 4 (family 19h,
//! an EPYC 9004) the probe reads one, yet the wide tile ran the larger quantized models faster and
//! the small ones alike (interleaved processes, 1 thread: magika QDQ 5.57–5.75 → 4.96–5.14 ms,
//! ppocr_mobile_cls QDQ 1.39–1.53 → 1.26–1.28, ppocrv4_rec QDQ 19.7–20.6 → 18.6–18.9, minilm QDQ
//! 10.3–10.6 → 9.1–9.5; mtcnn within 1%): it multiplies more pairs per operand it loads. Zen 5
//! was not measured, so it keeps tract's choice.

/// The CPU family of a CPUID leaf 1 `eax` (base family, plus the extended one when the base is
/// 0xF).
#[cfg(any(target_arch = "x86_64", test))]
fn cpu_family(eax: u32) -> u32 {
    let base = (eax >> 8) & 0xf;
    if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    }
}

/// AMD's Zen 4 family.
#[cfg(any(target_arch = "x86_64", test))]
const ZEN_4_FAMILY: u32 = 0x19;

#[cfg(target_arch = "x86_64")]
fn is_amd_zen_4() -> bool {
    use std::arch::x86_64::__cpuid;
    let vendor = __cpuid(0);
    let amd = [vendor.ebx, vendor.edx, vendor.ecx]
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .eq(*b"AuthenticAMD");
    amd && cpu_family(__cpuid(1).eax) == ZEN_4_FAMILY
}

/// Sets tract's kernel knobs for this CPU, once per process, before the first plan is built.
pub fn choose_once() {
    #[cfg(target_arch = "x86_64")]
    {
        static CHOSEN: std::sync::Once = std::sync::Once::new();
        CHOSEN.call_once(|| {
            if std::arch::is_x86_feature_detected!("avx512vnni") && is_amd_zen_4() {
                let knob = "TRACT_AVX512_FMA_UNITS";
                if let Err(e) =
                    tessera_core::tract_onnx::tract_core::knobs::set_config_global(knob, "2")
                {
                    tracing::debug!("{knob} left to tract: {e}");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_families_decode_as_their_vendors_number_them() {
        // EPYC 9005 (Zen 5), EPYC 9004 (Zen 4), Xeon Sapphire Rapids (family 6).
        assert_eq!(cpu_family(0x00b0_0f21), 0x1a);
        assert_eq!(cpu_family(0x00a1_0f11), ZEN_4_FAMILY);
        assert_eq!(cpu_family(0x0008_06f8), 6);
    }
}
