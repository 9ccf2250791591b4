//! Tensors across the JS boundary: `{ name, type, dims, data }` objects whose `type` names follow
//! onnxruntime-web (`float32`, `int64`, `bool`…) and whose `data` is the matching typed array.

use js_sys::{Array, Object, Reflect, Uint8Array};
use tessera::{DType, Dim, IoInfo, ModelInfo, Tensor};
use wasm_bindgen::prelude::*;

/// onnxruntime-web's name of an element type.
pub fn type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::F16 => "float16",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::Bool => "bool",
    }
}

fn dtype_of(name: &str) -> Result<DType, JsError> {
    DType::ALL
        .into_iter()
        .find(|&d| type_name(d) == name)
        .ok_or_else(|| {
            JsError::new(&format!(
                "unknown tensor type '{name}' (expected float32, float64, float16, int8, int16, int32, int64, uint8, uint16, uint32, uint64 or bool)"
            ))
        })
}

fn get(object: &JsValue, key: &str) -> Result<JsValue, JsError> {
    Reflect::get(object, &JsValue::from_str(key))
        .map_err(|_| JsError::new(&format!("a feed has no readable '{key}'")))
}

/// Named host tensors from the JS feeds.
pub fn feeds_from_js(feeds: &Array) -> Result<Vec<(String, Tensor)>, JsError> {
    feeds
        .iter()
        .map(|feed| {
            let name = get(&feed, "name")?
                .as_string()
                .ok_or_else(|| JsError::new("a feed's 'name' must be a string"))?;
            let what = |m: &str| JsError::new(&format!("input '{name}': {m}"));
            let dtype = dtype_of(
                &get(&feed, "type")?
                    .as_string()
                    .ok_or_else(|| what("'type' must be a string"))?,
            )?;
            let dims: Array = get(&feed, "dims")?
                .dyn_into()
                .map_err(|_| what("'dims' must be an array of numbers"))?;
            // Read through `Reflect` (a getter that throws is an `Err` here): an exception
            // thrown through the module would leave the session borrowed.
            let dims: Vec<f64> = (0..dims.length())
                .map(|i| {
                    Reflect::get_u32(&dims, i)
                        .ok()
                        .and_then(|d| d.as_f64())
                        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                        .ok_or_else(|| what("'dims' must hold non-negative integers"))
                })
                .collect::<Result<_, JsError>>()?;
            // Checked here with the core's overflow-checked count: a 32-bit usize would wrap
            // (`[65536, 65536]` holds 0 elements in wrapping arithmetic), and the tensor would
            // claim more than its data.
            let shape: Option<Vec<usize>> = dims
                .iter()
                .map(|&d| (d <= usize::MAX as f64).then_some(d as usize))
                .collect();
            let Some(shape) = shape.filter(|s| tessera::byte_count(dtype, s).is_some()) else {
                let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                return Err(what(&format!(
                    "dims [{}] hold more elements than fit in memory",
                    dims.join(", ")
                )));
            };
            let data = get(&feed, "data")?;
            let bytes =
                typed_array_bytes(&data).ok_or_else(|| what("'data' must be a typed array"))?;
            // One copy, from the JS array straight into the tensor's elements.
            let tensor = Tensor::from_le_bytes_with(dtype, shape, bytes.length() as usize, |e| {
                bytes.copy_to(e)
            })
            .map_err(|e| what(&e.to_string()))?;
            Ok((name, tensor))
        })
        .collect()
}

/// A byte view (no copy) of the memory a typed array views: little-endian, as wasm and every
/// browser are. An object that only looks like one (a `buffer` and a forged `byteLength`) is
/// refused here: the view's constructor would throw through the module instead.
fn typed_array_bytes(data: &JsValue) -> Option<Uint8Array> {
    if !js_sys::ArrayBuffer::is_view(data) {
        return None;
    }
    let buffer = Reflect::get(data, &"buffer".into()).ok()?;
    if !buffer.is_instance_of::<js_sys::ArrayBuffer>()
        && !buffer.is_instance_of::<js_sys::SharedArrayBuffer>()
    {
        return None;
    }
    let number = |object: &JsValue, key: &str| Reflect::get(object, &key.into()).ok()?.as_f64();
    let offset = number(data, "byteOffset")?;
    let length = number(data, "byteLength")?;
    let whole = number(&buffer, "byteLength")?;
    (offset >= 0.0 && length >= 0.0 && offset + length <= whole)
        .then(|| Uint8Array::new_with_byte_offset_and_length(&buffer, offset as u32, length as u32))
}

/// `{ name, type, dims, data }` for one tensor.
pub fn tensor_to_js(name: &str, tensor: Tensor) -> Result<JsValue, JsError> {
    let dtype = tensor.dtype();
    let dims: Array = tensor
        .shape()
        .iter()
        .map(|&d| JsValue::from_f64(d as f64))
        .collect();
    let bytes = Uint8Array::from(&*tensor.data().as_le_bytes());
    let buffer = bytes.buffer();
    let data: JsValue = match dtype {
        DType::F32 => js_sys::Float32Array::new(&buffer).into(),
        DType::F64 => js_sys::Float64Array::new(&buffer).into(),
        DType::F16 | DType::U16 => js_sys::Uint16Array::new(&buffer).into(),
        DType::I8 => js_sys::Int8Array::new(&buffer).into(),
        DType::I16 => js_sys::Int16Array::new(&buffer).into(),
        DType::I32 => js_sys::Int32Array::new(&buffer).into(),
        DType::I64 => js_sys::BigInt64Array::new(&buffer).into(),
        DType::U8 | DType::Bool => bytes.into(),
        DType::U32 => js_sys::Uint32Array::new(&buffer).into(),
        DType::U64 => js_sys::BigUint64Array::new(&buffer).into(),
    };
    let object = Object::new();
    let set = |key: &str, value: &JsValue| {
        Reflect::set(&object, &key.into(), value).map_err(|_| JsError::new("building an output"))
    };
    set("name", &name.into())?;
    set("type", &type_name(dtype).into())?;
    set("dims", &dims)?;
    set("data", &data)?;
    Ok(object.into())
}

/// `{ name, [key]: value }`.
pub fn named(key: &str, name: &str, value: &JsValue) -> Result<JsValue, JsError> {
    let object = Object::new();
    let set = |k: &str, v: &JsValue| {
        Reflect::set(&object, &k.into(), v).map_err(|_| JsError::new("building an output"))
    };
    set("name", &name.into())?;
    set(key, value)?;
    Ok(object.into())
}

/// The outputs, in order, as an array of tensor objects.
pub fn outputs_to_js(outputs: Vec<(String, Tensor)>) -> Result<Array, JsError> {
    outputs
        .into_iter()
        .map(|(name, tensor)| tensor_to_js(&name, tensor))
        .collect()
}

fn io_json(io: &IoInfo) -> serde_json::Value {
    let dims = io.dims.as_ref().map(|dims| {
        dims.iter()
            .map(|d| match d {
                Dim::Fixed(n) => serde_json::json!(n),
                Dim::Symbol(s) => serde_json::json!(s),
                Dim::Unknown => serde_json::Value::Null,
            })
            .collect::<Vec<_>>()
    });
    serde_json::json!({ "name": io.name, "type": type_name(io.dtype), "dims": dims })
}

/// The model's inputs and outputs (see [`crate::WasmSession::metadata`]).
pub fn metadata_json(info: &ModelInfo) -> String {
    serde_json::json!({
        "inputs": info.inputs.iter().map(io_json).collect::<Vec<_>>(),
        "outputs": info.outputs.iter().map(io_json).collect::<Vec<_>>(),
        "opset": info.opset,
    })
    .to_string()
}
