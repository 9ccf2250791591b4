//! Any bytes given as an ONNX `TensorProto` (`input_0.pb`) decode or fail with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_core::tensor::onnx_pb;

fuzz_target!(|data: &[u8]| {
    if let Ok((name, tensor)) = onnx_pb::pb_from_bytes(data) {
        let (_, back) = onnx_pb::pb_from_bytes(&onnx_pb::pb_to_bytes(&name, &tensor))
            .expect("what decoded must re-encode and decode");
        assert_eq!(back.shape(), tensor.shape());
        assert_eq!(back.len(), tensor.len());
    }
});
