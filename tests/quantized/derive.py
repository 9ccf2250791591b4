"""Derives the quantized conformance suite from the shared float models (not checked in).

For each model of MODELS and each variant of VARIANTS, onnxruntime's quantizer writes
OUT/<model>__<variant>/model.onnx, with test_data_set_0/ holding the float model's stored inputs
and onnxruntime's outputs on the quantized model (1 thread, all graph optimizations), and
reference.json holding, per output, onnxruntime's deviation from the float model's stored output
(the quantization error tessera's outputs are compared with). Calibration for the static variants
uses the stored inputs. A variant the quantizer refuses is recorded with its error in
OUT/manifest.json (and the test lists it), not dropped.

Usage: python derive.py SHARED_MODELS_DIR OUT_DIR
Versions: tests/quantized/requirements.txt (pinned).
"""
import json
import os
import shutil
import sys
import traceback

import numpy as np
import onnx
import onnx.version_converter
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

# Models with real weights (the light_* models compute theirs with ConstantOfShape: nothing to
# quantize). silero_vad_v5 has an LSTM: dynamic quantization makes it com.microsoft DynamicQuantizeLSTM.
MODELS = ["mtcnn_pnet", "mtcnn_rnet", "mtcnn_onet", "ppocr_mobile_cls", "ppocrv4_rec",
          "magika_v3_3", "minilm_l3_paraphrase", "silero_vad_v5"]
# Static quantization needs float activations to calibrate: models whose inputs are integers
# (magika's bytes, minilm's token ids) still calibrate fine, their activations are float.
VARIANTS = {
    "dynamic_s8": dict(kind="dynamic", weight_type=QuantType.QInt8),
    "dynamic_u8": dict(kind="dynamic", weight_type=QuantType.QUInt8),
    "qdq_tensor": dict(kind="static", quant_format=QuantFormat.QDQ, per_channel=False),
    "qdq_channel": dict(kind="static", quant_format=QuantFormat.QDQ, per_channel=True),
    "qoperator": dict(kind="static", quant_format=QuantFormat.QOperator, per_channel=False),
}


def stored(model_dir):
    data = os.path.join(model_dir, "test_data_set_0")
    inputs = sorted(f for f in os.listdir(data) if f.startswith("input_"))
    outputs = sorted(f for f in os.listdir(data) if f.startswith("output_"))
    load = lambda f: onnx.load_tensor(os.path.join(data, f))
    return [load(f) for f in inputs], [load(f) for f in outputs]


class Feeds(CalibrationDataReader):
    def __init__(self, feeds):
        self.feeds = [feeds]

    def get_next(self):
        return self.feeds.pop() if self.feeds else None


def session(path, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = level
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def output_steps(path):
    """Per graph output made by a DequantizeLinear of constant scale: its largest scale (one
    quantization step of that output)."""
    graph = onnx.load(path).graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    producers = {o: n for n in graph.node for o in n.output}
    steps = {}
    for output in graph.output:
        node = producers.get(output.name)
        # A Softmax/Identity/Reshape after the last DequantizeLinear keeps its step.
        while node is not None and node.op_type in ("Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"):
            node = producers.get(node.input[0])
        if node is not None and node.op_type == "DequantizeLinear" and node.input[1] in constants:
            steps[output.name] = float(np.max(constants[node.input[1]]))
    return steps


def derive(src_dir, out_dir, variant, spec):
    os.makedirs(os.path.join(out_dir, "test_data_set_0"), exist_ok=True)
    inputs, float_outputs = stored(src_dir)
    names = [i.name for i in session(os.path.join(src_dir, "model.onnx")).get_inputs()]
    feeds = {n: numpy_helper.to_array(t) for n, t in zip(names, inputs)}
    model = os.path.join(out_dir, "model.onnx")
    # onnxruntime's recommended first step: shape inference and graph optimization.
    source = os.path.join(out_dir, "preprocessed.onnx")
    try:
        quant_pre_process(os.path.join(src_dir, "model.onnx"), source)
    except Exception:  # its symbolic shape inference fails on some graphs (silero's If)
        quant_pre_process(os.path.join(src_dir, "model.onnx"), source, skip_symbolic_shape=True)
    if spec.get("per_channel"):
        # Per-channel DequantizeLinear (its axis attribute) needs opset 13.
        graph = onnx.load(source)
        opset = next((o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")), 13)
        if opset < 13:
            onnx.save(onnx.version_converter.convert_version(graph, 13), source)
    if spec["kind"] == "dynamic":
        quantize_dynamic(source, model, weight_type=spec["weight_type"])
    else:
        quantize_static(source, model, Feeds(feeds), quant_format=spec["quant_format"],
                        per_channel=spec["per_channel"], activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
    quantized = session(model)
    outputs = quantized.run(None, feeds)
    # onnxruntime against itself: its fused integer kernels (all optimizations) and the plain
    # graph (none) round differently; how far they part is the spread a rounding tie can cause.
    plain = session(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, feeds)
    steps = output_steps(model)
    reference = {}
    for i, (t, meta) in enumerate(zip(inputs, quantized.get_inputs())):
        t = onnx.TensorProto.FromString(t.SerializeToString())
        t.name = meta.name
        open(os.path.join(out_dir, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (value, meta, float_ref) in enumerate(zip(outputs, quantized.get_outputs(), float_outputs)):
        tensor = numpy_helper.from_array(value, meta.name)
        open(os.path.join(out_dir, "test_data_set_0", f"output_{i}.pb"), "wb").write(tensor.SerializeToString())
        float_value = numpy_helper.to_array(float_ref)
        if value.dtype.kind == "f" and value.size:
            entry = {"ort_spread_max": float(np.abs(value.astype(np.float64) - plain[i]).max())}
            if float_value.shape == value.shape:
                error = np.abs(value.astype(np.float64) - float_value)
                entry["ort_vs_float_max"] = float(error.max())
                entry["ort_vs_float_mean"] = float(error.mean())
            if meta.name in steps:
                entry["step"] = steps[meta.name]
            reference[meta.name] = entry
    os.remove(source)
    ops = sorted({(n.domain or "ai.onnx") + ":" + n.op_type for n in onnx.load(model, load_external_data=False).graph.node})
    json.dump({"variant": variant, "ops": ops, "outputs": reference}, open(os.path.join(out_dir, "reference.json"), "w"), indent=1)


def main():
    shared, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    # quant_pre_process and the calibrator write scratch files into the working directory.
    os.makedirs(os.path.join(out, "scratch"), exist_ok=True)
    os.chdir(os.path.join(out, "scratch"))
    manifest = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "cases": {}}
    for name in MODELS:
        for variant, spec in VARIANTS.items():
            case = f"{name}__{variant}"
            try:
                derive(os.path.join(shared, name), os.path.join(out, case), variant, spec)
                manifest["cases"][case] = "derived"
            except Exception as error:  # recorded, and listed by the test: never dropped silently
                manifest["cases"][case] = "quantizer failed: " + (str(error).splitlines() or [repr(error)])[0][:300]
                traceback.print_exc()
            print(case, manifest["cases"][case], flush=True)
    json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)
    os.chdir(out)
    shutil.rmtree(os.path.join(out, "scratch"))


if __name__ == "__main__":
    main()
