//! Request bodies to tensors and tensors to response bodies: JSON `data` (flat or nested) and
//! the binary tensor data extension (a JSON header of `Inference-Header-Content-Length` bytes,
//! then each binary tensor's raw little-endian bytes in order).

use crate::error::ServerError;
use crate::protocol::{
    InferRequest, InferResponse, RequestInput, ResponseOutput, bool_parameter, datatype_name,
    parse_datatype,
};
use half::f16;
use serde_json::{Map, Value};
use tessera::{DType, Tensor, TensorData};

/// The header that splits a body into its JSON part and its binary part.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// A decoded inference request: its JSON and its input tensors, by name.
pub struct DecodedRequest {
    pub request: InferRequest,
    pub inputs: Vec<(String, Tensor)>,
}

fn bad(message: impl Into<String>) -> ServerError {
    ServerError::BadRequest(message.into())
}

/// Splits and decodes a body. `header_length` is the value of `Inference-Header-Content-Length`.
pub fn decode_request(
    body: &[u8],
    header_length: Option<&str>,
) -> Result<DecodedRequest, ServerError> {
    let (json, mut binary) = match header_length {
        None => (body, &[][..]),
        Some(value) => {
            let length: usize = value.trim().parse().map_err(|_| {
                bad(format!(
                    "Inference-Header-Content-Length '{value}' is not a byte count"
                ))
            })?;
            if length > body.len() {
                return Err(bad(format!(
                    "Inference-Header-Content-Length is {length} but the body has only {} bytes",
                    body.len()
                )));
            }
            body.split_at(length)
        }
    };
    let request: InferRequest = serde_json::from_slice(json)
        .map_err(|e| bad(format!("the request is not valid inference JSON: {e}")))?;
    if request.inputs.is_empty() {
        return Err(bad("the request has no inputs"));
    }
    let mut inputs = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        if inputs.iter().any(|(name, _)| name == &input.name) {
            return Err(bad(format!("input '{}' is given twice", input.name)));
        }
        let tensor = decode_input(input, &mut binary)?;
        inputs.push((input.name.clone(), tensor));
    }
    if !binary.is_empty() {
        return Err(bad(format!(
            "{} bytes of binary data follow the inputs' binary_data_size total",
            binary.len()
        )));
    }
    Ok(DecodedRequest { request, inputs })
}

fn decode_input(input: &RequestInput, binary: &mut &[u8]) -> Result<Tensor, ServerError> {
    let name = &input.name;
    let dtype = parse_datatype(&input.datatype).ok_or_else(|| {
        bad(format!(
            "input '{name}': datatype '{}' is not supported (BOOL, UINT8-64, INT8-64, FP16, FP32, FP64)",
            input.datatype
        ))
    })?;
    let shape = input
        .shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| {
            bad(format!(
                "input '{name}': negative dim in shape {:?}",
                input.shape
            ))
        })?;
    let count = tessera::element_count(&shape)
        .ok_or_else(|| bad(format!("input '{name}': shape {shape:?} is too large")))?;
    let binary_size = input.parameters.get("binary_data_size");
    let data = match (binary_size, &input.data) {
        (Some(_), Some(_)) => {
            return Err(bad(format!(
                "input '{name}' has both data and binary_data_size"
            )));
        }
        (None, None) => {
            return Err(bad(format!(
                "input '{name}' has neither data nor binary_data_size"
            )));
        }
        (Some(size), None) => {
            let size = size
                .as_u64()
                .and_then(|s| usize::try_from(s).ok())
                .ok_or_else(|| {
                    bad(format!(
                        "input '{name}': binary_data_size must be a byte count"
                    ))
                })?;
            let expected = count
                .checked_mul(dtype.size_of())
                .ok_or_else(|| bad(format!("input '{name}': shape {shape:?} is too large")))?;
            if size != expected {
                return Err(bad(format!(
                    "input '{name}': binary_data_size is {size} bytes but {} {shape:?} needs {expected}",
                    input.datatype
                )));
            }
            if size > binary.len() {
                return Err(bad(format!(
                    "input '{name}': binary_data_size is {size} bytes but only {} bytes of binary data are left (truncated body?)",
                    binary.len()
                )));
            }
            let (bytes, rest) = binary.split_at(size);
            *binary = rest;
            TensorData::from_le_bytes(dtype, bytes)
                .map_err(|e| bad(format!("input '{name}': {e}")))?
        }
        (None, Some(values)) => {
            // Never sized from the shape: `count` is only what the request claims, while the
            // values are what it holds (a shape of 10^12 with one value must not reserve 10^12).
            let mut flat = Vec::new();
            flatten(values, &mut flat);
            if flat.len() != count {
                return Err(bad(format!(
                    "input '{name}': shape {shape:?} needs {count} values, data has {}",
                    flat.len()
                )));
            }
            json_to_data(dtype, &flat).map_err(|e| bad(format!("input '{name}': {e}")))?
        }
    };
    Tensor::new(shape, data).map_err(|e| bad(format!("input '{name}': {e}")))
}

/// Nested arrays (row-major) to one flat list of scalars.
fn flatten<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| flatten(item, out)),
        scalar => out.push(scalar),
    }
}

fn json_to_data(dtype: DType, values: &[&Value]) -> Result<TensorData, String> {
    fn each<T>(
        values: &[&Value],
        what: &str,
        convert: impl Fn(&Value) -> Option<T>,
    ) -> Result<Vec<T>, String> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| convert(v).ok_or_else(|| format!("value {i} ({v}) is not {what}")))
            .collect()
    }
    fn int<T: TryFrom<i64> + TryFrom<u64>>(v: &Value) -> Option<T> {
        match v.as_i64() {
            Some(i) => T::try_from(i).ok(),
            None => v.as_u64().and_then(|u| T::try_from(u).ok()),
        }
    }
    Ok(match dtype {
        DType::Bool => TensorData::Bool(each(values, "a boolean", Value::as_bool)?),
        DType::F32 => TensorData::F32(each(values, "a number", |v| v.as_f64().map(|x| x as f32))?),
        DType::F64 => TensorData::F64(each(values, "a number", Value::as_f64)?),
        DType::F16 => TensorData::F16(each(values, "a number", |v| v.as_f64().map(f16::from_f64))?),
        DType::I8 => TensorData::I8(each(values, "an INT8", int)?),
        DType::I16 => TensorData::I16(each(values, "an INT16", int)?),
        DType::I32 => TensorData::I32(each(values, "an INT32", int)?),
        DType::I64 => TensorData::I64(each(values, "an INT64", int)?),
        DType::U8 => TensorData::U8(each(values, "a UINT8", int)?),
        DType::U16 => TensorData::U16(each(values, "a UINT16", int)?),
        DType::U32 => TensorData::U32(each(values, "a UINT32", int)?),
        DType::U64 => TensorData::U64(each(values, "a UINT64", Value::as_u64)?),
    })
}

fn data_to_json(data: &TensorData) -> Vec<Value> {
    fn numbers<T: Copy>(v: &[T], f: impl Fn(T) -> Value) -> Vec<Value> {
        v.iter().map(|&x| f(x)).collect()
    }
    // Non-finite floats have no JSON form: serde_json writes them as null.
    match data {
        TensorData::F32(v) => numbers(v, |x| Value::from(x as f64)),
        TensorData::F64(v) => numbers(v, Value::from),
        TensorData::F16(v) => numbers(v, |x| Value::from(x.to_f64())),
        TensorData::I8(v) => numbers(v, Value::from),
        TensorData::I16(v) => numbers(v, Value::from),
        TensorData::I32(v) => numbers(v, Value::from),
        TensorData::I64(v) => numbers(v, Value::from),
        TensorData::U8(v) => numbers(v, Value::from),
        TensorData::U16(v) => numbers(v, Value::from),
        TensorData::U32(v) => numbers(v, Value::from),
        TensorData::U64(v) => numbers(v, Value::from),
        TensorData::Bool(v) => numbers(v, Value::from),
    }
}

/// Which outputs go back, in which order, and whether each is binary: the requested outputs
/// (unknown names are an error), or every output when none is named.
pub fn select_outputs(
    request: &InferRequest,
    model_outputs: &[String],
) -> Result<Vec<(String, bool)>, ServerError> {
    let all_binary = bool_parameter(&request.parameters, "binary_data_output").unwrap_or(false);
    match &request.outputs {
        None => Ok(model_outputs
            .iter()
            .map(|name| (name.clone(), all_binary))
            .collect()),
        Some(requested) => requested
            .iter()
            .map(|output| {
                if !model_outputs.contains(&output.name) {
                    return Err(bad(format!(
                        "unknown output '{}'; the model's outputs are: {}",
                        output.name,
                        model_outputs.join(", ")
                    )));
                }
                if output.parameters.contains_key("classification") {
                    return Err(bad(format!(
                        "output '{}': the classification extension is not supported",
                        output.name
                    )));
                }
                let binary =
                    bool_parameter(&output.parameters, "binary_data").unwrap_or(all_binary);
                Ok((output.name.clone(), binary))
            })
            .collect(),
    }
}

/// A response body: JSON alone, or JSON then binary tensors. Returns the body and, when any
/// output is binary, the JSON part's length for `Inference-Header-Content-Length`.
pub fn encode_response(
    model_name: &str,
    model_version: &str,
    id: Option<String>,
    outputs: Vec<(String, bool, Tensor)>,
) -> Result<(Vec<u8>, Option<usize>), ServerError> {
    let mut binary = Vec::new();
    let mut json_outputs = Vec::with_capacity(outputs.len());
    for (name, as_binary, tensor) in outputs {
        let datatype = datatype_name(tensor.dtype());
        let shape = tensor.shape().to_vec();
        if as_binary {
            let bytes = tensor.data().to_le_bytes();
            let mut parameters = Map::new();
            parameters.insert("binary_data_size".into(), Value::from(bytes.len()));
            binary.extend_from_slice(&bytes);
            json_outputs.push(ResponseOutput {
                name,
                datatype,
                shape,
                parameters: Some(parameters),
                data: None,
            });
        } else {
            json_outputs.push(ResponseOutput {
                name,
                datatype,
                shape,
                parameters: None,
                data: Some(data_to_json(tensor.data())),
            });
        }
    }
    let any_binary = json_outputs.iter().any(|o| o.parameters.is_some());
    let response = InferResponse {
        model_name: model_name.into(),
        model_version: model_version.into(),
        id,
        outputs: json_outputs,
    };
    let mut body = serde_json::to_vec(&response)
        .map_err(|e| ServerError::Internal(format!("cannot encode the response: {e}")))?;
    let json_length = body.len();
    body.extend_from_slice(&binary);
    Ok((body, any_binary.then_some(json_length)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_json_and_binary_decode_to_the_same_tensor() {
        let json =
            br#"{"inputs":[{"name":"x","shape":[2,2],"datatype":"INT64","data":[[1,2],[3,-4]]}]}"#;
        let a = decode_request(json, None).unwrap();
        let header = br#"{"inputs":[{"name":"x","shape":[2,2],"datatype":"INT64","parameters":{"binary_data_size":32}}]}"#;
        let mut body = header.to_vec();
        for v in [1i64, 2, 3, -4] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        let b = decode_request(&body, Some(&header.len().to_string())).unwrap();
        assert_eq!(a.inputs, b.inputs);
        assert_eq!(a.inputs[0].1.as_slice::<i64>().unwrap(), &[1, 2, 3, -4]);
    }

    #[test]
    fn out_of_range_and_wrong_kind_values_are_errors() {
        let body = br#"{"inputs":[{"name":"x","shape":[1],"datatype":"UINT8","data":[300]}]}"#;
        let err = decode_request(body, None).err().unwrap().to_string();
        assert!(err.contains("not a UINT8"), "{err}");
        let body = br#"{"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","data":[1]}]}"#;
        assert!(decode_request(body, None).is_err());
    }

    #[test]
    fn fp16_round_trips_through_json() {
        let body =
            br#"{"inputs":[{"name":"h","shape":[3],"datatype":"FP16","data":[0.5,-2,65504]}]}"#;
        let decoded = decode_request(body, None).unwrap();
        let h = &decoded.inputs[0].1;
        assert_eq!(h.data().to_f64_vec(), vec![0.5, -2.0, 65504.0]);
        let (json, length) =
            encode_response("m", "1", None, vec![("h".into(), false, h.clone())]).unwrap();
        assert!(length.is_none());
        let json: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(json["outputs"][0]["datatype"], "FP16");
        assert_eq!(
            json["outputs"][0]["data"],
            serde_json::json!([0.5, -2.0, 65504.0])
        );
    }

    #[test]
    fn binary_response_puts_bytes_after_the_json() {
        let t = Tensor::from_vec(vec![2], vec![1.5f32, -2.0]).unwrap();
        let (body, length) = encode_response("m", "1", None, vec![("y".into(), true, t)]).unwrap();
        let length = length.unwrap();
        let json: Value = serde_json::from_slice(&body[..length]).unwrap();
        assert_eq!(json["outputs"][0]["parameters"]["binary_data_size"], 8);
        assert_eq!(&body[length..length + 4], &1.5f32.to_le_bytes());
    }
}
