//! The server over HTTP on loopback: protocol routes, JSON and binary tensors of every
//! datatype the models use, bad requests (each a 4xx with a JSON error, and the server keeps
//! serving), a full queue, timeouts, graceful shutdown, dynamic batching and metrics.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;
use tessera::check::{Tolerance, compare};
use tessera::{Session, Tensor};

const INFER: &str = "/v2/models/cls/infer";

fn assert_close(actual: &[(String, Tensor)], expected: &[(String, Tensor)], tol: Tolerance) {
    assert_eq!(actual.len(), expected.len(), "output count");
    for ((name, a), (_, e)) in actual.iter().zip(expected) {
        let check = compare(name, a, e, tol);
        assert!(check.passed, "{check:?}");
    }
}

fn example_server(tweak: impl FnOnce(&mut tessera_server::ServerConfig)) -> TestServer {
    TestServer::start(vec![spec("cls", &example_dir())], tweak)
}

#[test]
fn health_and_metadata_routes() {
    let server = example_server(|_| {});
    assert_eq!(server.get("/v2/health/live").status, 200);
    assert_eq!(server.get("/v2/health/ready").status, 200);
    let meta = server.get("/v2").json();
    assert_eq!(meta["name"], "tessera");
    assert!(
        meta["extensions"]
            .as_array()
            .unwrap()
            .contains(&json!("binary_tensor_data"))
    );

    let model = server.get("/v2/models/cls");
    assert_eq!(model.status, 200);
    let model = model.json();
    assert_eq!(model["name"], "cls");
    assert_eq!(model["versions"], json!(["1"]));
    // x: float32[p2o.DynamicDimension.0, 3, p2o.DynamicDimension.1, p2o.DynamicDimension.2]
    assert_eq!(
        model["inputs"],
        json!([{"name": "x", "datatype": "FP32", "shape": [-1, 3, -1, -1]}])
    );
    assert_eq!(
        model["outputs"],
        json!([{"name": "softmax_0.tmp_0", "datatype": "FP32", "shape": [-1, 2]}])
    );
    assert_eq!(server.get("/v2/models/cls/versions/1").json(), model);
    assert_eq!(server.get("/v2/models/cls/ready").status, 200);
    assert_eq!(server.get("/v2/models/cls/versions/1/ready").status, 200);

    for path in [
        "/v2/models/nope",
        "/v2/models/nope/ready",
        "/v2/models/cls/versions/7",
        "/v2/models/cls/versions/7/ready",
        "/v3/whatever",
    ] {
        let response = server.get(path);
        assert_eq!(response.status, 404, "{path}");
        assert!(!response.error().is_empty());
    }
    let response = request(server.addr, "GET", INFER, &[], b"");
    assert_eq!(response.status, 405);
    assert!(response.error().contains("GET"));
    assert!(server.stop().is_ok());
}

#[test]
fn json_nested_json_and_binary_requests_give_the_expected_outputs() {
    let server = example_server(|_| {});
    let (inputs, expected) = data_set(&example_dir());

    // Flat JSON in, JSON out.
    let response = server.post(INFER, &[], &json_request(&inputs));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);

    // Nested JSON data (rows of rows), with an id echoed back.
    let (name, x) = &inputs[0];
    let values = x.data().to_f64_vec();
    let shape = x.shape();
    let nested: Vec<serde_json::Value> = values
        .chunks(shape[2] * shape[3])
        .map(|channel| {
            json!(
                channel
                    .chunks(shape[3])
                    .map(|row| json!(row))
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    let body = json!({"id": "req-7", "inputs": [{"name": name, "shape": shape, "datatype": "FP32", "data": [nested]}]});
    let response = server.post(INFER, &[], &serde_json::to_vec(&body).unwrap());
    assert_eq!(response.json()["id"], "req-7");
    assert_eq!(response.json()["model_name"], "cls");
    assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);

    // Binary in, binary out (what tritonclient sends by default), on the versioned route.
    let (headers, body) =
        binary_request(&inputs, json!({"parameters": {"binary_data_output": true}}));
    let response = server.post("/v2/models/cls/versions/1/infer", &headers, &body);
    assert_eq!(
        response.header("content-type"),
        Some("application/octet-stream")
    );
    assert!(response.header("Inference-Header-Content-Length").is_some());
    assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);

    // Binary in, requested output as JSON.
    let (headers, body) = binary_request(
        &inputs,
        json!({"outputs": [{"name": "softmax_0.tmp_0", "parameters": {"binary_data": false}}]}),
    );
    let response = server.post(INFER, &headers, &body);
    assert!(response.header("Inference-Header-Content-Length").is_none());
    assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);
}

/// Every datatype the shared models use, in and out, as JSON and as binary.
#[test]
fn every_datatype_round_trips_as_json_and_binary() {
    let node = shared_dir().join("onnx-tests/node");
    let models = shared_dir().join("models");
    let cases = [
        ("int8", node.join("test_add_int8")),
        ("uint8", node.join("test_add_uint8")),
        ("bool", node.join("test_and2d")),
        ("fp16_in", node.join("test_cast_FLOAT16_to_FLOAT")),
        ("fp16_out", node.join("test_cast_FLOAT_to_FLOAT16")),
        ("int32", models.join("magika_v3_3")),
        ("int64", models.join("minilm_l3_paraphrase")),
    ];
    let server = TestServer::start(
        cases.iter().map(|(name, dir)| spec(name, dir)).collect(),
        |_| {},
    );
    for (name, dir) in &cases {
        let (inputs, expected) = data_set(dir);
        let path = format!("/v2/models/{name}/infer");
        let (headers, body) =
            binary_request(&inputs, json!({"parameters": {"binary_data_output": true}}));
        let mut results = vec![response_outputs(&server.post(&path, &headers, &body))];
        // JSON numbers cannot be NaN or infinite (the fp16 casts test those): binary only then.
        let finite = |ts: &[(String, Tensor)]| {
            ts.iter()
                .all(|(_, t)| t.data().to_f64_vec().iter().all(|v| v.is_finite()))
        };
        if finite(&inputs) && finite(&expected) {
            results.push(response_outputs(&server.post(
                &path,
                &[],
                &json_request(&inputs),
            )));
        } else {
            assert!(
                name.starts_with("fp16"),
                "{name}: unexpected non-finite values"
            );
        }
        for outputs in &results {
            for ((_, actual), (_, wanted)) in outputs.iter().zip(&expected) {
                assert_eq!(actual.dtype(), wanted.dtype(), "{name}");
            }
            assert_close(outputs, &expected, Tolerance::MODELS);
        }
    }
    // The int8/uint8/bool/fp16 cases really carry those types.
    let (inputs, _) = data_set(&node.join("test_and2d"));
    assert_eq!(datatype(&inputs[0].1), "BOOL");
    let (inputs, _) = data_set(&node.join("test_cast_FLOAT16_to_FLOAT"));
    assert_eq!(datatype(&inputs[0].1), "FP16");
}

#[test]
fn bad_requests_get_4xx_with_a_json_error_and_the_server_keeps_serving() {
    let server = example_server(|c| c.max_body_bytes = 1 << 20);
    let (inputs, expected) = data_set(&example_dir());
    let good = |server: &TestServer| {
        let (headers, body) = binary_request(&inputs, json!({}));
        assert_close(
            &response_outputs(&server.post(INFER, &headers, &body)),
            &expected,
            Tolerance::MODELS,
        );
    };
    let x = &inputs[0].1;
    let x_bytes = x.data().to_le_bytes();
    let with_input =
        |input: serde_json::Value| serde_json::to_vec(&json!({"inputs": [input]})).unwrap();
    let header = |len: usize| vec![("Inference-Header-Content-Length", len.to_string())];

    let mut cases: Vec<(&str, u16, &str, Vec<(&str, String)>, Vec<u8>)> = vec![
        ("unknown model", 404, "unknown model 'nope'", vec![], json_request(&inputs)),
        ("bad JSON", 400, "not valid inference JSON", vec![], b"{\"inputs\": [".to_vec()),
        ("no inputs field", 400, "not valid inference JSON", vec![], b"{}".to_vec()),
        (
            "wrong input name",
            400,
            "'y'",
            vec![],
            with_input(json!({"name": "y", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": x.data().to_f64_vec()})),
        ),
        (
            "wrong dtype",
            400,
            "dtype",
            vec![],
            with_input(json!({"name": "x", "shape": [1, 3, 48, 192], "datatype": "INT64", "data": vec![1; x.len()]})),
        ),
        (
            "wrong rank",
            400,
            "x",
            vec![],
            with_input(json!({"name": "x", "shape": [3, 48, 192], "datatype": "FP32", "data": x.data().to_f64_vec()})),
        ),
        (
            "wrong fixed dim",
            400,
            "x",
            vec![],
            with_input(json!({"name": "x", "shape": [1, 4, 48, 144], "datatype": "FP32", "data": x.data().to_f64_vec()})),
        ),
        (
            "data count does not match shape",
            400,
            "needs 27648 values",
            vec![],
            with_input(json!({"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": [1.0, 2.0]})),
        ),
        (
            "string in FP32 data",
            400,
            "is not a number",
            vec![],
            with_input(json!({"name": "x", "shape": [1], "datatype": "FP32", "data": ["a"]})),
        ),
        (
            "BYTES datatype",
            400,
            "not supported",
            vec![],
            with_input(json!({"name": "x", "shape": [1], "datatype": "BYTES", "data": ["a"]})),
        ),
        (
            "unknown output",
            400,
            "unknown output 'z'",
            vec![],
            serde_json::to_vec(&json!({"inputs": [{"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": x.data().to_f64_vec()}], "outputs": [{"name": "z"}]})).unwrap(),
        ),
    ];
    // Truncated binary data: the JSON promises every byte, the body stops halfway.
    let json_part = serde_json::to_vec(&json!({"inputs": [{"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "parameters": {"binary_data_size": x_bytes.len()}}]})).unwrap();
    let mut truncated = json_part.clone();
    truncated.extend_from_slice(&x_bytes[..x_bytes.len() / 2]);
    cases.push((
        "truncated binary",
        400,
        "truncated",
        header(json_part.len()),
        truncated,
    ));
    // binary_data_size that does not fit the shape.
    let json_odd = serde_json::to_vec(&json!({"inputs": [{"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "parameters": {"binary_data_size": 12}}]})).unwrap();
    let mut odd = json_odd.clone();
    odd.extend_from_slice(&[0; 12]);
    cases.push((
        "binary size vs shape",
        400,
        "needs 110592",
        header(json_odd.len()),
        odd,
    ));
    // A header length longer than the body, and one that is not a number.
    cases.push((
        "header length past the body",
        400,
        "only 2 bytes",
        header(99),
        b"{}".to_vec(),
    ));
    cases.push((
        "header length not a number",
        400,
        "not a byte count",
        vec![("Inference-Header-Content-Length", "ten".into())],
        b"{}".to_vec(),
    ));
    // More than the 1 MiB limit this server was given.
    let mut oversized = json_part.clone();
    oversized.resize(json_part.len() + (2 << 20), 0);
    cases.push((
        "oversized body",
        413,
        "body",
        header(json_part.len()),
        oversized,
    ));
    cases.push((
        "compressed body",
        415,
        "gzip",
        vec![("Content-Encoding", "gzip".into())],
        json_request(&inputs),
    ));

    for (what, status, message, headers, body) in cases {
        let path = if what == "unknown model" {
            "/v2/models/nope/infer"
        } else {
            INFER
        };
        let response = server.post(path, &headers, &body);
        assert_eq!(
            response.status,
            status,
            "{what}: {}",
            String::from_utf8_lossy(&response.body)
        );
        let error = response.error();
        assert!(
            error.contains(message),
            "{what}: error {error:?} should mention {message:?}"
        );
        good(&server);
    }

    // A client that promises more body than it sends, then hangs up: no answer is owed, but
    // the server must not stop serving.
    let _ = request_short_body(server.addr, INFER, 5000, b"{\"inputs\":");
    good(&server);

    // Failures are counted per model.
    let metrics = String::from_utf8(server.get("/metrics").body).unwrap();
    let failures = metric(&metrics, "tessera_inference_failures_total{model=\"cls\"}");
    assert!(failures >= 14.0, "failures counted: {failures}\n{metrics}");
    assert!(server.stop().is_ok());
}

/// Sizes a request states (shape, `binary_data_size`, `Inference-Header-Content-Length`) are
/// checked against the bytes really sent before anything is allocated: each lie is a 400 naming
/// the input, and the server answers the next request normally. (A shape of 10^12 with one
/// value used to reserve memory for 10^12 values and abort the process; 2^61 panicked.)
#[test]
fn hostile_sizes_get_400_and_the_server_keeps_serving() {
    let server = example_server(|_| {});
    let (inputs, expected) = data_set(&example_dir());
    let good = |server: &TestServer| {
        let (headers, body) = binary_request(&inputs, json!({}));
        assert_close(
            &response_outputs(&server.post(INFER, &headers, &body)),
            &expected,
            Tolerance::MODELS,
        );
    };
    let json_input = |shape: serde_json::Value, data: serde_json::Value| {
        serde_json::to_vec(
            &json!({"inputs": [{"name": "x", "shape": shape, "datatype": "FP32", "data": data}]}),
        )
        .unwrap()
    };
    // JSON part, then `binary` bytes, with the header that splits them.
    let binary_input = |shape: serde_json::Value, size: serde_json::Value, binary: &[u8]| {
        let json = serde_json::to_vec(&json!({"inputs": [{"name": "x", "shape": shape, "datatype": "FP32", "parameters": {"binary_data_size": size}}]}))
            .unwrap();
        let headers = vec![("Inference-Header-Content-Length", json.len().to_string())];
        let mut body = json;
        body.extend_from_slice(binary);
        (headers, body)
    };
    let no_headers = Vec::new;
    let mut cases: Vec<(&str, &str, Vec<(&str, String)>, Vec<u8>)> = vec![
        (
            "shape 10^12, one value",
            "input 'x'",
            no_headers(),
            json_input(json!([1_000_000_000_000u64]), json!([1])),
        ),
        (
            "shape 2^61, one value",
            "input 'x'",
            no_headers(),
            json_input(json!([1u64 << 61]), json!([1])),
        ),
        (
            "shape 2^62 + 1, one value",
            "input 'x'",
            no_headers(),
            json_input(json!([(1u64 << 62) + 1]), json!([1])),
        ),
        (
            "shape i64::MAX, one value",
            "input 'x'",
            no_headers(),
            json_input(json!([i64::MAX]), json!([1])),
        ),
        (
            "dim past i64",
            "not valid inference JSON",
            no_headers(),
            json_input(json!([u64::MAX]), json!([1])),
        ),
        (
            "shape product overflows",
            "too large",
            no_headers(),
            json_input(json!([1u64 << 32, 1u64 << 32, 16]), json!([1])),
        ),
        (
            "negative dim",
            "negative dim",
            no_headers(),
            json_input(json!([-1, 3, 48, 192]), json!([1])),
        ),
        (
            "very negative dim",
            "negative dim",
            no_headers(),
            json_input(json!([i64::MIN]), json!([1])),
        ),
        (
            "nested data, shape 10^12",
            "input 'x'",
            no_headers(),
            json_input(json!([1_000_000, 1_000_000]), json!([[1, 2], [3, 4]])),
        ),
    ];
    // No values at all, but other dims whose product overflows: not a shape a tensor can have
    // (it reached tract's lowering and came back as an internal error).
    cases.push((
        "zero elements, dims of 2^62",
        "too large",
        no_headers(),
        json_input(json!([0, 3, 1u64 << 62, 1u64 << 62]), json!([])),
    ));
    let (headers, body) = binary_input(json!([1u64 << 40]), json!(1u64 << 42), &[0; 16]);
    cases.push((
        "binary_data_size 4 TiB, 16 bytes sent",
        "input 'x'",
        headers,
        body,
    ));
    let (headers, body) = binary_input(json!([1u64 << 62]), json!(u64::MAX), &[0; 16]);
    cases.push(("binary_data_size u64::MAX", "input 'x'", headers, body));
    let (headers, body) = binary_input(json!([1u64 << 62]), json!(0), &[]);
    cases.push(("shape bytes overflow", "too large", headers, body));
    let (headers, body) = binary_input(json!([4]), json!(-16), &[0; 16]);
    cases.push(("negative binary_data_size", "byte count", headers, body));
    let (_, body) = binary_input(json!([4]), json!(16), &[0; 16]);
    cases.push((
        "header length u64::MAX",
        "Inference-Header-Content-Length",
        vec![("Inference-Header-Content-Length", u64::MAX.to_string())],
        body.clone(),
    ));
    cases.push((
        "header length past u64",
        "not a byte count",
        vec![(
            "Inference-Header-Content-Length",
            "99999999999999999999999999".into(),
        )],
        body,
    ));

    for (what, message, headers, body) in cases {
        let response = server.post(INFER, &headers, &body);
        assert_eq!(
            response.status,
            400,
            "{what}: {}",
            String::from_utf8_lossy(&response.body)
        );
        let error = response.error();
        assert!(
            error.contains(message),
            "{what}: error {error:?} should mention {message:?}"
        );
        good(&server);
    }

    assert!(server.stop().is_ok());
}

fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[test]
fn metrics_count_requests_and_latency_per_model() {
    let server = example_server(|_| {});
    let (inputs, _) = data_set(&example_dir());
    for _ in 0..3 {
        assert_eq!(server.post(INFER, &[], &json_request(&inputs)).status, 200);
    }
    let response = server.get("/metrics");
    assert_eq!(response.status, 200);
    let text = String::from_utf8(response.body).unwrap();
    assert_eq!(
        metric(&text, "tessera_inference_requests_total{model=\"cls\"}"),
        3.0
    );
    assert_eq!(
        metric(&text, "tessera_inference_failures_total{model=\"cls\"}"),
        0.0
    );
    assert_eq!(metric(&text, "tessera_queue_depth{model=\"cls\"}"), 0.0);
    assert_eq!(
        metric(
            &text,
            "tessera_request_duration_seconds_count{model=\"cls\"}"
        ),
        3.0
    );
    assert_eq!(
        metric(
            &text,
            "tessera_compute_duration_seconds_count{model=\"cls\"}"
        ),
        3.0
    );
}

/// ppocrv4_det takes a few hundred ms per run here: slow enough to fill a queue on purpose.
fn slow_model() -> std::path::PathBuf {
    shared_dir().join("models/ppocrv4_det")
}

#[test]
fn a_full_queue_answers_503_and_later_requests_succeed() {
    let server = TestServer::start(vec![spec("det", &slow_model())], |c| {
        c.workers_per_model = 1;
        c.queue_capacity = 1;
    });
    let (inputs, expected) = data_set(&slow_model());
    let (headers, body) = binary_request(&inputs, json!({}));
    let addr = server.addr;
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let headers = headers.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                request(addr, "POST", "/v2/models/det/infer", &headers, &body)
            })
        })
        .collect();
    let responses: Vec<Response> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let ok = responses.iter().filter(|r| r.status == 200).count();
    let refused: Vec<&Response> = responses.iter().filter(|r| r.status == 503).collect();
    assert_eq!(ok + refused.len(), 8, "only 200 or 503 expected");
    // One running and one queued at any time: with 8 at once, some must be refused.
    assert!(
        ok >= 2 && !refused.is_empty(),
        "{ok} ok, {} refused",
        refused.len()
    );
    assert!(refused[0].error().contains("queued"));
    for response in responses.iter().filter(|r| r.status == 200) {
        assert_close(&response_outputs(response), &expected, Tolerance::MODELS);
    }
    let response = server.post("/v2/models/det/infer", &headers, &body);
    assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);
}

#[test]
fn a_request_past_its_timeout_gets_504() {
    let server = example_server(|c| c.request_timeout = Duration::from_nanos(1));
    let (inputs, _) = data_set(&example_dir());
    let response = server.post(INFER, &[], &json_request(&inputs));
    assert_eq!(response.status, 504);
    assert!(response.error().contains("did not answer"));
}

#[test]
fn shutdown_finishes_accepted_requests_then_refuses_connections() {
    let server = TestServer::start(vec![spec("det", &slow_model())], |c| {
        c.workers_per_model = 1;
    });
    let (inputs, expected) = data_set(&slow_model());
    let (headers, body) = binary_request(&inputs, json!({}));
    let addr = server.addr;
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let headers = headers.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                request(addr, "POST", "/v2/models/det/infer", &headers, &body)
            })
        })
        .collect();
    // Both are accepted (one running, one queued) before the shutdown begins.
    std::thread::sleep(Duration::from_millis(150));
    assert!(server.stop().is_ok());
    for client in clients {
        let response = client.join().unwrap();
        assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);
    }
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
}

#[test]
fn during_the_drain_delay_readiness_fails_and_requests_are_still_served() {
    let mut server = example_server(|c| c.drain_delay = Duration::from_millis(1500));
    let (inputs, expected) = data_set(&example_dir());
    assert_eq!(server.get("/v2/health/ready").status, 200);
    let started = std::time::Instant::now();
    server.signal_stop();
    std::thread::sleep(Duration::from_millis(200));
    // A load balancer still routing here during the delay gets answers, and sees "not ready".
    assert_eq!(server.get("/v2/health/ready").status, 503);
    assert_eq!(server.get("/v2/health/live").status, 200);
    let response = server.post(INFER, &[], &json_request(&inputs));
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_close(&response_outputs(&response), &expected, Tolerance::MODELS);
    let addr = server.addr;
    assert!(server.stop().is_ok());
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "stopped before the drain delay ended"
    );
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still accepting after the drain delay"
    );
}

#[test]
fn dynamic_batching_merges_requests_and_splits_the_outputs_back() {
    let server = example_server(|c| {
        c.workers_per_model = 1;
        c.batching = Some(tessera_server::Batching {
            max_batch: 8,
            timeout: Duration::from_millis(300),
        });
    });
    let (inputs, _) = data_set(&example_dir());
    let (name, x) = inputs[0].clone();
    // Four different inputs: the test image, scaled.
    let variants: Vec<Tensor> = (0..4)
        .map(|k| {
            let values: Vec<f32> = x
                .as_slice::<f32>()
                .unwrap()
                .iter()
                .map(|v| v * (1.0 - 0.2 * k as f32))
                .collect();
            Tensor::from_vec(x.shape().to_vec(), values).unwrap()
        })
        .collect();
    let session = Session::builder()
        .threads(1)
        .load(example_dir().join("model.onnx"))
        .unwrap();
    let addr = server.addr;
    let clients: Vec<_> = variants
        .iter()
        .map(|v| {
            let (headers, body) = binary_request(&[(name.clone(), v.clone())], json!({}));
            std::thread::spawn(move || request(addr, "POST", INFER, &headers, &body))
        })
        .collect();
    for (client, variant) in clients.into_iter().zip(&variants) {
        let outputs = response_outputs(&client.join().unwrap());
        let alone = session.run(vec![(name.clone(), variant.clone())]).unwrap();
        assert_close(&outputs, &alone, Tolerance::MODELS);
    }
    let text = String::from_utf8(server.get("/metrics").body).unwrap();
    let runs = metric(&text, "tessera_batch_size_count{model=\"cls\"}");
    let rows = metric(&text, "tessera_batch_size_sum{model=\"cls\"}");
    assert!(
        runs < 4.0 && rows == 4.0,
        "{runs} runs for {rows} requests: nothing merged"
    );
}

#[test]
fn model_repository_layouts_are_found() {
    let dir = std::env::temp_dir().join(format!("tessera-repo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plain")).unwrap();
    std::fs::create_dir_all(dir.join("versioned/1")).unwrap();
    std::fs::create_dir_all(dir.join("versioned/3")).unwrap();
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let model = example_dir().join("model.onnx");
    for path in [
        "plain/model.onnx",
        "versioned/1/model.onnx",
        "versioned/3/model.onnx",
    ] {
        std::fs::copy(&model, dir.join(path)).unwrap();
    }
    let specs = tessera_server::scan_repository(&dir).unwrap();
    let found: Vec<(&str, &str)> = specs
        .iter()
        .map(|s| (s.name.as_str(), s.version.as_str()))
        .collect();
    assert_eq!(found, vec![("plain", "1"), ("versioned", "3")]);
    let server = TestServer::start(specs, |_| {});
    assert_eq!(
        server.get("/v2/models/versioned/versions/3/ready").status,
        200
    );
    assert_eq!(
        server.get("/v2/models/versioned/versions/1/ready").status,
        404
    );
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(tessera_server::scan_repository(&dir).is_err());
}
