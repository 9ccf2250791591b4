"""Generates the control-flow models the GPU lowering tests use (onnx 1.23; run from this folder).

runtime_if.onnx   y = If(sum(x) > 0, then: x * 2, else: x - 1), x float32[2, 16]: the
                  condition is computed from x at run time, so no plan can know it in advance.
nonzero.onnx      y = NonZero(Relu(x)), x float32[8, 8]: an output shape that depends on x's
                  values.
nonzero_stages.onnx
                  x float32[16, 16] -> doubled = x * 2, positions = NonZero(Relu(x)),
                  picked = GatherND(x, positions^T) (the positive values), big_positions =
                  NonZero(picked > 1): a NonZero whose input depends on another's count, and
                  an output computed before either.
topk_stages.onnx  x float32[64] -> values, indices = TopK(x, k = the number of positive
                  values): a k computed from the data.
topk_past_the_axis.onnx
                  the same with k = that number + 60: past the axis of 64 when more than 4
                  values are positive (an error, as on cpu).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, name, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tessera-tests")
    onnx.checker.check_model(model)
    onnx.save(model, name)


def runtime_if():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])
    consts = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
              numpy_helper.from_array(np.array(2.0, np.float32), "two"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    then_out = helper.make_tensor_value_info("doubled", TensorProto.FLOAT, [2, 16])
    else_out = helper.make_tensor_value_info("lowered", TensorProto.FLOAT, [2, 16])
    then_branch = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["doubled"])],
                                    "then", [], [then_out])
    else_branch = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["lowered"])],
                                    "else", [], [else_out])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["y"], then_branch=then_branch,
                         else_branch=else_branch),
    ]
    save(helper.make_graph(nodes, "runtime_if", [x], [y], consts), "runtime_if.onnx")


def nonzero():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"])]
    save(helper.make_graph(nodes, "nonzero", [x], [y]), "nonzero.onnx")


def nonzero_stages():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 16])
    outputs = [helper.make_tensor_value_info("doubled", TensorProto.FLOAT, [16, 16]),
               helper.make_tensor_value_info("positions", TensorProto.INT64, [2, None]),
               helper.make_tensor_value_info("picked", TensorProto.FLOAT, [None]),
               helper.make_tensor_value_info("big_positions", TensorProto.INT64, [1, None])]
    consts = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["doubled"], name="doubled"),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("NonZero", ["r"], ["positions"], name="positions"),
        helper.make_node("Transpose", ["positions"], ["coords"], name="coords", perm=[1, 0]),
        helper.make_node("GatherND", ["x", "coords"], ["picked"], name="picked"),
        helper.make_node("Greater", ["picked", "one"], ["big"], name="big"),
        helper.make_node("NonZero", ["big"], ["big_positions"], name="big_positions"),
    ]
    save(helper.make_graph(nodes, "nonzero_stages", [x], outputs, consts),
         "nonzero_stages.onnx")


def topk_stages(extra=0, name="topk_stages.onnx"):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])
    outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, [None]),
               helper.make_tensor_value_info("indices", TensorProto.INT64, [None])]
    consts = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
              numpy_helper.from_array(np.array([extra], np.int64), "extra")]
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["positive"], name="positive"),
        helper.make_node("Cast", ["positive"], ["ones"], name="ones", to=TensorProto.INT64),
        helper.make_node("ReduceSum", ["ones"], ["count"], name="count", keepdims=1),
        helper.make_node("Add", ["count", "extra"], ["k"], name="k"),
        helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="top", axis=-1),
    ]
    save(helper.make_graph(nodes, "topk_stages", [x], outputs, consts), name)


if __name__ == "__main__":
    runtime_if()
    nonzero()
    nonzero_stages()
    topk_stages()
    topk_stages(60, "topk_past_the_axis.onnx")
