#!/usr/bin/env python3
"""Writes the damaged-model corpus of web/test/damaged.test.mjs: small ONNX files that decode as
protobuf but are semantically broken (out-of-range constant indices, impossible reshapes, missing
inputs, initializers shorter than their dims, huge dims...). Each must be refused with an Error,
at load or at run, never trap the wasm module.

    python3 -m venv venv && venv/bin/pip install onnx && venv/bin/python web/test/corpus/make_corpus.py

Writes web/test/corpus/semantic/<name>.onnx and web/test/corpus/semantic/manifest.json (name,
what is wrong, and the feeds to run it with if it loads). The output is deterministic."""

import json
import os
import struct

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "semantic")
F, I64 = TensorProto.FLOAT, TensorProto.INT64

cases = []
os.makedirs(OUT, exist_ok=True)
for old in os.listdir(OUT):
    os.remove(os.path.join(OUT, old))


def const(name, dtype, dims, values):
    return helper.make_tensor(name, dtype, dims, values)


def raw(name, dtype, dims, data: bytes):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = data
    return t


def vi(name, dtype, dims):
    return helper.make_tensor_value_info(name, dtype, dims)


def model(name, what, nodes, inputs, outputs, inits=(), opset=13, feeds=None, value_info=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tessera-damaged-corpus")
    m.ir_version = 8
    save(name, what, m.SerializeToString(), feeds)


def save(name, what, data, feeds=None):
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(data)
    cases.append({"name": name, "what": what, "feeds": feeds or {}})


x23 = vi("x", F, [2, 3])
y_any = vi("y", F, None)
feed_x23 = {"x": {"type": "float32", "dims": [2, 3]}}

# --- Gather / GatherElements / OneHot / ScatterND with constant indices out of range ------------
model("gather_const_indices_oob", "Gather of constant data with constant index 10 on an axis of 3",
      [helper.make_node("Gather", ["data", "idx"], ["y"], axis=0)], [], [y_any],
      [const("data", F, [3, 2], [1, 2, 3, 4, 5, 6]), const("idx", I64, [1], [10])])
model("gather_const_indices_negative_oob", "Gather with constant index -100 on an axis of 2",
      [helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)], [x23], [y_any],
      [const("idx", I64, [2], [0, -100])], feeds=feed_x23)
model("gather_input_const_indices_oob", "Gather of the input with constant index 7 on an axis of 2",
      [helper.make_node("Gather", ["x", "idx"], ["y"], axis=0)], [x23], [y_any],
      [const("idx", I64, [1], [7])], feeds=feed_x23)
model("gather_axis_oob", "Gather along axis 5 of a rank-2 input",
      [helper.make_node("Gather", ["x", "idx"], ["y"], axis=5)], [x23], [y_any],
      [const("idx", I64, [1], [0])], feeds=feed_x23)
model("gather_runtime_indices", "Gather whose indices come from the input (fed 1000000 and -7)",
      [helper.make_node("Gather", ["data", "i"], ["y"], axis=0)], [vi("i", I64, [2])], [y_any],
      [const("data", F, [3], [1, 2, 3])],
      feeds={"i": {"type": "int64", "dims": [2], "values": [1000000, -7]}})
model("gather_elements_const_oob", "GatherElements with constant index 9 on an axis of 3",
      [helper.make_node("GatherElements", ["x", "idx"], ["y"], axis=1)], [x23], [y_any],
      [const("idx", I64, [2, 3], [0, 1, 9, 0, 1, 2])], feeds=feed_x23)
model("gather_elements_const_data_oob", "GatherElements of constants with index -50",
      [helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=0)], [], [y_any],
      [const("data", F, [2, 2], [1, 2, 3, 4]), const("idx", I64, [2, 2], [0, -50, 1, 0])])
model("gather_nd_const_oob", "GatherND with constant index 5 on an axis of 2",
      [helper.make_node("GatherND", ["x", "idx"], ["y"])], [x23], [y_any],
      [const("idx", I64, [1, 2], [5, 0])], feeds=feed_x23)
model("scatter_nd_const_oob", "ScatterND writing at constant index 40 of an axis of 2",
      [helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"])], [x23], [y_any],
      [const("idx", I64, [1, 1], [40]), const("upd", F, [1, 3], [1, 1, 1])], feeds=feed_x23)
model("scatter_elements_const_oob", "ScatterElements writing at constant index 30 of an axis of 3",
      [helper.make_node("ScatterElements", ["x", "idx", "upd"], ["y"], axis=1)], [x23], [y_any],
      [const("idx", I64, [1, 1], [30]), const("upd", F, [1, 1], [1])], feeds=feed_x23)
model("onehot_negative_depth", "OneHot with depth -3",
      [helper.make_node("OneHot", ["i", "depth", "values"], ["y"])], [], [y_any],
      [const("i", I64, [2], [0, 1]), const("depth", I64, [1], [-3]), const("values", F, [2], [0, 1])])
model("onehot_huge_depth", "OneHot with depth 10^12",
      [helper.make_node("OneHot", ["i", "depth", "values"], ["y"])], [], [y_any],
      [const("i", I64, [2], [0, 1]), const("depth", I64, [1], [10**12]), const("values", F, [2], [0, 1])])
model("onehot_values_short", "OneHot whose values input has one element instead of two",
      [helper.make_node("OneHot", ["i", "depth", "values"], ["y"])], [], [y_any],
      [const("i", I64, [2], [0, 1]), const("depth", I64, [1], [4]), const("values", F, [1], [1])])

# --- Shapes ------------------------------------------------------------------------------------
model("reshape_impossible", "Reshape of 6 elements to [4, 5]",
      [helper.make_node("Reshape", ["x", "s"], ["y"])], [x23], [y_any],
      [const("s", I64, [2], [4, 5])], feeds=feed_x23)
model("reshape_const_impossible", "Reshape of 4 constant elements to [3, -1]",
      [helper.make_node("Reshape", ["c", "s"], ["y"])], [], [y_any],
      [const("c", F, [4], [1, 2, 3, 4]), const("s", I64, [2], [3, -1])])
model("reshape_two_wildcards", "Reshape to [-1, -1]",
      [helper.make_node("Reshape", ["x", "s"], ["y"])], [x23], [y_any],
      [const("s", I64, [2], [-1, -1])], feeds=feed_x23)
model("reshape_negative", "Reshape to [-5, 2]",
      [helper.make_node("Reshape", ["x", "s"], ["y"])], [x23], [y_any],
      [const("s", I64, [2], [-5, 2])], feeds=feed_x23)
model("reshape_zero_copies_missing", "Reshape to [0, 0, 0] (copies dims the input lacks)",
      [helper.make_node("Reshape", ["x", "s"], ["y"])], [x23], [y_any],
      [const("s", I64, [3], [0, 0, 0])], feeds=feed_x23)
model("reshape_huge", "Reshape to [2^40, 2^40, 0, -1]",
      [helper.make_node("Reshape", ["x", "s"], ["y"])], [x23], [y_any],
      [const("s", I64, [4], [2**40, 2**40, 0, -1])], feeds=feed_x23)
model("expand_huge", "Expand to [10^6, 10^6, 10^6]",
      [helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", F, [1])], [y_any],
      [const("s", I64, [3], [10**6, 10**6, 10**6])], feeds={"x": {"type": "float32", "dims": [1]}})
model("constant_of_shape_huge", "ConstantOfShape [2^31, 2^31]",
      [helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [y_any],
      [const("s", I64, [2], [2**31, 2**31])])
model("constant_of_shape_negative", "ConstantOfShape [-4]",
      [helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [y_any],
      [const("s", I64, [1], [-4])])
model("tile_huge", "Tile by [10^9, 10^9]",
      [helper.make_node("Tile", ["x", "r"], ["y"])], [x23], [y_any],
      [const("r", I64, [2], [10**9, 10**9])], feeds=feed_x23)
model("tile_negative", "Tile by [-1, 2]",
      [helper.make_node("Tile", ["x", "r"], ["y"])], [x23], [y_any],
      [const("r", I64, [2], [-1, 2])], feeds=feed_x23)
model("range_zero_delta", "Range(0, 10, 0)",
      [helper.make_node("Range", ["a", "b", "d"], ["y"])], [], [y_any],
      [const("a", F, [], [0]), const("b", F, [], [10]), const("d", F, [], [0])], opset=11)
model("range_huge", "Range(0, 10^12, 1) in int64",
      [helper.make_node("Range", ["a", "b", "d"], ["y"])], [], [y_any],
      [const("a", I64, [], [0]), const("b", I64, [], [10**12]), const("d", I64, [], [1])], opset=11)
model("range_nan", "Range(0, NaN, 1)",
      [helper.make_node("Range", ["a", "b", "d"], ["y"])], [], [y_any],
      [const("a", F, [], [0]), const("b", F, [], [float("nan")]), const("d", F, [], [1])], opset=11)
model("slice_zero_step", "Slice with step 0",
      [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [x23], [y_any],
      [const("st", I64, [1], [0]), const("en", I64, [1], [3]), const("ax", I64, [1], [1]),
       const("sp", I64, [1], [0])], feeds=feed_x23)
model("slice_axis_oob", "Slice along axis 7 of a rank-2 input",
      [helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], [x23], [y_any],
      [const("st", I64, [1], [0]), const("en", I64, [1], [1]), const("ax", I64, [1], [7])],
      feeds=feed_x23)
model("slice_mismatched_lengths", "Slice with 2 starts, 1 end and 3 axes",
      [helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], [x23], [y_any],
      [const("st", I64, [2], [0, 0]), const("en", I64, [1], [1]), const("ax", I64, [3], [0, 1, 0])],
      feeds=feed_x23)
model("transpose_bad_perm", "Transpose with perm [0, 0]",
      [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [x23], [y_any], feeds=feed_x23)
model("transpose_perm_oob", "Transpose with perm [1, 9]",
      [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 9])], [x23], [y_any], feeds=feed_x23)
model("concat_axis_oob", "Concat along axis 4 of rank-2 inputs",
      [helper.make_node("Concat", ["x", "x"], ["y"], axis=4)], [x23], [y_any], feeds=feed_x23)
model("concat_mismatched", "Concat of [2, 3] and a constant [4, 4] along axis 0",
      [helper.make_node("Concat", ["x", "c"], ["y"], axis=0)], [x23], [y_any],
      [const("c", F, [4, 4], [0] * 16)], feeds=feed_x23)
model("split_bad_sizes", "Split of an axis of 3 into [2, 5]",
      [helper.make_node("Split", ["x", "s"], ["y", "z"], axis=1)], [x23], [y_any, vi("z", F, None)],
      [const("s", I64, [2], [2, 5])], feeds=feed_x23)
model("squeeze_non_one", "Squeeze of axis 1 (size 3)",
      [helper.make_node("Squeeze", ["x", "a"], ["y"])], [x23], [y_any],
      [const("a", I64, [1], [1])], feeds=feed_x23)
model("unsqueeze_axis_oob", "Unsqueeze at axis 9",
      [helper.make_node("Unsqueeze", ["x", "a"], ["y"])], [x23], [y_any],
      [const("a", I64, [1], [9])], feeds=feed_x23)
model("flatten_axis_oob", "Flatten at axis 6",
      [helper.make_node("Flatten", ["x"], ["y"], axis=6)], [x23], [y_any], feeds=feed_x23)
model("softmax_axis_oob", "Softmax along axis 10",
      [helper.make_node("Softmax", ["x"], ["y"], axis=10)], [x23], [y_any], feeds=feed_x23)
model("reduce_axes_oob", "ReduceSum over axis 12",
      [helper.make_node("ReduceSum", ["x", "a"], ["y"])], [x23], [y_any],
      [const("a", I64, [1], [12])], feeds=feed_x23)
model("topk_k_too_big", "TopK with k = 50 on an axis of 3",
      [helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=1)], [x23], [y_any, vi("i", I64, None)],
      [const("k", I64, [1], [50])], feeds=feed_x23)
model("pad_huge", "Pad by 2^40 on each side",
      [helper.make_node("Pad", ["x", "p"], ["y"])], [x23], [y_any],
      [const("p", I64, [4], [2**40, 0, 2**40, 0])], feeds=feed_x23)
model("pad_negative_past_size", "Pad by -10 (crops more than the input holds)",
      [helper.make_node("Pad", ["x", "p"], ["y"])], [x23], [y_any],
      [const("p", I64, [4], [-10, 0, 0, 0])], feeds=feed_x23)
model("pad_reflect_past_axis", "reflect Pad of 5 before an axis of 3 (reflecting needs more than 5)",
      [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [x23], [y_any],
      [const("p", I64, [4], [0, 5, 0, 0])], feeds=feed_x23)
model("pad_edge_empty_axis", "edge Pad of an axis of 0 elements",
      [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")], [vi("x", F, [2, 0])], [y_any],
      [const("p", I64, [4], [0, 1, 0, 1])], feeds={"x": {"type": "float32", "dims": [2, 0]}})
model("if_branch_pad_reflect_past_axis", "an If whose taken branch reflect-pads past its axis",
      [helper.make_node("If", ["c"], ["y"],
                        then_branch=helper.make_graph(
                            [helper.make_node("Pad", ["x", "p"], ["t"], mode="reflect")], "then", [],
                            [vi("t", F, None)], [const("p", I64, [4], [0, 4, 0, 0])]),
                        else_branch=helper.make_graph(
                            [helper.make_node("Identity", ["x"], ["e"])], "else", [],
                            [vi("e", F, None)]))],
      [x23], [y_any], [const("c", TensorProto.BOOL, [], [True])], feeds=feed_x23)
model("matmul_mismatched", "MatMul of [2, 3] by a constant [4, 5]",
      [helper.make_node("MatMul", ["x", "w"], ["y"])], [x23], [y_any],
      [const("w", F, [4, 5], [0] * 20)], feeds=feed_x23)
model("conv_weight_rank_wrong", "Conv with a rank-2 weight on a rank-4 input",
      [helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", F, [1, 1, 4, 4])], [y_any],
      [const("w", F, [2, 2], [1, 1, 1, 1])], feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("conv_kernel_bigger_than_input", "Conv with a 9x9 kernel on a 4x4 input",
      [helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", F, [1, 1, 4, 4])], [y_any],
      [const("w", F, [1, 1, 9, 9], [1] * 81)], feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("conv_channels_mismatch", "Conv whose weight expects 5 input channels, fed 1",
      [helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", F, [1, 1, 4, 4])], [y_any],
      [const("w", F, [1, 5, 1, 1], [1] * 5)], feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("conv_group_zero", "Conv with group 0",
      [helper.make_node("Conv", ["x", "w"], ["y"], group=0)], [vi("x", F, [1, 1, 4, 4])], [y_any],
      [const("w", F, [1, 1, 1, 1], [1])], feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("maxpool_zero_stride", "MaxPool with strides [0, 0]",
      [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 0])],
      [vi("x", F, [1, 1, 4, 4])], [y_any], feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("resize_huge_scales", "Resize by scales 10^9",
      [helper.make_node("Resize", ["x", "", "sc"], ["y"])], [vi("x", F, [1, 1, 2, 2])], [y_any],
      [const("sc", F, [4], [1, 1, 1e9, 1e9])], feeds={"x": {"type": "float32", "dims": [1, 1, 2, 2]}})

# --- Graph structure -----------------------------------------------------------------------------
model("node_missing_input", "Add whose second input is produced by nothing",
      [helper.make_node("Add", ["x", "ghost"], ["y"])], [x23], [y_any], feeds=feed_x23)
model("node_too_few_inputs", "Gather with one input",
      [helper.make_node("Gather", ["x"], ["y"])], [x23], [y_any], feeds=feed_x23)
model("conv_no_weight", "Conv with only its data input",
      [helper.make_node("Conv", ["x"], ["y"])], [vi("x", F, [1, 1, 4, 4])], [y_any],
      feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("node_too_many_outputs", "Relu with three outputs",
      [helper.make_node("Relu", ["x"], ["y", "z", "w"])], [x23], [y_any], feeds=feed_x23)
model("output_not_produced", "a graph output no node produces",
      [helper.make_node("Relu", ["x"], ["y"])], [x23], [vi("nothing", F, None)], feeds=feed_x23)
model("cycle", "two nodes feeding each other",
      [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
      [x23], [vi("a", F, None)], feeds=feed_x23)
model("self_loop", "a node consuming its own output",
      [helper.make_node("Add", ["x", "y"], ["y"])], [x23], [y_any], feeds=feed_x23)
model("duplicate_output_name", "two nodes producing the same name",
      [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
      [x23], [y_any], feeds=feed_x23)
model("unknown_op", "an op no ONNX opset has",
      [helper.make_node("FrobnicateTensor", ["x"], ["y"])], [x23], [y_any], feeds=feed_x23)
model("unknown_domain", "an op of an unknown domain",
      [helper.make_node("Relu", ["x"], ["y"], domain="com.example.nowhere")], [x23], [y_any],
      feeds=feed_x23)
model("cast_unknown_type", "Cast to element type 999",
      [helper.make_node("Cast", ["x"], ["y"], to=999)], [x23], [y_any], feeds=feed_x23)
model("cast_to_string", "Cast to string",
      [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING)], [x23], [y_any], feeds=feed_x23)
model("attribute_wrong_type", "Conv whose kernel_shape is a string",
      [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape="three")], [vi("x", F, [1, 1, 4, 4])],
      [y_any], [const("w", F, [1, 1, 1, 1], [1])], feeds={"x": {"type": "float32", "dims": [1, 1, 4, 4]}})
model("input_unknown_elem_type", "a graph input of element type 77",
      [helper.make_node("Identity", ["x"], ["y"])], [vi("x", 77, [2])], [y_any])
model("input_string_type", "a graph input of type string",
      [helper.make_node("Identity", ["x"], ["y"])], [vi("x", TensorProto.STRING, [2])], [y_any])
model("input_huge_dims", "an input declared [10^12, 10^12]",
      [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [10**12, 10**12])], [y_any])
model("input_negative_dim", "an input declared [-3, 2]",
      [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [-3, 2])], [y_any],
      feeds={"x": {"type": "float32", "dims": [3, 2]}})
model("value_info_contradicts", "value_info claims Relu's output is int64 [7, 7, 7]",
      [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])], [x23], [y_any],
      value_info=[vi("r", I64, [7, 7, 7])], feeds=feed_x23)
model("opset_huge", "opset 99999",
      [helper.make_node("Relu", ["x"], ["y"])], [x23], [y_any], opset=99999, feeds=feed_x23)
model("opset_zero", "opset 0",
      [helper.make_node("Relu", ["x"], ["y"])], [x23], [y_any], opset=0, feeds=feed_x23)
model("if_without_branches", "If with no then/else graphs",
      [helper.make_node("If", ["c"], ["y"])], [], [y_any], [const("c", TensorProto.BOOL, [], [True])])
model("loop_empty_body", "Loop whose body graph is empty",
      [helper.make_node("Loop", ["n", "c"], ["y"], body=helper.make_graph([], "body", [], []))],
      [], [y_any], [const("n", I64, [], [3]), const("c", TensorProto.BOOL, [], [True])])
model("scan_no_body", "Scan without its body",
      [helper.make_node("Scan", ["x"], ["y"], num_scan_inputs=1)], [x23], [y_any], feeds=feed_x23)

# --- Initializers --------------------------------------------------------------------------------
model("init_raw_data_short", "an initializer [100, 100] float whose raw_data holds 16 bytes",
      [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [100, 100])], [y_any],
      [raw("w", F, [100, 100], bytes(16))])
model("init_raw_data_short_folded", "a constant-folded initializer [64] whose raw_data holds 8 bytes",
      [helper.make_node("Neg", ["w"], ["n"]), helper.make_node("Add", ["x", "n"], ["y"])],
      [vi("x", F, [64])], [y_any], [raw("w", F, [64], bytes(8))],
      feeds={"x": {"type": "float32", "dims": [64]}})
model("init_raw_data_odd", "an int64 initializer whose raw_data is 13 bytes",
      [helper.make_node("Reshape", ["x", "s"], ["y"])], [x23], [y_any],
      [raw("s", I64, [2], bytes(13))], feeds=feed_x23)
short = TensorProto()
short.name = "w"
short.data_type = F
short.dims.extend([4, 4])
short.float_data.extend([1, 2, 3])
model("init_float_data_short", "an initializer [4, 4] with 3 float_data values",
      [helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", F, [2, 4])], [y_any], [short],
      feeds={"x": {"type": "float32", "dims": [2, 4]}})
model("init_huge_dims_no_data", "an initializer [10^12] with no data",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any],
      [raw("w", F, [10**12], b"")], feeds=feed_x23)
model("init_dims_overflow", "an initializer [2^32, 2^32, 2^32] (the element count overflows 64 bits)",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any],
      [raw("w", F, [2**32, 2**32, 2**32], bytes(4))], feeds=feed_x23)
model("init_dims_wrap_32", "an initializer [65536, 65536] (4 bytes of data; 0 elements in 32 bits)",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any],
      [raw("w", F, [65536, 65536], b"")], feeds=feed_x23)
model("init_negative_dims", "an initializer of dims [-2, 3]",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any],
      [raw("w", F, [-2, 3], bytes(24))], feeds=feed_x23)
model("init_huge_not_used", "an unused initializer claiming [2^20, 2^20] with 4 bytes",
      [helper.make_node("Relu", ["x"], ["y"])], [x23], [y_any],
      [raw("unused", F, [2**20, 2**20], bytes(4))], feeds=feed_x23)
model("init_unknown_type", "an initializer of element type 99",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any],
      [raw("w", 99, [3], bytes(12))], feeds=feed_x23)
model("init_string", "a string initializer added to floats",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any],
      [helper.make_tensor("w", TensorProto.STRING, [1], [b"hello"])], feeds=feed_x23)
ext = raw("w", F, [3], b"")
ext.data_location = TensorProto.EXTERNAL
ext.external_data.add(key="location", value="../../../../etc/passwd")
ext.external_data.add(key="length", value="12")
model("init_external_data", "an initializer whose data is in an external file",
      [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y_any], [ext], feeds=feed_x23)
model("constant_node_short", "a Constant node whose value claims [8] and holds 2 bytes",
      [helper.make_node("Constant", [], ["c"], value=raw("v", F, [8], bytes(2))),
       helper.make_node("Add", ["x", "c"], ["y"])], [vi("x", F, [8])], [y_any],
      feeds={"x": {"type": "float32", "dims": [8]}})
model("constant_node_no_value", "a Constant node without a value",
      [helper.make_node("Constant", [], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
      [x23], [y_any], feeds=feed_x23)

# --- Raw protobuf oddities -------------------------------------------------------------------------
save("empty_model", "a ModelProto with no graph", b"")
save("graph_no_nodes", "a graph with no nodes and an output that is nothing",
     helper.make_model(helper.make_graph([], "g", [], [y_any])).SerializeToString())
# ModelProto field 7 (graph), length 2^31: claims more bytes than the file holds.
save("graph_length_huge", "a graph field whose length prefix claims 2 GiB",
     b"\x08\x08" + b"\x3a" + bytes([0x80, 0x80, 0x80, 0x80, 0x08]) + b"\x00" * 8)
# A deep nest of graph -> node (If) -> attribute -> graph ..., written by hand: protobuf libraries
# refuse to build it.
def field(number, payload: bytes) -> bytes:
    length, prefix = len(payload), b""
    while True:
        prefix += bytes([(length & 0x7F) | (0x80 if length > 0x7F else 0)])
        length >>= 7
        if not length:
            break
    return bytes([number << 3 | 2]) + prefix + payload


deep = field(1, field(2, b"y") + field(4, b"Relu"))  # GraphProto { node { output y; op Relu } }
for level in range(300):
    attribute = field(1, b"then_branch") + field(6, deep) + bytes([20 << 3, 5])  # type GRAPH
    deep = field(1, field(1, b"c") + field(2, b"y") + field(4, b"If") + field(5, attribute))
opset = field(8, bytes([2 << 3, 13]))
save("deeply_nested_if", "300 levels of If branches inside If branches",
     bytes([1 << 3, 8]) + field(7, deep) + opset)

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(cases, f, indent=1)
    f.write("\n")
print(f"{len(cases)} damaged models in {OUT}")
