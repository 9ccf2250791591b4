#!/usr/bin/env python3
"""Writes the damaged-model corpus of web/test/damaged.test.mjs: small ONNX files that decode as
protobuf but are semantically broken (out-of-range constant indices, impossible reshapes, missing
inputs, initializers shorter than their dims, huge dims...). Each must be refused with an Error,
at load or at run, never trap the wasm module.

    python3 -m venv venv && venv/bin/pip install onnx && venv/bin/python web/test/corpus/make_corpus.py

Writes web/test/corpus/semantic/<name>.onnx and web/test/corpus/semantic/manifest.json (name,
what is wrong, and the feeds to run it with if it loads). The output is deterministic.

Besides broken models, a few valid ones at edges tract 0.23.9 panicked on (empty axes, negative
pads, a fractional Range step): those must run (damaged.test.mjs's MUST_RUN)."""

import json
import os
import struct
import sys

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
model("constant_of_shape_dim_past_32_bits", "ConstantOfShape fed [2^32 + 5, 2^32 + 5] at run time (tract made [5, 5])",
      [helper.make_node("ConstantOfShape", ["s"], ["y"])], [vi("s", I64, [2])], [y_any],
      feeds={"s": {"type": "int64", "dims": [2], "values": [2**32 + 5, 2**32 + 5]}})
# 200 values of 0.9 GiB, each under the largest tensor Tessera makes (1 GiB in wasm), all held
# to the end of a run: 180 GB, past a wasm module's 4 GiB and any machine's memory. Refused
# before the run allocates (a wasm module's fourth allocation failed).
model("expand_many_under_the_limit", "200 Expands of 0.9 GiB each, all outputs (180 GB at once)",
      [helper.make_node("Expand", ["x", "s"], [f"y{i}"]) for i in range(200)], [vi("x", F, [1])],
      [vi(f"y{i}", F, None) for i in range(200)],
      [const("s", I64, [1], [(9 << 30) // 40])], feeds={"x": {"type": "float32", "dims": [1]}})
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

# --- tract-core panic triage (third_party/tract-core-panic-triage.md) ------------------------------
# One or a few models per finding (F1..F24, L1..L7, U*, and the tract-hir/tract-onnx sites of its
# appendix), each reaching the code path the finding names. The native test feeds f32/i64 inputs
# with ones and every other type with zeros: the bad values come from constants, from zero-filled
# int32/bool/f64 inputs, or from declared shapes (an axis of 0). The feeds below say the same.
I32, F64, BOOL, U8 = TensorProto.INT32, TensorProto.DOUBLE, TensorProto.BOOL, TensorProto.UINT8
WASM_TYPE = {F: "float32", I64: "int64", I32: "int32", F64: "float64", BOOL: "bool", U8: "uint8"}


def feed(*inputs):
    """Feeds as the native test makes them: f32/i64 ones, other types zeros."""
    out = {}
    for name, dtype, dims in inputs:
        spec = {"type": WASM_TYPE[dtype], "dims": dims}
        size = 1
        for d in dims:
            size *= d
        if dtype not in (F, I64) and size:
            spec["values"] = [0] * size
        out[name] = spec
    return out


def x_in(name, dtype, dims):
    """A graph input and its feed."""
    return vi(name, dtype, dims), (name, dtype, dims)


def tmodel(name, what, nodes, inputs, outputs, inits=(), opset=13, value_info=()):
    """`model` with `inputs` as x_in pairs: the feeds follow from the declared inputs."""
    model(name, what, nodes, [i for i, _ in inputs], outputs, inits, opset=opset,
          feeds=feed(*[f for _, f in inputs]) if inputs else None, value_info=value_info)


def ints_attr(node, name, values):
    """An INTS attribute, empty lists included (helper.make_node cannot type an empty list)."""
    node.attribute.append(helper.make_attribute(name, values, attr_type=onnx.AttributeProto.INTS))
    return node


x23_in = x_in("x", F, [2, 3])
img = x_in("x", F, [1, 1, 4, 4])
z_any = vi("z", F, None)
i_any = vi("i", I64, None)

# F1: Gather's fast path does not check indices. Tessera puts an IndexCheck in front of each
# Gather of the top-level graph; a Gather inside an If whose condition is a runtime input stays.
model("gather_runtime_indices_past_short_axis",
      "Gather of an axis of 1 at index 1, the index from an int64 input (F1)",
      [helper.make_node("Gather", ["data", "i"], ["y"], axis=0)], [vi("i", I64, [2])], [y_any],
      [const("data", F, [1, 2], [1, 2])], feeds=feed(("i", I64, [2])))
tmodel("gather_in_if_branch_runtime_oob",
       "an If on a runtime condition (false) whose else branch Gathers index 1 (an int64 input) of "
       "an axis of 1 (F1)",
       [helper.make_node("If", ["c"], ["y"],
                         then_branch=helper.make_graph(
                             [helper.make_node("Gather", ["d3", "i"], ["t"], axis=0)], "then", [],
                             [vi("t", F, None)], [const("d3", F, [3], [1, 2, 3])]),
                         else_branch=helper.make_graph(
                             [helper.make_node("Gather", ["d1", "i"], ["e"], axis=0)], "else", [],
                             [vi("e", F, None)], [const("d1", F, [1], [1])]))],
       [x_in("c", BOOL, []), x_in("i", I64, [2])], [y_any])
tmodel("gather_elements_in_if_branch_runtime_oob",
       "an If on a runtime condition (false) whose else branch GatherElements index 1 (an int64 "
       "input) on an axis of 1 (F1, F8)",
       [helper.make_node("If", ["c"], ["y"],
                         then_branch=helper.make_graph(
                             [helper.make_node("GatherElements", ["d3", "i"], ["t"], axis=0)], "then",
                             [], [vi("t", F, None)], [const("d3", F, [3, 1], [1, 2, 3])]),
                         else_branch=helper.make_graph(
                             [helper.make_node("GatherElements", ["d1", "i"], ["e"], axis=0)], "else",
                             [], [vi("e", F, None)], [const("d1", F, [1, 1], [1])]))],
       [x_in("c", BOOL, []), x_in("i", I64, [1, 1])], [y_any])

# F2: ShapeFact's assert! on a negative computed dim.
model("range_zero_delta_computed", "Range(0, 10, 1 - 1): the zero delta is computed, not a constant (F2, F20)",
      [helper.make_node("Sub", ["one", "one"], ["d"]), helper.make_node("Range", ["a", "b", "d"], ["y"])],
      [], [y_any], [const("a", F, [], [0]), const("b", F, [], [10]), const("one", F, [], [1])], opset=11)
model("range_fractional_delta", "Range(0, 1, 0.25) in float: a valid model (tract-hir casts the delta to an integer)",
      [helper.make_node("Range", ["a", "b", "d"], ["y"])], [], [y_any],
      [const("a", F, [], [0]), const("b", F, [], [1]), const("d", F, [], [0.25])], opset=11)
tmodel("range_zero_delta_int_input", "Range(0, 10, d) with d an int32 input fed 0 (F20)",
       [helper.make_node("Range", ["a", "b", "d"], ["y"])], [x_in("d", I32, [])], [y_any],
       [const("a", I32, [], [0]), const("b", I32, [], [10])], opset=11)
tmodel("topk_negative_k", "TopK with a constant K of -1 (F2, F17)",
       [helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=1)], [x23_in], [y_any, i_any],
       [const("k", I64, [1], [-1])])
tmodel("stft_frame_longer_than_signal", "STFT with a frame of 16 on a signal of 8 (F2, F22)",
       [helper.make_node("STFT", ["x", "step", "", "len"], ["y"])], [x_in("x", F, [1, 8, 1])], [y_any],
       [const("step", I64, [], [2]), const("len", I64, [], [16])], opset=17)
tmodel("conv_transpose_pads_too_large", "ConvTranspose whose pads (3 each side) exceed its output of 2 (F2, F24)",
       [helper.make_node("ConvTranspose", ["x", "w"], ["y"], pads=[3, 3, 3, 3])],
       [x_in("x", F, [1, 1, 2, 2])], [y_any], [const("w", F, [1, 1, 1, 1], [1])])
tmodel("resize_negative_sizes", "Resize to sizes [1, 1, -2, 2] (F2)",
       [helper.make_node("Resize", ["x", "", "", "sz"], ["y"])], [x_in("x", F, [1, 1, 2, 2])], [y_any],
       [const("sz", I64, [4], [1, 1, -2, 2])])

# F3: pool/conv attribute vectors shorter or longer than the spatial rank.
tmodel("maxpool_kernel_shape_short", "MaxPool with kernel_shape [3] on a 4-D input (F3)",
       [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3])], [img], [y_any])
tmodel("maxpool_strides_short", "MaxPool 2x2 with strides [2] on a 4-D input (F3)",
       [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2])], [img], [y_any])
tmodel("maxpool_pads_odd", "MaxPool 2x2 with pads [1, 1, 1] (F3)",
       [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[1, 1, 1])], [img], [y_any])
tmodel("maxpool_kernel_shape_long", "MaxPool with kernel_shape [2, 2, 2] on a 4-D input (F3)",
       [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2])], [img], [y_any])
tmodel("averagepool_strides_short", "AveragePool 2x2 with strides [1] (F3)",
       [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1])], [img], [y_any])
tmodel("conv_dilations_short", "Conv 2x2 with dilations [1] (F3)",
       [helper.make_node("Conv", ["x", "w"], ["y"], dilations=[1])], [img], [y_any],
       [const("w", F, [1, 1, 2, 2], [1] * 4)])
tmodel("conv_strides_long", "Conv 2x2 with strides [1, 1, 1] (F3)",
       [helper.make_node("Conv", ["x", "w"], ["y"], strides=[1, 1, 1])], [img], [y_any],
       [const("w", F, [1, 1, 2, 2], [1] * 4)])
tmodel("conv_pads_short", "Conv 2x2 with pads [1, 1] (F3)",
       [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1])], [img], [y_any],
       [const("w", F, [1, 1, 2, 2], [1] * 4)])

# F4: zero strides or dilations (Tessera's preflight refuses them).
tmodel("conv_dilation_zero", "Conv with dilations [0, 0] (F4)",
       [helper.make_node("Conv", ["x", "w"], ["y"], dilations=[0, 0])], [img], [y_any],
       [const("w", F, [1, 1, 2, 2], [1] * 4)])
tmodel("averagepool_zero_stride", "AveragePool with strides [1, 0] (F4)",
       [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 0])], [img], [y_any])

# F5: DataFormat::shape does not check the rank (get_unchecked).
tmodel("maxpool_rank1_input", "MaxPool with kernel [2] on a rank-1 input (F5)",
       [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2])], [x_in("x", F, [4])], [y_any])
tmodel("maxpool_rank2_empty_kernel", "MaxPool with kernel_shape [] on an [N, C] input (F5)",
       [ints_attr(helper.make_node("MaxPool", ["x"], ["y"]), "kernel_shape", [])],
       [x_in("x", F, [1, 3])], [y_any])
tmodel("averagepool_rank1_input", "AveragePool with kernel [2] on a rank-1 input (F5)",
       [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2])], [x_in("x", F, [4])], [y_any])
tmodel("conv_rank1_input", "Conv of a rank-1 input by a rank-1 weight (F5)",
       [helper.make_node("Conv", ["x", "w"], ["y"])], [x_in("x", F, [4])], [y_any],
       [const("w", F, [1], [1])])
tmodel("global_average_pool_rank1_input", "GlobalAveragePool of a rank-1 input (F5)",
       [helper.make_node("GlobalAveragePool", ["x"], ["y"])], [x_in("x", F, [4])], [y_any])

# F6: integer Div/Mod by zero.
tmodel("div_int_by_zero", "int32 Div by an int32 input fed zeros (F6)",
       [helper.make_node("Div", ["a", "x"], ["y"])], [x_in("x", I32, [2])], [vi("y", I32, None)],
       [const("a", I32, [2], [6, 7])])
model("div_int_const_by_zero", "int32 Div of constants by [1, 0], folded at load (F6)",
      [helper.make_node("Div", ["a", "b"], ["y"])], [], [vi("y", I32, None)],
      [const("a", I32, [2], [6, 7]), const("b", I32, [2], [1, 0])])
tmodel("mod_int_by_zero", "int32 Mod by an int32 input fed zeros (F6)",
       [helper.make_node("Mod", ["a", "x"], ["y"])], [x_in("x", I32, [2])], [vi("y", I32, None)],
       [const("a", I32, [2], [6, 7])])
tmodel("mod_shape_by_zero", "Mod of Shape(x) by 0 (F6, the TDim Rem path)",
       [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Mod", ["s", "z"], ["y"])],
       [x23_in], [vi("y", I64, None)], [const("z", I64, [1], [0])])
tmodel("div_shape_by_zero", "Div of Shape(x) by 0 (F6, the TDim Div path)",
       [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Div", ["s", "z"], ["y"])],
       [x23_in], [vi("y", I64, None)], [const("z", I64, [1], [0])])

# F7: reductions over an empty last axis.
x20 = x_in("x", F, [2, 0])
for op, short in [("ReduceSum", "sum"), ("ReduceMean", "mean"), ("ReduceSumSquare", "sum_square"),
                  ("ReduceL2", "l2")]:
    # ReduceSum takes its axes as an input from opset 13, the others from opset 18.
    node = (helper.make_node(op, ["x", "a"], ["y"]) if op == "ReduceSum"
            else helper.make_node(op, ["x"], ["y"], axes=[-1]))
    tmodel(f"reduce_{short}_empty_last_axis", f"{op} over the last axis of a [2, 0] input (F7)",
           [node], [x20], [y_any], [const("a", I64, [1], [-1])] if op == "ReduceSum" else [])

# F8: GatherElements' generic path.
tmodel("gather_elements_indices_larger_than_data",
       "GatherElements on axis 1 of [2, 3] with constant indices [3, 1] (more rows than the data) (F8)",
       [helper.make_node("GatherElements", ["x", "idx"], ["y"], axis=1)], [x23_in], [y_any],
       [const("idx", I64, [3, 1], [0, 0, 0])])
tmodel("gather_elements_runtime_indices_larger_than_data",
       "GatherElements on axis 1 of [2, 3] with int64-input indices [3, 3] (F8)",
       [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
       [x23_in, x_in("i", I64, [3, 3])], [y_any])
tmodel("gather_elements_axis0_runtime_oob",
       "GatherElements on axis 0 (not the last) of [1, 3] at index 1, from an int64 input (F8)",
       [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=0)],
       [x_in("x", F, [1, 3]), x_in("i", I64, [1, 3])], [y_any])

# F9: Slice with axes out of range (or steps shorter than axes) and runtime starts.
tmodel("slice_axis_oob_runtime_starts", "Slice along axis 5 of a rank-2 input, starts from an int64 input (F9)",
       [helper.make_node("Slice", ["x", "s", "e", "ax"], ["y"])], [x23_in, x_in("s", I64, [1])], [y_any],
       [const("e", I64, [1], [2]), const("ax", I64, [1], [5])])
tmodel("slice_steps_short_runtime_starts", "Slice of axes [0, 1] with one step, starts from an int64 input (F9)",
       [helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])], [x23_in, x_in("s", I64, [2])],
       [y_any], [const("e", I64, [2], [2, 3]), const("ax", I64, [2], [0, 1]), const("st", I64, [1], [1])])
tmodel("slice_axes_past_rank_runtime_starts",
       "Slice of axes [0, 1, -1] of a rank-2 input (no steps), starts from an int64 input (F9)",
       [helper.make_node("Slice", ["x", "s", "e", "ax"], ["y"])], [x23_in, x_in("s", I64, [3])],
       [y_any], [const("e", I64, [3], [2, 3, 3]), const("ax", I64, [3], [0, 1, -1])])

# F10: Slice step 0 that is not a constant of its own.
tmodel("slice_zero_step_computed", "Slice with step 1 - 1 (computed, not a constant) (F10)",
       [helper.make_node("Sub", ["one", "one"], ["st"]),
        helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])], [x23_in], [y_any],
       [const("s", I64, [1], [0]), const("e", I64, [1], [3]), const("ax", I64, [1], [1]),
        const("one", I64, [1], [1])])
tmodel("slice_zero_step_int_input", "Slice whose step is an int32 input fed 0 (F10)",
       [helper.make_node("Cast", ["st32"], ["st"], to=I64),
        helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])],
       [x23_in, x_in("st32", I32, [1])], [y_any],
       [const("s", I64, [1], [0]), const("e", I64, [1], [3]), const("ax", I64, [1], [1])])

# F11, F12: Pad (opset 18's axes input leaves the pads to tract); negative pads.
tmodel("pad_axes_reflect_past_axis", "reflect Pad of 5 before axis 1 (of 3), given by opset 18's axes (F11)",
       [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], mode="reflect")], [x23_in], [y_any],
       [const("p", I64, [2], [5, 0]), const("ax", I64, [1], [1])], opset=18)
tmodel("pad_axes_reflect_axis_of_one", "reflect Pad of 1 after an axis of 1, given by opset 18's axes (F11)",
       [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], mode="reflect")], [x_in("x", F, [2, 1])],
       [y_any], [const("p", I64, [2], [0, 1]), const("ax", I64, [1], [1])], opset=18)
tmodel("pad_axes_edge_empty_axis", "edge Pad of an axis of 0, given by opset 18's axes (F11)",
       [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], mode="edge")], [x20], [y_any],
       [const("p", I64, [2], [1, 1]), const("ax", I64, [1], [1])], opset=18)
tmodel("pad_negative_crop", "Pad by -1 after axis 1 (a valid crop) (F12)",
       [helper.make_node("Pad", ["x", "p"], ["y"])], [x23_in], [y_any],
       [const("p", I64, [4], [0, 0, 0, -1])])
tmodel("pad_axes_negative_crop", "Pad by -1 before axis 1, given by opset 18's axes (F12)",
       [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"])], [x23_in], [y_any],
       [const("p", I64, [2], [-1, 0]), const("ax", I64, [1], [1])], opset=18)
tmodel("pad_axes_negative_past_size", "Pad by -5 before axis 1 (of 3), given by opset 18's axes (F12, F2)",
       [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"])], [x23_in], [y_any],
       [const("p", I64, [2], [-5, 0]), const("ax", I64, [1], [1])], opset=18)
tmodel("pad_axes_oob", "Pad of axis 5 of a rank-2 input, given by opset 18's axes (tract-onnx pad.rs)",
       [helper.make_node("Pad", ["x", "p", "", "ax"], ["y"])], [x23_in], [y_any],
       [const("p", I64, [2], [1, 1]), const("ax", I64, [1], [5])], opset=18)

# F13: GatherND batch dims that differ.
tmodel("gather_nd_batch_dims_mismatch", "GatherND with batch_dims 1, data [2, 3] and indices [3, 1] (F13)",
       [helper.make_node("GatherND", ["x", "idx"], ["y"], batch_dims=1)], [x23_in], [y_any],
       [const("idx", I64, [3, 1], [0, 1, 2])])
tmodel("gather_nd_runtime_oob", "GatherND of [1, 3] at index tuple (1, 1), from an int64 input (F13)",
       [helper.make_node("GatherND", ["x", "i"], ["y"])], [x_in("x", F, [1, 3]), x_in("i", I64, [1, 2])],
       [y_any])

# F14: ScatterElements with updates larger than the data.
tmodel("scatter_elements_updates_larger_than_data",
       "ScatterElements on axis 1 of [2, 3] with indices and updates [3, 1] (F14)",
       [helper.make_node("ScatterElements", ["x", "idx", "upd"], ["y"], axis=1)], [x23_in], [y_any],
       [const("idx", I64, [3, 1], [0, 0, 0]), const("upd", F, [3, 1], [1, 1, 1])])
tmodel("scatter_elements_runtime_oob", "ScatterElements on axis 0 of [1, 3] at index 1, from an int64 input (F14)",
       [helper.make_node("ScatterElements", ["x", "i", "upd"], ["y"], axis=0)],
       [x_in("x", F, [1, 3]), x_in("i", I64, [1, 1])], [y_any], [const("upd", F, [1, 1], [5])])

# F15, F16: ScatterND.
tmodel("scatter_nd_updates_wrong_shape", "ScatterND into [4, 4] at [[0]] with updates [1, 5] (F15)",
       [helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"])], [x_in("x", F, [4, 4])], [y_any],
       [const("idx", I64, [1, 1], [0]), const("upd", F, [1, 5], [1] * 5)])
tmodel("scatter_nd_scalar_indices", "ScatterND with scalar indices (F15, tract-hir scatter_nd.rs)",
       [helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"])], [x_in("x", F, [4])], [y_any],
       [const("idx", I64, [], [0]), const("upd", F, [4], [1] * 4)])
tmodel("scatter_nd_add_runtime_oob",
       "ScatterND reduction=add into [1, 3] at index 1, from an int64 input (F15)",
       [helper.make_node("ScatterND", ["x", "i", "upd"], ["y"], reduction="add")],
       [x_in("x", F, [1, 3]), x_in("i", I64, [1, 1])], [y_any], [const("upd", F, [1, 3], [1] * 3)],
       opset=16)
tmodel("scatter_nd_scalar_data", "ScatterND into scalar data with indices [1, 0] (F16)",
       [helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"])], [x_in("x", F, [])], [y_any],
       [const("idx", I64, [1, 0], []), const("upd", F, [1], [2])])

# F17: TopK axis out of range.
tmodel("topk_axis_oob", "TopK along axis 5 of a rank-2 input (F17)",
       [helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=5)], [x23_in], [y_any, i_any],
       [const("k", I64, [1], [1])])

# F18: OneHot axis out of range.
tmodel("onehot_axis_oob", "OneHot with axis 7 for rank-1 indices (F18)",
       [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=7)], [x_in("i", I64, [2])],
       [y_any], [const("depth", I64, [1], [3]), const("values", F, [2], [0, 1])])
tmodel("onehot_axis_very_negative", "OneHot with axis -10 for rank-1 indices (F18)",
       [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=-10)], [x_in("i", I64, [2])],
       [y_any], [const("depth", I64, [1], [3]), const("values", F, [2], [0, 1])])
tmodel("onehot_runtime_index_past_depth", "OneHot of depth 1 of index 1, from an int64 input (F18)",
       [helper.make_node("OneHot", ["i", "depth", "values"], ["y"])], [x_in("i", I64, [2])],
       [y_any], [const("depth", I64, [1], [1]), const("values", F, [2], [0, 1])])

# F19: Trilu below rank 2.
tmodel("trilu_rank1", "Trilu of a rank-1 input (F19)",
       [helper.make_node("Trilu", ["x"], ["y"])], [x_in("x", F, [3])], [y_any], opset=14)
model("trilu_const_rank1", "Trilu of a rank-1 constant, folded at load (F19)",
      [helper.make_node("Trilu", ["c"], ["y"])], [], [y_any], [const("c", F, [3], [1, 2, 3])], opset=14)

# F21: Resize of an axis of 0.
tmodel("resize_nearest_empty_axis", "nearest Resize x2 of [1, 1, 0, 2] (F21)",
       [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [x_in("x", F, [1, 1, 0, 2])],
       [y_any], [const("sc", F, [4], [1, 1, 2, 2])])
tmodel("resize_sizes_from_empty_axis", "Resize of [1, 1, 0, 2] to sizes [1, 1, 4, 4] (F21)",
       [helper.make_node("Resize", ["x", "", "", "sz"], ["y"])], [x_in("x", F, [1, 1, 0, 2])], [y_any],
       [const("sz", I64, [4], [1, 1, 4, 4])])
tmodel("resize_linear_sizes_from_empty_axis", "linear Resize of [1, 1, 0, 2] to sizes [1, 1, 4, 4] (F21)",
       [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear")],
       [x_in("x", F, [1, 1, 0, 2])], [y_any], [const("sz", I64, [4], [1, 1, 4, 4])])

# F22: DFT on its complex axis; STFT step 0.
tmodel("dft_axis_last", "DFT with axis -1 (the [re, im] axis) (F22)",
       [helper.make_node("DFT", ["x"], ["y"], axis=-1)], [x_in("x", F, [1, 8, 2])], [y_any], opset=17)
tmodel("dft_axis_complex", "DFT with axis 2 of a [1, 8, 2] input (the [re, im] axis) (F22)",
       [helper.make_node("DFT", ["x"], ["y"], axis=2)], [x_in("x", F, [1, 8, 2])], [y_any], opset=17)
tmodel("stft_zero_step", "STFT with a constant frame_step of 0 (F22)",
       [helper.make_node("STFT", ["x", "step", "", "len"], ["y"])], [x_in("x", F, [1, 8, 1])], [y_any],
       [const("step", I64, [], [0]), const("len", I64, [], [4])], opset=17)
tmodel("stft_zero_step_computed", "STFT with frame_step 2 - 2 (computed, not a constant) (F22)",
       [helper.make_node("Sub", ["two", "two"], ["step"]),
        helper.make_node("STFT", ["x", "step", "", "len"], ["y"])], [x_in("x", F, [1, 8, 1])], [y_any],
       [const("two", I64, [], [2]), const("len", I64, [], [4])], opset=17)

# F24: ConvTranspose.
tmodel("conv_transpose_same_upper_output_shape",
       "ConvTranspose with auto_pad SAME_UPPER and an output_shape (F24: todo!)",
       [helper.make_node("ConvTranspose", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2],
                         output_shape=[6, 6])], [x_in("x", F, [1, 1, 3, 3])], [y_any],
       [const("w", F, [1, 1, 3, 3], [1] * 9)])
tmodel("conv_transpose_output_shape_too_small",
       "ConvTranspose 3x3 of 3x3 with output_shape [1, 1] (natural size 5) (F24)",
       [helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[1, 1])],
       [x_in("x", F, [1, 1, 3, 3])], [y_any], [const("w", F, [1, 1, 3, 3], [1] * 9)])
tmodel("conv_transpose_output_padding_short", "ConvTranspose with output_padding [1] on 2 spatial axes (F24)",
       [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[1])],
       [x_in("x", F, [1, 1, 3, 3])], [y_any], [const("w", F, [1, 1, 3, 3], [1] * 9)])
tmodel("conv_transpose_strides_short", "ConvTranspose with strides [2] on 2 spatial axes (F24, F3)",
       [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2])],
       [x_in("x", F, [1, 1, 3, 3])], [y_any], [const("w", F, [1, 1, 3, 3], [1] * 9)])
tmodel("conv_transpose_group_zero", "ConvTranspose with group 0 (F24)",
       [helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=0)],
       [x_in("x", F, [1, 1, 3, 3])], [y_any], [const("w", F, [1, 1, 3, 3], [1] * 9)])

# L2: a kernel axis of 0.
tmodel("conv_weight_empty_kernel_axis", "Conv whose weight is [1, 1, 0, 3] (L2)",
       [helper.make_node("Conv", ["x", "w"], ["y"])], [img], [y_any], [raw("w", F, [1, 1, 0, 3], b"")])
tmodel("maxpool_kernel_zero", "MaxPool with kernel_shape [0, 2] (L2)",
       [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[0, 2])], [img], [y_any])

# L3: Softmax over an empty axis (f64), quantized softmax with a zero scale.
tmodel("softmax_f64_empty_axis", "f64 Softmax over an axis of 0 (L3)",
       [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [x_in("x", F64, [2, 0])], [vi("y", F64, None)])
tmodel("softmax_qdq_zero_scale", "QDQ Softmax whose output QuantizeLinear scale is 0 (L3)",
       [helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["d"]),
        helper.make_node("Softmax", ["d"], ["sm"], axis=-1),
        helper.make_node("QuantizeLinear", ["sm", "s0", "zp"], ["y"])],
       [x_in("x", U8, [1, 4])], [vi("y", U8, None)],
       [const("s", F, [], [0.1]), const("s0", F, [], [0.0]), const("zp", U8, [], [0])])

# L4: GatherND with scalar indices.
tmodel("gather_nd_scalar_indices", "GatherND with scalar indices (L4, tract-hir gather_nd.rs)",
       [helper.make_node("GatherND", ["x", "idx"], ["y"])], [x23_in], [y_any], [const("idx", I64, [], [0])])

# L5: Scan input axis past the rank; more scan inputs than inputs.
scan_body = helper.make_graph([helper.make_node("Identity", ["xi"], ["yo"])], "body",
                              [vi("xi", F, [3])], [vi("yo", F, [3])])
tmodel("scan_input_axis_oob", "Scan of a rank-2 input along scan_input_axes [3] (L5)",
       [helper.make_node("Scan", ["x"], ["y"], body=scan_body, num_scan_inputs=1, scan_input_axes=[3])],
       [x23_in], [y_any], opset=11)
tmodel("gather_in_scan_body_runtime_oob",
       "a Scan whose body Gathers index 1 (a slice of an int64 input) of an axis of 1 (F1)",
       [helper.make_node("Scan", ["i"], ["y"], num_scan_inputs=1,
                         body=helper.make_graph(
                             [helper.make_node("Gather", ["d1", "ii"], ["yo"], axis=0)], "body",
                             [vi("ii", I64, [1])], [vi("yo", F, [1])], [const("d1", F, [1], [1])]))],
       [x_in("i", I64, [2, 1])], [y_any], opset=11)
tmodel("scan_num_scan_inputs_too_many", "Scan with num_scan_inputs 3 and one input (tract-onnx scan.rs)",
       [helper.make_node("Scan", ["x"], ["y"], body=scan_body, num_scan_inputs=3)], [x23_in], [y_any],
       opset=11)

# L6: GridSample.
tmodel("grid_sample_cubic_5d", "cubic GridSample of a 5-D input (L6)",
       [helper.make_node("GridSample", ["x", "g"], ["y"], mode="cubic")],
       [x_in("x", F, [1, 1, 2, 2, 2]), x_in("g", F, [1, 2, 2, 2, 3])], [y_any], opset=20)
tmodel("grid_sample_border_empty_input", "GridSample with border padding of an input of height 0 (L6)",
       [helper.make_node("GridSample", ["x", "g"], ["y"], padding_mode="border")],
       [x_in("x", F, [1, 1, 0, 2]), x_in("g", F, [1, 2, 2, 2])], [y_any], opset=20)

# L7: Tile by a negative runtime repeat count.
tmodel("tile_runtime_negative_repeats", "Tile by (int32 input fed 0) - 1 = -1 (L7)",
       [helper.make_node("Sub", ["r32", "one"], ["m"]), helper.make_node("Cast", ["m"], ["r"], to=I64),
        helper.make_node("Tile", ["x", "r"], ["y"])], [x23_in, x_in("r32", I32, [2])], [y_any],
       [const("one", I32, [2], [1, 0])])

# U1, U4: broadcast mismatches.
tmodel("einsum_mismatched", "Einsum ij,jk->ik of [2, 3] by a constant [4, 5] (U1)",
       [helper.make_node("Einsum", ["x", "w"], ["y"], equation="ij,jk->ik")], [x23_in], [y_any],
       [const("w", F, [4, 5], [0] * 20)], opset=12)
tmodel("where_mismatched", "Where of a [4] condition on [2, 3] inputs (U4)",
       [helper.make_node("Where", ["c", "x", "x"], ["y"])], [x23_in], [y_any],
       [const("c", BOOL, [4], [True] * 4)])

# Outside tract-core (triage appendix).
tmodel("reduce_max_axes_attr_oob", "ReduceMax with the axes attribute [7] (tract-hir reduce.rs must_reduce)",
       [helper.make_node("ReduceMax", ["x"], ["y"], axes=[7])], [x23_in], [y_any], opset=11)
tmodel("slice_v1_lengths_differ", "opset 9 Slice with starts [0, 0], ends [1] (tract-onnx Slice1)",
       [helper.make_node("Slice", ["x"], ["y"], starts=[0, 0], ends=[1], axes=[0, 1])], [x23_in], [y_any],
       opset=9)
tmodel("slice_v1_axis_oob", "opset 9 Slice along axis 5 of a rank-2 input (tract-onnx Slice1)",
       [helper.make_node("Slice", ["x"], ["y"], starts=[0], ends=[1], axes=[5])], [x23_in], [y_any],
       opset=9)

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
