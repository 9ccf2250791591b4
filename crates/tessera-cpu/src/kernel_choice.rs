//! Where tract's own kernel choice measured slower on a CPU, the choice Tessera makes instead, as
//! a deployment default of tract's knob: a user's environment variable still decides.
//!
//! Convolutions tract runs itself (those Tessera's ops do not take: few output positions or
//! channels) gather their inputs lazily, one panel of the product's columns at a time, when the
//! kernel has 6 taps or more. The last panel of a product whose columns are not a multiple of the
//! kernel's width is left holding whatever its scratch buffer held in the unused lanes, and the
//! kernel multiplies those before dropping the results; old bytes read as subnormal floats are
//! the likely cost (tract zeroes the same lanes in its eager path for that reason). Silero's STFT
//! (4 output positions: every panel partial) took 3.4 ms instead of 0.05 in Chromium on a fresh
//! page.
//! Tessera has tract gather eagerly (a buffer whose unused lanes it zeroes) unless the gathered
//! matrix would be large (tract's own size rule: 1 MiB in wasm, 4 MiB natively), where lazy
//! gathering saves memory and only the last of many panels is partial, or the weights fit one
//! row panel of tract's kernel (its rule: eager would gather as much; such convolutions, of a
//! few output channels, still gather lazily).
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
    static CHOSEN: std::sync::Once = std::sync::Once::new();
    CHOSEN.call_once(|| {
        // Lazy gathering by kernel size never: by the gathered matrix's size only (above).
        set_default("TRACT_LAZY_IM2COL_MIN_KERNEL", &usize::MAX.to_string());
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512vnni") && is_amd_zen_4() {
            set_default("TRACT_AVX512_FMA_UNITS", "2");
        }
    });
}

/// `value` as the process's default for tract's `knob`, below the user's environment.
fn set_default(knob: &str, value: &str) {
    if let Err(e) = tessera_core::tract_onnx::tract_core::knobs::set_config_global(knob, value) {
        tracing::debug!("{knob} left to tract: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx_test_graph::*;
    use tessera_core::model::specialize::Lowering;
    use tessera_core::{Model, Tensor as TesseraTensor};

    /// The ops of `model`'s plan after Tessera's cpu passes and tract's codegen.
    fn planned_ops(model: &[u8], input_shape: &[usize]) -> Vec<String> {
        let model = Model::from_bytes(model).unwrap();
        let len = input_shape.iter().product();
        let input = TesseraTensor::from_vec(input_shape.to_vec(), vec![0.5f32; len]).unwrap();
        let mut typed = model
            .lower_for(&[input], None, Lowering::default())
            .unwrap()
            .typed;
        crate::ops::use_cpu_ops(&mut typed).unwrap();
        tessera_core::model::optimizer::codegen(&mut typed).unwrap();
        typed
            .nodes()
            .iter()
            .map(|n| n.op.name().to_string())
            .collect()
    }

    #[test]
    fn convolutions_with_few_positions_gather_their_inputs_eagerly() {
        choose_once();
        // Silero's STFT: 258 filters of 256 taps, stride 128, 4 output positions; too narrow for
        // Tessera's own convolution, so tract runs it.
        let stft = model_bytes(
            vec![node(
                "Conv",
                &["x", "w"],
                "y",
                vec![ints("strides", &[128])],
            )],
            vec![f32s("w", &[258, 1, 256], &vec![0.25; 258 * 256])],
            vec![value("x", &[1, 1, 640])],
            vec![value("y", &[1, 258, 4])],
        );
        let ops = planned_ops(&stft, &[1, 1, 640]);
        assert!(ops.iter().any(|op| op == "Im2col"), "{ops:?}");
        assert!(!ops.iter().any(|op| op.contains("Lazy")), "{ops:?}");
    }

    #[test]
    fn cpu_families_decode_as_their_vendors_number_them() {
        // EPYC 9005 (Zen 5), EPYC 9004 (Zen 4), Xeon Sapphire Rapids (family 6).
        assert_eq!(cpu_family(0x00b0_0f21), 0x1a);
        assert_eq!(cpu_family(0x00a1_0f11), ZEN_4_FAMILY);
        assert_eq!(cpu_family(0x0008_06f8), 6);
    }
}
