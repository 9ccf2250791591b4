//! Drives the real `tessera` binary the way a user would: exit codes, messages, files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// The shared test data: `$TESSERA_SHARED`, else `../shared` beside the repository.
fn shared() -> PathBuf {
    std::env::var_os("TESSERA_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("..").join("shared"))
}

fn example() -> PathBuf {
    repo().join("examples").join("text-orientation")
}

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("spawn tessera")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A failure must be an error message and exit code 1, never a panic.
fn assert_clean_failure(output: &Output, needle: &str) {
    let (stdout, stderr) = text(output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains(needle), "stderr lacks '{needle}': {stderr}");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
}

#[test]
fn readme_main_job_runs_the_example_on_cpu() {
    let input = format!(
        "x={}",
        example().join("test_data_set_0/input_0.pb").display()
    );
    let model = example().join("model.onnx");
    let out_dir = temp_dir("run");
    let output = tessera(&[
        "run",
        model.to_str().unwrap(),
        "--input",
        &input,
        "--output",
        out_dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("backend: cpu"), "{stdout}");
    assert!(
        stdout.contains("output 'softmax_0.tmp_0': float32[1, 2]"),
        "{stdout}"
    );
    // The saved output equals the reference within tolerance.
    let saved = tessera::npy::read_npy(&out_dir.join("softmax_0.tmp_0.npy")).unwrap();
    let (_, expected) =
        tessera::onnx_pb::read_pb(&example().join("test_data_set_0/output_0.pb")).unwrap();
    assert!(
        tessera::check::compare("y", &saved, &expected, tessera::check::Tolerance::MODELS).passed
    );
}

#[test]
fn run_reads_inputs_from_an_npz() {
    let dir = temp_dir("npz");
    let (_, x) = tessera::onnx_pb::read_pb(&example().join("test_data_set_0/input_0.pb")).unwrap();
    let npz = dir.join("inputs.npz");
    tessera::npy::write_npz(&npz, &[("x".to_string(), x)]).unwrap();
    let output = tessera(&[
        "run",
        example().join("model.onnx").to_str().unwrap(),
        "--input",
        npz.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("float32[1, 3, 48, 192] (from ") && stdout.contains("inputs.npz:x"),
        "{stdout}"
    );
    assert!(stdout.contains("[0.576151, 0.423849]"), "{stdout}");
}

#[test]
fn run_with_random_inputs_is_seeded() {
    let model = example().join("model.onnx");
    let args = [
        "run",
        model.to_str().unwrap(),
        "--dim",
        "p2o.DynamicDimension.1=48",
        "--dim",
        "p2o.DynamicDimension.2=96",
        "--seed",
        "7",
    ];
    let first = text(&tessera(&args)).0;
    let second = text(&tessera(&args)).0;
    assert!(
        first.contains("float32[1, 3, 48, 96] (random, seed 7)"),
        "{first}"
    );
    let outputs = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with("output"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(outputs(&first), outputs(&second));
}

/// `--dim` sizes random inputs: a size past the documented limit, or one whose shape product
/// overflows, is an error naming the input before anything is allocated (10^12 used to abort).
#[test]
fn huge_dims_for_random_inputs_are_clear_errors() {
    let model = example().join("model.onnx");
    let model = model.to_str().unwrap();
    for dims in [
        &["p2o.DynamicDimension.0=1000000000000"][..],
        &[
            "p2o.DynamicDimension.1=4294967296",
            "p2o.DynamicDimension.2=4294967296",
        ][..],
        &["p2o.DynamicDimension.0=18446744073709551615"][..],
    ] {
        let mut args = vec!["run", model];
        for dim in dims {
            args.extend(["--dim", *dim]);
        }
        let output = tessera(&args);
        assert_clean_failure(&output, "input 'x'");
        assert_clean_failure(&output, "the limit for generated inputs");
    }
    // Also for inspect, which builds its inputs the same way.
    let output = tessera(&[
        "inspect",
        model,
        "--backend",
        "cpu",
        "--dim",
        "p2o.DynamicDimension.0=1000000000000",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(!stderr.contains("panicked"), "{stdout}{stderr}");
}

#[test]
fn check_passes_on_reference_data_and_fails_on_altered_data() {
    let output = tessera(&["check", example().to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("max abs err")
            && stdout.contains("pass")
            && stdout.contains("1 of 1 data set(s) pass"),
        "{stdout}"
    );

    // Same model, expected output altered: check must fail with exit code 1.
    let dir = temp_dir("check");
    std::fs::copy(example().join("model.onnx"), dir.join("model.onnx")).unwrap();
    std::fs::create_dir_all(dir.join("test_data_set_0")).unwrap();
    std::fs::copy(
        example().join("test_data_set_0/input_0.pb"),
        dir.join("test_data_set_0/input_0.pb"),
    )
    .unwrap();
    let (name, expected) =
        tessera::onnx_pb::read_pb(&example().join("test_data_set_0/output_0.pb")).unwrap();
    let shifted: Vec<f32> = expected
        .as_slice::<f32>()
        .unwrap()
        .iter()
        .map(|v| v + 0.01)
        .collect();
    let altered = tessera::Tensor::from_vec(expected.shape().to_vec(), shifted).unwrap();
    tessera::onnx_pb::write_pb(&dir.join("test_data_set_0/output_0.pb"), &name, &altered).unwrap();
    let output = tessera(&["check", dir.to_str().unwrap()]);
    let (stdout, _) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    // A loose enough tolerance accepts it.
    let output = tessera(&["check", dir.to_str().unwrap(), "--atol", "0.02"]);
    assert!(output.status.success(), "{}", text(&output).0);
}

#[test]
fn malformed_models_are_clear_errors() {
    let dir = temp_dir("bad");
    let model = std::fs::read(example().join("model.onnx")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.onnx", vec![]),
        (
            "random.onnx",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
        ),
        ("truncated.onnx", model[..model.len() / 3].to_vec()),
    ];
    for (file, bytes) in cases {
        let path = dir.join(file);
        std::fs::write(&path, bytes).unwrap();
        assert_clean_failure(&tessera(&["run", path.to_str().unwrap()]), "error:");
    }
    assert_clean_failure(
        &tessera(&["run", "does/not/exist.onnx"]),
        "does/not/exist.onnx",
    );
}

#[test]
fn wrong_inputs_name_what_the_model_expects() {
    let model = example().join("model.onnx");
    let model = model.to_str().unwrap();
    let dir = temp_dir("inputs");
    let wrong_dtype = dir.join("ids.npy");
    tessera::npy::write_npy(
        &wrong_dtype,
        &tessera::Tensor::from_vec(vec![1, 3, 48, 192], vec![0i64; 3 * 48 * 192]).unwrap(),
    )
    .unwrap();
    let wrong_rank = dir.join("flat.npy");
    tessera::npy::write_npy(
        &wrong_rank,
        &tessera::Tensor::from_vec(vec![3 * 48], vec![0f32; 3 * 48]).unwrap(),
    )
    .unwrap();
    let wrong_dim = dir.join("four_channels.npy");
    tessera::npy::write_npy(
        &wrong_dim,
        &tessera::Tensor::from_vec(vec![1, 4, 8, 8], vec![0f32; 256]).unwrap(),
    )
    .unwrap();
    let expects =
        "float32[p2o.DynamicDimension.0, 3, p2o.DynamicDimension.1, p2o.DynamicDimension.2]";
    for (file, needle) in [
        (&wrong_dtype, "wrong dtype int64"),
        (&wrong_rank, "wrong rank 1"),
        (&wrong_dim, "dim 1 is 4, not 3"),
    ] {
        let output = tessera(&["run", model, "--input", &format!("x={}", file.display())]);
        assert_clean_failure(&output, needle);
        assert_clean_failure(&output, expects);
    }
    assert_clean_failure(
        &tessera(&["run", model, "--input", "y=whatever.npy"]),
        "no such input",
    );
}

#[test]
fn unsupported_ops_are_named() {
    let model = shared().join("onnx-tests/node/test_image_decoder_decode_bmp_rgb/model.onnx");
    assert_clean_failure(
        &tessera(&["run", model.to_str().unwrap()]),
        "unsupported operator(s): ImageDecoder",
    );
    let output = tessera(&["inspect", model.to_str().unwrap()]);
    assert!(
        text(&output).0.contains("cpu   cannot run: ImageDecoder"),
        "{}",
        text(&output).0
    );
}

#[test]
fn unavailable_backends_say_why_and_list_alternatives() {
    let model = example().join("model.onnx");
    if let Some(reason) = cuda_unavailable_reason() {
        let output = tessera(&["run", model.to_str().unwrap(), "--backend", "cuda"]);
        assert_clean_failure(
            &output,
            &format!("backend 'cuda' is not available: {reason}"),
        );
        assert_clean_failure(&output, "Available backends: wgpu, cpu");
    }
    // wgpu only has lavapipe here (a CPU emulating a GPU): auto says so and picks cpu.
    let output = tessera(&["run", model.to_str().unwrap(), "--backend", "auto"]);
    let (stdout, _) = text(&output);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("auto picked cpu") && stdout.contains("software only"),
        "{stdout}"
    );
}

#[test]
fn usage_errors_exit_with_2() {
    assert_eq!(tessera(&["run"]).status.code(), Some(2));
    assert_eq!(
        tessera(&["run", "m.onnx", "--backend", "tpu"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        tessera(&["run", "m.onnx", "--threads", "0"]).status.code(),
        Some(2)
    );
}

#[test]
fn devices_lists_every_backend() {
    let output = tessera(&["devices", "--json"]);
    assert!(output.status.success());
    let statuses: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let statuses = statuses.as_array().unwrap();
    let names: Vec<&str> = statuses
        .iter()
        .map(|s| s["backend"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cuda", "wgpu", "cpu"]);
    let cuda = &statuses[0];
    assert_eq!(
        cuda["compiled_in"], true,
        "the CLI is built with cuda: {cuda}"
    );
    let wgpu = &statuses[1];
    assert_eq!(wgpu["compiled_in"], true);
    assert!(
        wgpu["devices"][0].as_str().unwrap().contains("Vulkan"),
        "lavapipe is listed: {wgpu}"
    );
    let cpu = &statuses[2];
    assert_eq!(cpu["available"], true);
    assert!(cpu["detail"].as_str().unwrap().contains("tract kernels"));
}

#[test]
fn inspect_shows_symbolic_dims_and_ops() {
    let output = tessera(&["inspect", example().join("model.onnx").to_str().unwrap()]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    assert!(
        stdout.contains(
            "x: float32[p2o.DynamicDimension.0, 3, p2o.DynamicDimension.1, p2o.DynamicDimension.2]"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("opset: 9")
            && stdout.contains("Conv")
            && stdout.contains("cpu   runs all 18 op types"),
        "{stdout}"
    );
}

#[test]
fn inspect_says_whether_a_model_is_quantized_in_which_format_and_how_each_backend_runs_it() {
    let node = |name: &str| shared().join(format!("onnx-tests/node/{name}/model.onnx"));
    // The cpu backend runs quantized products on tract's integer kernels where the CPU has
    // dot-product instructions (arm64; x86-64 with VNNI), elsewhere as f32 sums but for
    // unit-stride convolutions and products by constant weights, which x86-64 with AVX2 runs on
    // Tessera's integer kernels.
    #[cfg(target_arch = "x86_64")]
    let (cpu_integer, avx2_kernels) = (
        std::arch::is_x86_feature_detected!("avx512vnni")
            || std::arch::is_x86_feature_detected!("avxvnni"),
        std::arch::is_x86_feature_detected!("avx2"),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (cpu_integer, avx2_kernels) = (true, false);
    let where_paying = "integer kernels where they pay (the rest: float):";
    let qdq_cpu = match (cpu_integer, avx2_kernels) {
        (true, _) => vec![
            "cpu   dequantized, float kernels: Add, BatchNormalization, Div,".to_string(),
            format!("{where_paying} Conv"),
            "integer kernels: MatMul".into(),
        ],
        (false, true) => vec![
            "cpu   dequantized, float kernels: Add, BatchNormalization, Div,".to_string(),
            format!("{where_paying} Conv, MatMul"),
        ],
        (false, false) => {
            vec!["cpu   dequantized, float kernels: Add, BatchNormalization, Conv, Div,".into()]
        }
    };
    let cpu_products = match (cpu_integer, avx2_kernels) {
        (true, _) => "cpu   integer kernels:".to_string(),
        (false, true) => format!("cpu   {where_paying}"),
        (false, false) => "cpu   dequantized, float kernels:".into(),
    };
    let cpu_convs = match (cpu_integer, avx2_kernels) {
        (true, _) => "cpu   integer kernels:".to_string(),
        (false, true) => format!("cpu   {where_paying}"),
        (false, false) => "cpu   dequantized, float kernels:".into(),
    };
    let cases = [
        (
            shared().join("models/ppocr_mobile_cls_qdq_int8/model.onnx"),
            [
                vec!["quantized: yes (QDQ)".to_string()],
                qdq_cpu,
                vec![
                    "wgpu  dequantized, float kernels: Add, BatchNormalization, Conv, Div,".into(),
                ],
            ]
            .concat(),
        ),
        (
            node("test_qlinearconv"),
            vec![
                "quantized: yes (QOperator)".into(),
                format!("{cpu_convs} QLinearConv"),
                "wgpu  integer kernels: QLinearConv".into(),
                "cuda  integer kernels: QLinearConv".into(),
            ],
        ),
        (
            node("test_matmulinteger"),
            vec![
                "quantized: yes (dynamic)".into(),
                format!("{cpu_products} MatMulInteger"),
            ],
        ),
        (
            node("test_dynamicquantizelinear"),
            vec![
                "quantized: yes (dynamic)".into(),
                "cpu   element-wise quantization: DynamicQuantizeLinear".into(),
                "wgpu  element-wise quantization: DynamicQuantizeLinear".into(),
            ],
        ),
        (example().join("model.onnx"), vec!["quantized: no".into()]),
    ];
    for (model, expected) in cases {
        let output = tessera(&["inspect", model.to_str().unwrap()]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        for line in expected {
            assert!(
                stdout.contains(line.as_str()),
                "{}: no '{line}' in\n{stdout}",
                model.display()
            );
        }
    }
    // The same in JSON, per backend.
    let output = tessera(&[
        "inspect",
        node("test_qlinearconv").to_str().unwrap(),
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json["model"]["quantization"]["formats"],
        serde_json::json!(["qoperator"])
    );
    assert_eq!(
        json["backends"]["cpu"]["quantized_ops"]["QLinearConv"],
        match (cpu_integer, avx2_kernels) {
            (true, _) => "integer",
            (false, true) => "integer_where_paying",
            (false, false) => "dequantized",
        }
    );
    assert_eq!(
        json["backends"]["wgpu"]["quantized_ops"]["QLinearConv"],
        "integer"
    );
}

#[test]
fn bench_reports_json() {
    let input = format!(
        "x={}",
        example().join("test_data_set_0/input_0.pb").display()
    );
    let output = tessera(&[
        "bench",
        example().join("model.onnx").to_str().unwrap(),
        "--input",
        &input,
        "--runs",
        "3",
        "--warmup",
        "1",
        "--threads",
        "1",
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output).1);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["threads"], 1);
    assert_eq!(report["runs"], 3);
    for field in [
        "load_ms",
        "first_run_ms",
        "median_ms",
        "p90_ms",
        "peak_rss_mb",
    ] {
        assert!(
            report[field].as_f64().is_some_and(|v| v > 0.0),
            "{field}: {report}"
        );
    }
    assert!(report["p90_ms"].as_f64() >= report["median_ms"].as_f64());
}

#[test]
fn wgpu_runs_checks_and_places_the_example() {
    // Lavapipe in CI: a real Vulkan driver, so this runs every kernel the model needs.
    let dir = example();
    let output = tessera(&["check", dir.to_str().unwrap(), "--backend", "wgpu"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 of 1 data set(s) pass") && stdout.contains("backend: wgpu"),
        "{stdout}"
    );

    let model = dir.join("model.onnx");
    let input = format!("x={}", dir.join("test_data_set_0/input_0.pb").display());
    let output = tessera(&[
        "inspect",
        model.to_str().unwrap(),
        "--backend",
        "wgpu",
        "--input",
        &input,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("0 on the host"), "{stdout}");
    assert!(
        stdout.contains("upload    x") && stdout.contains("graph input/output"),
        "{stdout}"
    );
    assert!(!stdout.contains("FALLBACK"), "{stdout}");
    assert!(stdout.contains("device memory:"), "{stdout}");

    let output = tessera(&[
        "bench",
        model.to_str().unwrap(),
        "--backend",
        "wgpu",
        "--input",
        &input,
        "--runs",
        "2",
        "--json",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let memory = &report["device_memory"];
    let (arena, peak) = (
        memory["arena"].as_f64().unwrap(),
        memory["peak_live"].as_f64().unwrap(),
    );
    assert!(peak > 0.0 && arena <= 1.5 * peak, "{memory}");
    assert_eq!(report["transfers"]["fallback_bytes"], 0);
}

#[test]
fn compare_agrees_across_backends_and_names_fallback_needs() {
    let dir = example();
    let output = tessera(&["compare", dir.to_str().unwrap(), "--backends", "cpu,wgpu"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("all backends agree") && stdout.contains("max abs diff"),
        "{stdout}"
    );

    // Det has no wgpu kernel: strict placement refuses and names it; inspect shows the
    // fallback placement when asked.
    let det = shared().join("onnx-tests/node/test_det_nd");
    let output = tessera(&[
        "run",
        det.join("model.onnx").to_str().unwrap(),
        "--backend",
        "wgpu",
    ]);
    assert_clean_failure(&output, "the wgpu backend cannot run this model");
    let output = tessera(&[
        "inspect",
        det.join("model.onnx").to_str().unwrap(),
        "--backend",
        "wgpu",
        "--allow-fallback",
        "--input",
        &format!("x={}", det.join("test_data_set_0/input_0.pb").display()),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("HOST ("), "{stdout}");
}

/// Why `tessera devices --json` says cuda is unavailable here, or `None` on a machine with a
/// usable CUDA device (printed: the no-GPU path cannot be checked there).
fn cuda_unavailable_reason() -> Option<String> {
    let output = tessera(&["devices", "--json"]);
    assert!(output.status.success());
    let statuses: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let cuda = statuses
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["backend"] == "cuda")
        .expect("devices lists cuda")
        .clone();
    if cuda["available"] == true {
        println!(
            "a CUDA device is usable here: the no-GPU messages are not checked on this machine"
        );
        return None;
    }
    Some(cuda["detail"].as_str().unwrap().to_string())
}

#[test]
fn cuda_without_a_gpu_says_why_and_never_falls_back() {
    let Some(reason) = cuda_unavailable_reason() else {
        return;
    };
    // The reason names what is missing, in the words the probe uses.
    assert!(
        [
            "libcuda.so.1 not found",
            "no CUDA device",
            "driver too old",
            "libnvrtc",
            "libcublas",
            "CUDA driver"
        ]
        .iter()
        .any(|known| reason.contains(known)),
        "{reason}"
    );
    let (stdout, _) = text(&tessera(&["devices"]));
    assert!(
        stdout.contains(&format!("cuda  unavailable: {reason}")),
        "{stdout}"
    );
    let model = example().join("model.onnx");
    let input = format!(
        "x={}",
        example().join("test_data_set_0/input_0.pb").display()
    );
    let run = tessera(&[
        "run",
        model.to_str().unwrap(),
        "--input",
        &input,
        "--backend",
        "cuda",
    ]);
    assert_clean_failure(&run, &format!("backend 'cuda' is not available: {reason}"));
    let (stdout, _) = text(&run);
    assert!(
        !stdout.contains("backend:"),
        "no fallback to another backend: {stdout}"
    );
    let check = tessera(&["check", example().to_str().unwrap(), "--backend", "cuda"]);
    assert_clean_failure(
        &check,
        &format!("backend 'cuda' is not available: {reason}"),
    );
    assert!(
        !text(&check).0.contains("pass"),
        "check did not run elsewhere"
    );
}

/// The cpu path touches no GPU driver: `run` and `bench` on cpu never load the Vulkan loader
/// or libcuda (glibc's loader lists every library it opens under `LD_DEBUG=libs`).
#[test]
fn cpu_runs_load_no_gpu_driver() {
    let model = example().join("model.onnx");
    let input = format!(
        "x={}",
        example().join("test_data_set_0/input_0.pb").display()
    );
    for args in [
        vec!["run", model.to_str().unwrap(), "--input", &input],
        vec!["run", model.to_str().unwrap(), "--backend", "cpu"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(&args)
            .env("LD_DEBUG", "libs")
            .output()
            .expect("spawn tessera");
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{args:?}: {stdout}\n{stderr}");
        // The loader's own log proves it is watching (libc is always searched for).
        assert!(stderr.contains("libc.so"), "LD_DEBUG gave no log: {stderr}");
        for driver in ["libvulkan", "libcuda", "libnvrtc", "libcublas"] {
            assert!(
                !stderr.contains(driver),
                "{args:?} on cpu loaded {driver}: {}",
                stderr
                    .lines()
                    .filter(|l| l.contains(driver))
                    .take(3)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}
