"""Derives the quantized conformance suite from the shared float models (not checked in).

For each model of MODELS and each variant of VARIANTS, onnxruntime's quantizer writes
OUT/<model>__<variant>/model.onnx, with test_data_set_0/ holding the float model's stored inputs
and onnxruntime's outputs on the quantized model (1 thread, all graph optimizations), and
reference.json holding, per output, onnxruntime's deviation from the float model's stored output
(the quantization error tessera's outputs are compared with). Calibration for the static variants
uses the stored inputs. A variant the quantizer refuses is recorded with its error in
OUT/manifest.json (and the test lists it), not dropped.

OUT/microsoft_ops/ holds one small model per com.microsoft quantization operator (see
derive_microsoft_ops), with onnxruntime's outputs.

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
    # On x86-64 without VNNI (AVX2: Zen 3, most desktops) onnxruntime's default u8 × s8 kernels
    # add pairs of products in 16 bits, which saturate: its outputs there are not the ops'
    # values (QOperator mtcnn off by 17 steps). Its exact u8 × u8 path instead, the same answers
    # it gives on VNNI machines, where this setting changes nothing.
    options.add_session_config_entry("session.x64quantprecision", "1")
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


# ---- com.microsoft quantization operators, one small model each ----------------------------------
# onnxruntime's quantizer (QOperator format) and its graph optimizer write these; each case is one
# node with seeded random inputs, onnxruntime's output (its kernel, no fusion) as reference.
# DynamicQuantizeLSTM comes from quantize_dynamic on a float LSTM, whose output is kept too; plain
# reverse-direction LSTM/GRU/RNN layers are checked here as well (onnx<Op>_reverse).
MS = "com.microsoft"


def ms_cases(rng):
    from onnx import TensorProto, helper
    u8, s8 = np.uint8, np.int8
    q = lambda shape, dt: rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, size=shape, dtype=dt)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    const = lambda name, value: numpy_helper.from_array(np.asarray(value), name)
    scalar = lambda v: np.float32(v)
    cases = {}

    def case(name, node, inputs, consts, outputs, opset=13):
        """inputs: {name: array} fed at run time; consts: {name: array} initializers;
        outputs: [(name, onnx elem type)]."""
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in inputs.items()],
            [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
            [const(n, v) for n, v in consts.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
        cases[name] = (model, inputs)

    def unary(name, op, dt, shape, zp_x, zp_y, **attrs):
        case(name, helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs),
             # Scales whose ratio is not a short fraction: with 0.05 / 0.02 half the outputs would
             # sit exactly on rounding ties (tract rounds x * (1/scale), onnxruntime x / scale).
             {"x": q(shape, dt)}, {"xs": scalar(0.05), "xz": dt(zp_x), "ys": scalar(0.021), "yz": dt(zp_y)},
             [("y", helper.np_dtype_to_tensor_dtype(np.dtype(dt)))])

    for op, dt in [("QLinearAdd", u8), ("QLinearAdd", s8), ("QLinearMul", u8), ("QLinearMul", s8)]:
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        zp = (128, 120, 131) if dt == u8 else (-3, 5, 0)
        case(f"{op}_{np.dtype(dt).name}", helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"], domain=MS),
             {"a": q((2, 3, 4, 5), dt), "b": q((1, 3, 1, 5), dt)},
             {"as": scalar(0.031), "az": dt(zp[0]), "bs": scalar(0.017), "bz": dt(zp[1]),
              "cs": scalar(0.07 if op == "QLinearAdd" else 0.9), "cz": dt(zp[2])}, [("c", t)])
    unary("QLinearSigmoid_uint8", "QLinearSigmoid", u8, (3, 50), 128, 0)
    unary("QLinearSigmoid_int8", "QLinearSigmoid", s8, (3, 50), 4, -128)
    unary("QLinearLeakyRelu_uint8", "QLinearLeakyRelu", u8, (3, 50), 100, 60, alpha=0.1)
    unary("QLinearLeakyRelu_int8", "QLinearLeakyRelu", s8, (3, 50), -10, -30, alpha=0.2)
    for dt, zp_y in [(u8, 0), (s8, -128)]:
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        for node_opset, axis in [(13, -1), (13, 1), (11, 1)]:
            case(f"QLinearSoftmax_opset{node_opset}_axis{axis}_{np.dtype(dt).name}",
                 helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, opset=node_opset, axis=axis),
                 {"x": q((2, 3, 10), dt)}, {"xs": scalar(0.08), "xz": dt(0 if dt == s8 else 128), "ys": scalar(1 / 256), "yz": dt(zp_y)},
                 [("y", t)])
    case("QLinearConcat_uint8", helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz", "c", "cs", "cz"], ["y"], domain=MS, axis=1),
         {"a": q((2, 3, 4), u8), "b": q((2, 1, 4), u8), "c": q((2, 2, 4), u8)},
         {"ys": scalar(0.05), "yz": u8(128), "as": scalar(0.03), "az": u8(120), "bs": scalar(0.05), "bz": u8(128), "cs": scalar(0.08), "cz": u8(140)},
         [("y", TensorProto.UINT8)])
    for dt in (u8, s8):
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        zx, zy = (128, 100) if dt == u8 else (-5, 7)
        case(f"QLinearGlobalAveragePool_{np.dtype(dt).name}", helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS),
             {"x": q((1, 8, 7, 7), dt)}, {"xs": scalar(0.04), "xz": dt(zx), "ys": scalar(0.01), "yz": dt(zy)}, [("y", t)])
        case(f"QLinearAveragePool_{np.dtype(dt).name}", helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                                                                         kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0),
             {"x": q((1, 4, 9, 9), dt)}, {"xs": scalar(0.04), "xz": dt(zx), "ys": scalar(0.03), "yz": dt(zy)}, [("y", t)])
    case("QLinearAveragePool_ceil_include_pad_uint8", helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS,
                                                                       kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1, count_include_pad=1),
         {"x": q((1, 3, 6, 7), u8)}, {"xs": scalar(0.04), "xz": u8(128), "ys": scalar(0.03), "yz": u8(128)}, [("y", TensorProto.UINT8)])
    # QGemm: quantized output with an int32 bias; float output with per-column B, transB, alpha.
    case("QGemm_u8s8_bias_quantized", helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], ["y"], domain=MS),
         {"a": q((4, 16), u8)},
         {"as": scalar(0.02), "az": u8(128), "b": q((16, 8), s8), "bs": scalar(0.01), "bz": s8(0),
          "c": rng.integers(-5000, 5000, size=(8,), dtype=np.int32), "ys": scalar(0.15), "yz": u8(128)},
         [("y", TensorProto.UINT8)])
    case("QGemm_u8s8_per_column_transB_alpha_float", helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c"], ["y"], domain=MS, transB=1, alpha=0.5),
         {"a": q((4, 16), u8)},
         {"as": scalar(0.02), "az": u8(100), "b": q((8, 16), s8), "bs": (rng.random(8) * 0.02 + 0.005).astype(np.float32),
          "bz": np.zeros(8, s8), "c": rng.integers(-5000, 5000, size=(4, 8), dtype=np.int32)},
         [("y", TensorProto.FLOAT)])
    case("QGemm_u8u8_transA_float", helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz"], ["y"], domain=MS, transA=1),
         {"a": q((16, 4), u8)},
         {"as": scalar(0.02), "az": u8(100), "b": q((16, 8), u8), "bs": scalar(0.01), "bz": u8(130)},
         [("y", TensorProto.FLOAT)])
    case("MatMulIntegerToFloat_u8s8_per_column_bias", helper.make_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz", "bias"], ["y"], domain=MS),
         {"a": q((2, 3, 16), u8)},
         {"b": q((16, 8), s8), "as": scalar(0.03), "bs": (rng.random(8) * 0.02 + 0.005).astype(np.float32), "az": u8(128),
          "bz": np.zeros(8, s8), "bias": f(8)},
         [("y", TensorProto.FLOAT)])
    case("MatMulIntegerToFloat_u8u8", helper.make_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz"], ["y"], domain=MS),
         {"a": q((3, 16), u8)},
         {"b": q((16, 8), u8), "as": scalar(0.03), "bs": scalar(0.01), "az": u8(120), "bz": u8(128)},
         [("y", TensorProto.FLOAT)])
    case("DynamicQuantizeMatMul_s8_per_column_bias", helper.make_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", "bias"], ["y"], domain=MS),
         {"a": f(2, 5, 16)},
         {"b": q((16, 8), s8), "bs": (rng.random(8) * 0.02 + 0.005).astype(np.float32), "bz": np.zeros(8, s8), "bias": f(8)},
         [("y", TensorProto.FLOAT)])
    case("DynamicQuantizeMatMul_u8", helper.make_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz"], ["y"], domain=MS),
         {"a": f(4, 16)}, {"b": q((16, 8), u8), "bs": scalar(0.01), "bz": u8(128)}, [("y", TensorProto.FLOAT)])
    return cases


def float_rnn(rng, op, direction, batch, outputs):
    from onnx import TensorProto, helper
    d = 2 if direction == "bidirectional" else 1
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    inp, hidden, seq = 8, 6, 5
    w = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)
    node = helper.make_node(op, ["x", "W", "R", "B"], list(outputs), hidden_size=hidden, direction=direction)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                              [numpy_helper.from_array(w(d, gates * hidden, inp), "W"), numpy_helper.from_array(w(d, gates * hidden, hidden), "R"),
                               numpy_helper.from_array(w(d, 2 * gates * hidden), "B")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), {"x": rng.standard_normal((seq, batch, inp)).astype(np.float32)}


def write_case(out_dir, model, feeds, float_outputs=None):
    os.makedirs(os.path.join(out_dir, "test_data_set_0"), exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    onnx.save(model, path)
    # Extended, not none: the level at which onnxruntime turns s8 weights into u8 ones for its
    # exact u8 × u8 kernels on x86-64 without VNNI (see `session`); these one-node graphs have
    # nothing else for it to rewrite.
    ran = session(path, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    outputs = ran.run(None, feeds)
    for i, (name, value) in enumerate(feeds.items()):
        open(os.path.join(out_dir, "test_data_set_0", f"input_{i}.pb"), "wb").write(numpy_helper.from_array(value, name).SerializeToString())
    for i, (value, meta) in enumerate(zip(outputs, ran.get_outputs())):
        open(os.path.join(out_dir, "test_data_set_0", f"output_{i}.pb"), "wb").write(numpy_helper.from_array(value, meta.name).SerializeToString())
    for i, value in enumerate(float_outputs or []):
        open(os.path.join(out_dir, "test_data_set_0", f"float_output_{i}.pb"), "wb").write(numpy_helper.from_array(value, ran.get_outputs()[i].name).SerializeToString())
    ops = sorted({(n.domain or "ai.onnx") + ":" + n.op_type for n in onnx.load(path).graph.node})
    json.dump({"ops": ops}, open(os.path.join(out_dir, "reference.json"), "w"), indent=1)


def derive_microsoft_ops(out):
    rng = np.random.default_rng(20261126)
    names = []
    for name, (model, feeds) in ms_cases(rng).items():
        write_case(os.path.join(out, name), model, feeds)
        names.append(name)
    # A single-direction layer with batch > 1 whose Y_c is read is refused by tract (a Scan shape
    # clash): the forward case reads Y and Y_h only, the reverse one has batch 1.
    for direction, batch, outputs in [("forward", 2, ("y", "y_h")), ("reverse", 1, ("y", "y_h", "y_c")),
                                      ("bidirectional", 2, ("y", "y_h", "y_c"))]:
        model, feeds = float_rnn(rng, "LSTM", direction, batch, outputs)
        float_path = os.path.join(out, "float_lstm.onnx")
        onnx.save(model, float_path)
        float_outputs = session(float_path).run(None, feeds)
        name = f"DynamicQuantizeLSTM_{direction}"
        quantize_dynamic(float_path, os.path.join(out, "lstm_q.onnx"), weight_type=QuantType.QInt8)
        quantized = onnx.load(os.path.join(out, "lstm_q.onnx"))
        assert any(n.op_type == "DynamicQuantizeLSTM" for n in quantized.graph.node), "no DynamicQuantizeLSTM written"
        write_case(os.path.join(out, name), quantized, feeds, float_outputs)
        os.remove(float_path)
        os.remove(os.path.join(out, "lstm_q.onnx"))
        names.append(name)
    # Plain ONNX recurrent layers run in reverse (tract ignores `direction`; the core rewrites it).
    for op in ("LSTM", "GRU", "RNN"):
        model, feeds = float_rnn(rng, op, "reverse", 2, ("y", "y_h"))
        name = f"onnx{op}_reverse"
        write_case(os.path.join(out, name), model, feeds)
        names.append(name)
    json.dump({"onnxruntime": ort.__version__, "cases": sorted(names)}, open(os.path.join(out, "manifest.json"), "w"), indent=1)


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
    derive_microsoft_ops(os.path.join(out, "microsoft_ops"))
    os.chdir(out)
    shutil.rmtree(os.path.join(out, "scratch"))


if __name__ == "__main__":
    main()
