//! The diagnostics a user looks at, driven through the real binary: the placement picture
//! (rendered in headless Chromium for every shared real model on cpu and wgpu),
//! `run --check-finite`, `doctor` and `bench --html`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

fn shared() -> PathBuf {
    std::env::var_os("TESSERA_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("..").join("shared"))
}

fn data(name: &str) -> PathBuf {
    repo().join("tests/data/diagnostics").join(name)
}

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("spawn tessera")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-diag-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------- placement picture

/// What a page looks like to a user: its DOM after Chromium parsed it, and a screenshot.
struct Rendered {
    dom: String,
    png: PathBuf,
}

/// Chromium, headless: dumps the DOM and writes a screenshot in one launch.
fn render(page: &Path, width: u32, height: u32) -> Rendered {
    let png = page.with_extension("png");
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={width},{height}"),
            "--dump-dom",
            &url,
        ])
        .output()
        .expect("chromium is installed (scripts/test-diagnostics.sh installs it)");
    assert!(
        output.status.success(),
        "chromium failed on {url}: {}",
        describe(&output)
    );
    Rendered {
        dom: stdout(&output),
        png,
    }
}

/// Pixels of the screenshot: (all, not white, close to `colour`).
fn pixels(png: &Path, colour: [u8; 3]) -> (usize, usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "unexpected PNG colour type {:?}",
        info.color_type
    );
    let (mut all, mut ink, mut matching) = (0, 0, 0);
    for px in buf[..info.buffer_size()].chunks(channels) {
        all += 1;
        if px[..3].iter().any(|&c| c < 245) {
            ink += 1;
        }
        if px[..3]
            .iter()
            .zip(colour)
            .all(|(&a, b)| (a as i32 - b as i32).abs() <= 6)
        {
            matching += 1;
        }
    }
    (all, ink, matching)
}

/// The text of the element with this id (`<span id="step-count">42</span>` → `42`).
fn element_text(dom: &str, id: &str) -> String {
    let key = format!("id=\"{id}\">");
    let start = dom
        .find(&key)
        .unwrap_or_else(|| panic!("no #{id} in the page"))
        + key.len();
    dom[start..start + dom[start..].find('<').unwrap()].to_string()
}

/// Sum of `data-steps` over the drawn step boxes, and how many boxes.
fn drawn_steps(dom: &str) -> (usize, usize) {
    let mut total = 0;
    let mut boxes = 0;
    for part in dom.split("class=\"tessera-step\"").skip(1) {
        let key = "data-steps=\"";
        let at = part.find(key).unwrap() + key.len();
        total += part[at..at + part[at..].find('"').unwrap()]
            .parse::<usize>()
            .unwrap();
        boxes += 1;
    }
    (total, boxes)
}

fn json(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", describe(output));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(output)))
}

/// One page to check: which model, which backend, what the page must show.
struct Case {
    label: String,
    page: PathBuf,
    onnx_nodes: usize,
    /// Plan steps the placement report lists (wgpu), to compare with the page.
    plan_steps: Option<usize>,
    /// The fill colour of boxes that must appear in the screenshot.
    fill: [u8; 3],
}

const CPU_FILL: [u8; 3] = [0xd9, 0xea, 0xd3];
const WGPU_FILL: [u8; 3] = [0xcf, 0xe2, 0xf3];
const FALLBACK_FILL: [u8; 3] = [0xfc, 0xe5, 0xcd];
const UNSUPPORTED_FILL: [u8; 3] = [0xf4, 0xcc, 0xcc];

fn check_page(case: &Case) -> Result<(), String> {
    let shown = render(&case.page, 1400, 1000);
    let dom = &shown.dom;
    let steps: usize = element_text(dom, "step-count").parse().unwrap();
    let nodes: usize = element_text(dom, "onnx-node-count").parse().unwrap();
    let (drawn, boxes) = drawn_steps(dom);
    let mut problems = vec![];
    if nodes != case.onnx_nodes {
        problems.push(format!(
            "page shows {nodes} ONNX nodes, the model has {}",
            case.onnx_nodes
        ));
    }
    if drawn != steps || steps == 0 {
        problems.push(format!("{steps} steps shown but the boxes hold {drawn}"));
    }
    if let Some(expected) = case.plan_steps
        && expected != steps
    {
        problems.push(format!(
            "page shows {steps} steps, the placement report {expected}"
        ));
    }
    let box_count: usize = element_text(dom, "box-count").parse().unwrap();
    if box_count != boxes {
        problems.push(format!("#box-count says {box_count}, {boxes} boxes drawn"));
    }
    let (all, ink, fill) = pixels(&shown.png, case.fill);
    // Not blank, and the boxes (not just the legend swatch) are in the screenshot.
    if ink * 50 < all {
        problems.push(format!("screenshot nearly blank: {ink} of {all} pixels"));
    }
    if fill < 2000 {
        problems.push(format!(
            "only {fill} pixels of the box colour {:?}",
            case.fill
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", case.label, problems.join("; ")))
    }
}

/// Renders the pages two at a time (Chromium takes ~2 s to start) and collects failures.
fn check_pages(cases: &[Case]) -> Vec<String> {
    let mut failures = vec![];
    for pair in cases.chunks(2) {
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = pair
                .iter()
                .map(|c| s.spawn(move || check_page(c)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        failures.extend(results.into_iter().filter_map(Result::err));
    }
    failures
}

fn shared_models() -> Vec<PathBuf> {
    let mut models: Vec<PathBuf> = std::fs::read_dir(shared().join("models"))
        .expect("shared models (set TESSERA_SHARED)")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").exists())
        .collect();
    models.sort();
    models
}

/// The model's ONNX node count and input names, from `inspect --json`.
fn model_facts(model: &Path) -> (usize, Vec<String>) {
    let info = json(&tessera(&["inspect", model.to_str().unwrap(), "--json"]));
    let nodes = info["model"]["op_histogram"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap() as usize)
        .sum();
    let inputs = info["model"]["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    (nodes, inputs)
}

fn onnx_nodes(model: &Path) -> usize {
    model_facts(model).0
}

#[test]
fn placement_pictures_render_in_chromium_for_every_shared_model() {
    let dir = temp_dir("pictures");
    let models = shared_models();
    assert_eq!(models.len(), 20, "expected the 20 shared real models");
    let mut cases = vec![];
    for folder in &models {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let model = folder.join("model.onnx");
        let model_s = model.to_str().unwrap();
        // Inputs from the model's own test data (input_k.pb feeds the k-th input): the shapes
        // and values (sample rates, shape inputs) of its real use.
        let (nodes, input_names) = model_facts(&model);
        let input_args: Vec<String> = input_names
            .iter()
            .enumerate()
            .map(|(k, name)| (name, folder.join(format!("test_data_set_0/input_{k}.pb"))))
            .filter(|(_, file)| file.exists())
            .flat_map(|(name, file)| ["--input".to_string(), format!("{name}={}", file.display())])
            .collect();
        let report = {
            let mut args = vec!["inspect", model_s, "--backend", "wgpu", "--json"];
            args.extend(input_args.iter().map(String::as_str));
            json(&tessera(&args))
        };
        let wgpu_steps = report["placement"]["steps"].as_array().unwrap().len();
        for (backend, fill, steps) in [
            ("cpu", CPU_FILL, None),
            ("wgpu", WGPU_FILL, Some(wgpu_steps)),
        ] {
            let page = dir.join(format!("{name}_{backend}.html"));
            let mut args = vec![
                "inspect",
                model_s,
                "--backend",
                backend,
                "--graph",
                page.to_str().unwrap(),
            ];
            args.extend(input_args.iter().map(String::as_str));
            let out = tessera(&args);
            assert!(
                out.status.success(),
                "{name} on {backend}: {}",
                describe(&out)
            );
            cases.push(Case {
                label: format!("{name} on {backend}"),
                page,
                onnx_nodes: nodes,
                plan_steps: steps,
                fill,
            });
        }
    }
    let failures = check_pages(&cases);
    assert!(
        failures.is_empty(),
        "{} page(s) wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn placement_picture_shows_fallback_and_unsupported_steps() {
    let dir = temp_dir("fallback");
    let model = data("det.onnx");
    let model_s = model.to_str().unwrap();
    let nodes = onnx_nodes(&model);

    // Strict: wgpu refuses Det; the picture is still written, with the step in red.
    let strict = dir.join("det_strict.html");
    let out = tessera(&[
        "inspect",
        model_s,
        "--backend",
        "wgpu",
        "--graph",
        strict.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stdout(&out).contains("Det"), "{}", describe(&out));

    let fallback = dir.join("det_fallback.html");
    let out = tessera(&[
        "inspect",
        model_s,
        "--backend",
        "wgpu",
        "--allow-fallback",
        "--graph",
        fallback.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    let report = json(&tessera(&[
        "inspect",
        model_s,
        "--backend",
        "wgpu",
        "--allow-fallback",
        "--json",
    ]));
    let steps = report["placement"]["steps"].as_array().unwrap().len();
    let copies = report["placement"]["fallback_transfers"]
        .as_array()
        .unwrap();
    let html = std::fs::read_to_string(&fallback).unwrap();
    // Every fallback copy is drawn as an edge with its bytes.
    for copy in copies {
        let label = format!("copy {} B", copy["bytes"]);
        assert!(html.contains(&label), "no edge labelled '{label}'");
    }
    assert_eq!(element_text(&html, "fallback-steps"), "1");
    assert_eq!(element_text(&html, "copy-count"), copies.len().to_string());

    let svg = dir.join("det_fallback.svg");
    let out = tessera(&[
        "inspect",
        model_s,
        "--backend",
        "wgpu",
        "--allow-fallback",
        "--graph",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", describe(&out));

    let cases = [
        Case {
            label: "det strict".into(),
            page: strict,
            onnx_nodes: nodes,
            plan_steps: Some(steps),
            fill: UNSUPPORTED_FILL,
        },
        Case {
            label: "det fallback".into(),
            page: fallback,
            onnx_nodes: nodes,
            plan_steps: Some(steps),
            fill: FALLBACK_FILL,
        },
    ];
    let failures = check_pages(&cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The standalone SVG: Chromium draws it, with the fallback box and the legend.
    let shown = render(&svg, 900, 700);
    let (all, ink, fill) = pixels(&shown.png, FALLBACK_FILL);
    assert!(
        ink * 50 > all,
        "svg screenshot nearly blank: {ink} of {all}"
    );
    assert!(fill > 1000, "svg: only {fill} fallback-coloured pixels");
    assert_eq!(drawn_steps(&shown.dom).0, steps);
}

#[test]
fn graph_needs_an_svg_or_html_file() {
    let out = tessera(&[
        "inspect",
        data("det.onnx").to_str().unwrap(),
        "--graph",
        "/tmp/x.png",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".svg or .html"));
}

// ---------------------------------------------------------------- --check-finite

fn check_finite(backend: &str) -> Output {
    let input = format!("x={}", data("overflow_input.npy").display());
    tessera(&[
        "run",
        data("overflow.onnx").to_str().unwrap(),
        "--backend",
        backend,
        "--input",
        &input,
        "--check-finite",
    ])
}

#[test]
fn check_finite_names_the_overflowing_node_on_cpu_and_wgpu() {
    for backend in ["cpu", "wgpu"] {
        let out = check_finite(backend);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{backend}: {}", describe(&out));
        // exp(10·x + 100) overflows first; 'normalize' (inf/inf = NaN) comes after it.
        assert!(text.contains("node 'exp_overflow'"), "{backend}: {text}");
        assert!(text.contains("(op Exp"), "{backend}: {text}");
        assert!(!text.contains("'normalize'"), "{backend}: {text}");
        // Its input: 10·x + 100 for x in [0, 0.9]: finite, from 100 to 109.
        assert!(
            text.contains("finite values in [1e2, 1.09e2]"),
            "{backend}: {text}"
        );
        assert!(text.contains("8 +Inf"), "{backend}: {text}");
    }
}

#[test]
fn check_finite_passes_a_finite_model_and_is_off_by_default() {
    let example = repo().join("examples/text-orientation");
    let input = format!("x={}", example.join("test_data_set_0/input_0.pb").display());
    let model = example.join("model.onnx");
    let out = tessera(&[
        "run",
        model.to_str().unwrap(),
        "--input",
        &input,
        "--check-finite",
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(stdout(&out).contains("every node's output is finite"));
    // Without the flag the overflow model runs and prints its NaN outputs: exit 0.
    let input = format!("x={}", data("overflow_input.npy").display());
    let out = tessera(&[
        "run",
        data("overflow.onnx").to_str().unwrap(),
        "--input",
        &input,
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(stdout(&out).contains("NaN"), "{}", describe(&out));
}

// ---------------------------------------------------------------- doctor

const ICD_DIRS: [&str; 2] = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"];

#[test]
fn doctor_reports_this_machine() {
    let report = json(&tessera(&["doctor", "--json"]));

    // CPU features: what /proc/cpuinfo says.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        let flags: BTreeSet<&str> = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap()
            .split_whitespace()
            .collect();
        let features = report["cpu"]["features"].as_array().unwrap();
        for (name, flag) in [
            ("avx2", "avx2"),
            ("fma", "fma"),
            ("avx512f", "avx512f"),
            ("f16c", "f16c"),
        ] {
            let reported = features
                .iter()
                .find(|f| f["name"] == name)
                .unwrap_or_else(|| panic!("no {name} in {features:?}"))["present"]
                .as_bool()
                .unwrap();
            assert_eq!(reported, flags.contains(flag), "{name}");
        }
        assert!(
            !report["cpu"]["tract_kernels"]
                .as_array()
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(
        report["cpu"]["threads"].as_u64().unwrap() as usize,
        std::thread::available_parallelism().unwrap().get()
    );

    // Vulkan drivers: exactly the manifests installed.
    let mut manifests: Vec<String> = ICD_DIRS
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|e| e.filter_map(|e| e.ok().map(|e| e.path().display().to_string())))
        .filter(|p| p.ends_with(".json"))
        .collect();
    manifests.sort();
    let drivers: Vec<String> = report["vulkan"]["drivers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["manifest"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(drivers, manifests);

    // CUDA: the driver library is reported found exactly when it loads.
    let cuda_present = [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists());
    assert_eq!(report["cuda"]["driver"]["found"].is_string(), cuda_present);

    let compiled: BTreeSet<&str> = report["compiled_in"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // The default build: every backend compiled in (cuda loads its libraries at run time).
    assert_eq!(compiled, BTreeSet::from(["cpu", "cuda", "wgpu"]));
    let backend = |name: &str| {
        report["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["backend"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(backend("cpu")["available"], true);
    let cuda = backend("cuda");
    assert_eq!(cuda["available"], false);
    assert_eq!(cuda["compiled_in"], true);
    if !cuda_present {
        assert!(
            cuda["fix"].as_str().unwrap().contains("libcuda.so.1"),
            "{cuda}"
        );
    }

    // This machine (no GPU, Mesa's lavapipe installed): wgpu runs on the software adapter.
    let lavapipe = manifests.iter().any(|m| m.contains("lvp_icd"));
    if lavapipe {
        let wgpu = backend("wgpu");
        assert_eq!(wgpu["available"], true, "{wgpu}");
        let adapters = report["wgpu_adapters"].as_array().unwrap();
        assert!(
            adapters
                .iter()
                .any(|a| a.as_str().unwrap().contains("llvmpipe")),
            "{adapters:?}"
        );
        if !adapters
            .iter()
            .any(|a| !a.as_str().unwrap().contains("Cpu"))
        {
            assert_eq!(wgpu["software_only"], true);
            assert!(wgpu["fix"].as_str().unwrap().contains("software"), "{wgpu}");
        }
    }

    // The text form says the same things, one per line.
    let out = tessera(&["doctor"]);
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    for needle in [
        "cpu: ",
        "features: ",
        "vulkan:",
        "wgpu adapters:",
        "cuda:",
        "compiled-in backends: ",
        "auto: ",
    ] {
        assert!(text.contains(needle), "no '{needle}' in:\n{text}");
    }
}

// ---------------------------------------------------------------- bench --html

#[test]
fn bench_html_profiles_cpu_and_wgpu() {
    let dir = temp_dir("bench");
    let example = repo().join("examples/text-orientation");
    let input = format!("x={}", example.join("test_data_set_0/input_0.pb").display());
    let cases = [
        (
            "cpu",
            example.join("model.onnx"),
            input.clone(),
            "Conv",
            "tract",
        ),
        (
            "wgpu",
            data("overflow.onnx"),
            format!("x={}", data("overflow_input.npy").display()),
            "Unary.Exp",
            "submitted and waited",
        ),
    ];
    for (backend, model, input, op, method) in cases {
        let page = dir.join(format!("{backend}.html"));
        let out = tessera(&[
            "bench",
            model.to_str().unwrap(),
            "--backend",
            backend,
            "--input",
            &input,
            "--runs",
            "6",
            "--warmup",
            "1",
            "--html",
            page.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{backend}: {}", describe(&out));
        let html = std::fs::read_to_string(&page).unwrap();
        assert_eq!(element_text(&html, "runs"), "6");
        assert!(
            element_text(&html, "profile-method").contains(method),
            "{backend}"
        );
        let op_types: usize = element_text(&html, "op-types").parse().unwrap();
        assert!(op_types > 0, "{backend}");
        // The op appears in the bar chart and in the node table.
        let chart = &html
            [html.find("id=\"op-chart\"").unwrap()..html.find("id=\"latency-chart\"").unwrap()];
        assert!(chart.contains(op), "{backend}: no {op} bar");
        assert!(
            chart.matches("<rect").count() >= op_types,
            "{backend}: bars missing"
        );
        let shown = render(&page, 1000, 1400);
        let (all, ink, bars) = pixels(&shown.png, [0x4a, 0x90, 0xd9]);
        assert!(ink * 50 > all, "{backend}: bench page nearly blank");
        assert!(bars > 200, "{backend}: only {bars} bar-coloured pixels");
    }
}
