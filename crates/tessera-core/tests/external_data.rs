//! A model whose weights live in a separate file (ONNX external data) loads from its folder and
//! gives the same outputs as the self-contained original.

use prost::Message;
use std::path::Path;
use tessera_core::tract_onnx::pb::{self, StringStringEntryProto};
use tessera_core::tract_onnx::prelude::*;
use tessera_core::{Model, tensor::onnx_pb::read_pb};

#[test]
fn external_data_loads_from_the_model_folder() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/text-orientation");
    let original = std::fs::read(example.join("model.onnx")).unwrap();
    let mut proto = pb::ModelProto::decode(&original[..]).unwrap();

    // Move every initializer larger than 1 KiB into weights.bin, as onnx's save_as_external_data does.
    let mut weights = Vec::new();
    let graph = proto.graph.as_mut().unwrap();
    // This exporter stores weights as Constant nodes: turn the large ones into initializers first.
    let mut kept = Vec::new();
    for node in std::mem::take(&mut graph.node) {
        let tensor = node
            .attribute
            .iter()
            .find(|a| a.name == "value")
            .and_then(|a| a.t.clone());
        match tensor {
            Some(mut t) if node.op_type == "Constant" && t.raw_data.len() > 1024 => {
                t.name = node.output[0].clone();
                graph.initializer.push(t);
            }
            _ => kept.push(node),
        }
    }
    graph.node = kept;
    let mut moved = 0;
    for init in graph
        .initializer
        .iter_mut()
        .filter(|i| i.raw_data.len() > 1024)
    {
        let offset = weights.len();
        weights.extend_from_slice(&init.raw_data);
        let entry = |key: &str, value: String| StringStringEntryProto {
            key: key.into(),
            value,
        };
        init.external_data = vec![
            entry("location", "weights.bin".into()),
            entry("offset", offset.to_string()),
            entry("length", init.raw_data.len().to_string()),
        ];
        init.data_location = Some(1);
        init.raw_data.clear();
        moved += 1;
    }
    assert!(
        moved > 10,
        "the example should have large initializers to move"
    );

    let dir = std::env::temp_dir().join(format!("tessera-external-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.onnx"), proto.encode_to_vec()).unwrap();
    std::fs::write(dir.join("weights.bin"), &weights).unwrap();

    let (_, input) = read_pb(&example.join("test_data_set_0/input_0.pb")).unwrap();
    let run = |model: &Model| {
        let lowered = model.lower(std::slice::from_ref(&input), None).unwrap();
        let plan = lowered.typed.into_runnable().unwrap();
        let value = tessera_core::tract_bridge::to_tract(&input).unwrap();
        let out = plan.run(tvec!(value.into())).unwrap();
        tessera_core::tract_bridge::from_tract(&out[0]).unwrap()
    };
    let external = Model::load(dir.join("model.onnx")).unwrap();
    let inline = Model::from_bytes(&original).unwrap();
    assert_eq!(run(&external), run(&inline));

    // Without its folder (bytes only), the external weights cannot be found: an error, not a panic.
    assert!(Model::from_bytes(&proto.encode_to_vec()).is_err());
}
