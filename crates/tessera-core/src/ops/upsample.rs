//! `Upsample` (opset 9 form: `scales` as an input), through tract's `Resize`.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__Upsample.html>.
//!
//! Supported: the `mode` attribute `nearest` (default) or `linear`, `scales` a constant (or
//! foldable) float vector with one value per input axis, any input type tract's `Resize`
//! takes. The opset 7 form, with `scales` as an attribute, is not supported.
//!
//! Upsample-9 is Resize-10 with the asymmetric coordinate transform; its nearest mode takes
//! the floor of the source coordinate (the reference repeats each element `scale` times).
//! So the node is handed to tract-onnx's own `Resize` builder as a Resize-10 node with
//! `nearest_mode = floor`.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::{AttributeProto, NodeProto};
use tract_onnx::tract_hir::internal::*;

/// Builds `Upsample`.
pub fn upsample(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    ensure!(
        node.input.len() == 2 && node.input.iter().all(|s| !s.is_empty()),
        "Upsample: only the opset 9 form (X and scales inputs) is supported"
    );
    ensure!(
        node.attribute.iter().all(|a| a.name == "mode"),
        "Upsample: unsupported attribute(s) {:?}",
        node.attribute.iter().map(|a| &a.name).collect::<Vec<_>>()
    );
    let mode = node.get_attr_opt::<&str>("mode")?.unwrap_or("nearest");
    ensure!(
        mode == "nearest" || mode == "linear",
        "Upsample: unsupported mode '{mode}'"
    );
    let resize = ctx
        .framework
        .op_register
        .0
        .get("Resize")
        .context("Upsample needs tract-onnx's Resize")?;
    let mut as_resize = node.clone();
    as_resize.op_type = "Resize".into();
    as_resize.attribute = vec![
        string_attr("mode", mode),
        string_attr("nearest_mode", "floor"),
    ];
    let mut resize_ctx = ctx.clone();
    resize_ctx.onnx_operator_set_version = 10;
    resize(&resize_ctx, &as_resize)
}

fn string_attr(name: &str, value: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: value.as_bytes().to_vec(),
        ..AttributeProto::default()
    }
}
