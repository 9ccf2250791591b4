//! A server on a loopback ephemeral port, and a bare HTTP/1.1 client (so tests can also send
//! what a well-behaved client never would: truncated bodies, lying headers).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;
use tessera::{Tensor, onnx_pb};
use tessera_server::{ModelSpec, Server, ServerConfig, ServerError};
use tokio::sync::oneshot;

/// Where the shared test data lives: `$TESSERA_SHARED`, else `../shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("TESSERA_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// The README's example model (ppocr_mobile_cls), which ships in the repository.
pub fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/text-orientation")
}

pub fn spec(name: &str, dir: &Path) -> ModelSpec {
    ModelSpec {
        name: name.into(),
        version: "1".into(),
        path: dir.join("model.onnx"),
    }
}

/// A running server; dropping it stops it.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
}

impl TestServer {
    pub fn start(models: Vec<ModelSpec>, tweak: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let mut config = ServerConfig::new(models);
        config.addr = SocketAddr::from(([127, 0, 0, 1], 0));
        config.session = tessera::Session::builder().threads(1);
        tweak(&mut config);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let server = match Server::bind(config).await {
                    Ok(server) => server,
                    Err(e) => {
                        let _ = addr_tx.send(Err(e.to_string()));
                        return Err(e);
                    }
                };
                let _ = addr_tx.send(Ok(server.local_addr()));
                server
                    .run_until(async move {
                        let _ = stopped.await;
                    })
                    .await
            })
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(300))
            .expect("server start")
            .unwrap_or_else(|e| panic!("server failed to start: {e}"));
        TestServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Asks for a graceful shutdown and waits for it; returns the server's result.
    pub fn stop(mut self) -> Result<(), ServerError> {
        self.stop_inner()
    }

    /// Sends the shutdown signal without waiting for the server to finish.
    pub fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    fn stop_inner(&mut self) -> Result<(), ServerError> {
        self.signal_stop();
        match self.thread.take() {
            Some(thread) => thread.join().expect("server thread panicked"),
            None => Ok(()),
        }
    }

    pub fn get(&self, path: &str) -> Response {
        request(self.addr, "GET", path, &[], b"")
    }

    pub fn post(&self, path: &str, headers: &[(&str, String)], body: &[u8]) -> Response {
        request(self.addr, "POST", path, headers, body)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
            )
        })
    }

    /// The `{"error": …}` message of a failed request.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message in {:?}", self.json()))
            .to_string()
    }
}

/// One request on a fresh connection (`Connection: close`), read to the end.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    // A server may answer (413, 404) and close before reading a whole body: not an error here.
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
    read_response(stream)
}

/// Sends a head promising `claimed` body bytes, then only `body`, then closes the write side.
pub fn request_short_body(addr: SocketAddr, path: &str, claimed: usize, body: &[u8]) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {claimed}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).expect("write head");
    stream.write_all(body).expect("write body");
    stream.shutdown(Shutdown::Write).expect("shutdown");
    read_response(stream)
}

fn read_response(mut stream: TcpStream) -> Response {
    let mut raw = Vec::new();
    if let Err(e) = stream.read_to_end(&mut raw) {
        assert!(!raw.is_empty(), "no response: {e}");
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    assert!(
        !headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked")),
        "chunked responses are not expected"
    );
    Response {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

/// `test_data_set_0`'s inputs and expected outputs.
pub fn data_set(model_dir: &Path) -> (Vec<(String, Tensor)>, Vec<(String, Tensor)>) {
    let dir = model_dir.join("test_data_set_0");
    let read = |prefix: &str| {
        let mut out = Vec::new();
        for k in 0.. {
            let path = dir.join(format!("{prefix}_{k}.pb"));
            if !path.exists() {
                break;
            }
            out.push(onnx_pb::read_pb(&path).expect("read pb"));
        }
        assert!(!out.is_empty(), "no {prefix}_*.pb in {}", dir.display());
        out
    };
    (read("input"), read("output"))
}

/// The protocol's datatype name.
pub fn datatype(t: &Tensor) -> &'static str {
    tessera_server::protocol::datatype_name(t.dtype())
}

/// A request with every input in the binary part; returns the headers and body.
pub fn binary_request(
    inputs: &[(String, Tensor)],
    extra: serde_json::Value,
) -> (Vec<(&'static str, String)>, Vec<u8>) {
    let mut binary = Vec::new();
    let json_inputs: Vec<serde_json::Value> = inputs
        .iter()
        .map(|(name, t)| {
            let bytes = t.data().to_le_bytes();
            let input = serde_json::json!({
                "name": name, "shape": t.shape(), "datatype": datatype(t),
                "parameters": {"binary_data_size": bytes.len()}
            });
            binary.extend_from_slice(&bytes);
            input
        })
        .collect();
    let mut request = serde_json::json!({ "inputs": json_inputs });
    if let (Some(object), serde_json::Value::Object(extra)) = (request.as_object_mut(), extra) {
        object.extend(extra);
    }
    let mut body = serde_json::to_vec(&request).expect("json");
    let headers = vec![("Inference-Header-Content-Length", body.len().to_string())];
    body.extend_from_slice(&binary);
    (headers, body)
}

/// A request with every input as JSON `data` (flat).
pub fn json_request(inputs: &[(String, Tensor)]) -> Vec<u8> {
    let json_inputs: Vec<serde_json::Value> = inputs
        .iter()
        .map(|(name, t)| {
            let data: Vec<serde_json::Value> = match t.data() {
                tessera::TensorData::Bool(v) => v.iter().map(|&b| b.into()).collect(),
                tessera::TensorData::I64(v) => v.iter().map(|&x| x.into()).collect(),
                tessera::TensorData::U64(v) => v.iter().map(|&x| x.into()).collect(),
                float if t.dtype().is_float() => {
                    float.to_f64_vec().into_iter().map(Into::into).collect()
                }
                // Smaller integers are exact in f64; JSON wants them without a fraction.
                int => int.to_f64_vec().into_iter().map(|x| (x as i64).into()).collect(),
            };
            serde_json::json!({"name": name, "shape": t.shape(), "datatype": datatype(t), "data": data})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "inputs": json_inputs })).expect("json")
}

/// Decodes a response's outputs (JSON `data` or binary) into tensors, by name.
pub fn response_outputs(response: &Response) -> Vec<(String, Tensor)> {
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body[..response.body.len().min(500)])
    );
    let (json, mut binary): (serde_json::Value, &[u8]) =
        match response.header("Inference-Header-Content-Length") {
            Some(length) => {
                let length: usize = length.parse().expect("length");
                (
                    serde_json::from_slice(&response.body[..length]).expect("json header"),
                    &response.body[length..],
                )
            }
            None => (response.json(), &[][..]),
        };
    let outputs = json["outputs"].as_array().expect("outputs");
    let mut tensors = Vec::new();
    for output in outputs {
        let name = output["name"].as_str().expect("name").to_string();
        let dtype = tessera_server::protocol::parse_datatype(
            output["datatype"].as_str().expect("datatype"),
        )
        .expect("known datatype");
        let shape: Vec<usize> = output["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("dim") as usize)
            .collect();
        let tensor = match output["parameters"]["binary_data_size"].as_u64() {
            Some(size) => {
                let (bytes, rest) = binary.split_at(size as usize);
                binary = rest;
                Tensor::from_le_bytes(dtype, shape, bytes).expect("binary output")
            }
            None => {
                let values = output["data"].as_array().expect("data");
                let decoded = tessera_server::codec::decode_request(
                    &serde_json::to_vec(&serde_json::json!({"inputs": [{
                        "name": name, "shape": shape, "datatype": output["datatype"], "data": values
                    }]}))
                    .expect("json"),
                    None,
                )
                .expect("JSON output decodes");
                decoded.inputs.into_iter().next().expect("one").1
            }
        };
        tensors.push((name, tensor));
    }
    assert!(binary.is_empty(), "{} stray binary bytes", binary.len());
    tensors
}
