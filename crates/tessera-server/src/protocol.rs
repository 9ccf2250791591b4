//! The Open Inference Protocol's JSON messages (KServe v2 / Triton HTTP), with serde.
//!
//! Spec: <https://github.com/kserve/open-inference-protocol/blob/main/specification/protocol/inference_rest.md>;
//! binary tensor data: Triton's `binary_tensor_data` extension
//! (<https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_binary_data.md>).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tessera::{DType, Dim, IoInfo};

/// `GET /v2`.
#[derive(Debug, Serialize)]
pub struct ServerMetadata {
    pub name: &'static str,
    pub version: &'static str,
    pub extensions: Vec<&'static str>,
}

/// `GET /v2/models/{name}`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelMetadata {
    pub name: String,
    pub versions: Vec<String>,
    pub platform: &'static str,
    pub inputs: Vec<TensorMetadata>,
    pub outputs: Vec<TensorMetadata>,
}

/// One input or output in [`ModelMetadata`]: dynamic dims are `-1`.
#[derive(Debug, Clone, Serialize)]
pub struct TensorMetadata {
    pub name: String,
    pub datatype: &'static str,
    pub shape: Vec<i64>,
}

impl TensorMetadata {
    pub fn from_io(io: &IoInfo) -> TensorMetadata {
        TensorMetadata {
            name: io.name.clone(),
            datatype: datatype_name(io.dtype),
            // A model that declares no shape at all: one open dim is the closest the protocol has.
            shape: match &io.dims {
                Some(dims) => dims
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed(n) => *n as i64,
                        Dim::Symbol(_) | Dim::Unknown => -1,
                    })
                    .collect(),
                None => vec![-1],
            },
        }
    }
}

/// `POST …/infer` body (the JSON part when the binary extension is used).
#[derive(Debug, Deserialize)]
pub struct InferRequest {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    pub inputs: Vec<RequestInput>,
    #[serde(default)]
    pub outputs: Option<Vec<RequestOutput>>,
}

/// One input tensor of a request: `data` holds the values, or `parameters.binary_data_size`
/// says how many bytes of the binary part after the JSON are its values.
#[derive(Debug, Deserialize)]
pub struct RequestInput {
    pub name: String,
    pub shape: Vec<i64>,
    pub datatype: String,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub data: Option<Value>,
}

/// One requested output; `parameters.binary_data` asks for it in the binary part.
#[derive(Debug, Deserialize)]
pub struct RequestOutput {
    pub name: String,
    #[serde(default)]
    pub parameters: Map<String, Value>,
}

/// The JSON part of an inference response.
#[derive(Debug, Serialize)]
pub struct InferResponse {
    pub model_name: String,
    pub model_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub outputs: Vec<ResponseOutput>,
}

/// One output tensor: values in `data`, or `parameters.binary_data_size` bytes in the binary part.
#[derive(Debug, Serialize)]
pub struct ResponseOutput {
    pub name: String,
    pub datatype: &'static str,
    pub shape: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<Value>>,
}

/// The protocol's name for an element type.
pub fn datatype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "BOOL",
        DType::U8 => "UINT8",
        DType::U16 => "UINT16",
        DType::U32 => "UINT32",
        DType::U64 => "UINT64",
        DType::I8 => "INT8",
        DType::I16 => "INT16",
        DType::I32 => "INT32",
        DType::I64 => "INT64",
        DType::F16 => "FP16",
        DType::F32 => "FP32",
        DType::F64 => "FP64",
    }
}

/// The element type a protocol datatype names (`BYTES` and unknown names are `None`).
pub fn parse_datatype(name: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|d| datatype_name(*d) == name)
}

/// A boolean request parameter (`binary_data`, `binary_data_output`), absent = `None`.
pub fn bool_parameter(parameters: &Map<String, Value>, key: &str) -> Option<bool> {
    parameters.get(key).and_then(Value::as_bool)
}
