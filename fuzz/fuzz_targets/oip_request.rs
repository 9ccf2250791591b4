//! Any inference request (Open Inference Protocol JSON, or JSON then binary tensors with the
//! Triton binary extension) decodes or fails with an error that becomes a 4xx; nothing it
//! states (shape, binary_data_size, Inference-Header-Content-Length) makes the server allocate
//! more than the bytes it sent. Then the tensors are checked against a model's declared inputs,
//! the outputs selected, and a response encoded from them, as the server does.
//!
//! Input layout: the value of the `Inference-Header-Content-Length` header, a newline, then the
//! body. An empty first line means no header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use tessera_core::model::inputs::order_inputs;
use tessera_core::{DType, Dim, IoInfo, ModelInfo};
use tessera_server::codec::{decode_request, encode_response, select_outputs};

static MODEL: LazyLock<ModelInfo> = LazyLock::new(|| {
    let io = |name: &str, dtype, dims: Vec<Dim>| IoInfo {
        name: name.into(),
        dtype,
        dims: Some(dims),
    };
    let batch = || Dim::Symbol("batch".into());
    ModelInfo {
        inputs: vec![
            io("x", DType::F32, vec![batch(), Dim::Fixed(3)]),
            io("ids", DType::I64, vec![batch(), Dim::Unknown]),
        ],
        outputs: vec![io("y", DType::F32, vec![batch(), Dim::Fixed(2)])],
        opset: 17,
        producer: String::new(),
        op_histogram: Default::default(),
        quantized: false,
    }
});

fuzz_target!(|data: &[u8]| {
    let (header, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&[][..], data),
    };
    let header = match std::str::from_utf8(header) {
        Ok("") => None,
        Ok(text) => Some(text),
        // The server answers 400 before decoding a header that is not text.
        Err(_) => return,
    };
    let Ok(decoded) = decode_request(body, header) else {
        return;
    };
    let outputs: Vec<String> = MODEL.outputs.iter().map(|o| o.name.clone()).collect();
    let selected = select_outputs(&decoded.request, &outputs);
    let _ = order_inputs(&MODEL, decoded.inputs.clone());
    // Echo the inputs back as outputs, binary where the request asks for binary.
    let binary = matches!(&selected, Ok(s) if s.iter().any(|(_, b)| *b));
    let echoed = decoded
        .inputs
        .into_iter()
        .map(|(name, tensor)| (name, binary, tensor))
        .collect();
    encode_response("m", "1", decoded.request.id.clone(), echoed).expect("encode");
});
