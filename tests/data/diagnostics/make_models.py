"""Generates the small models the diagnostics tests use (onnx 1.23; run from this folder).

overflow.onnx   y = exp(10·x + 100) / sum(exp(10·x + 100)): for x in [0, 1) the node
                'exp_overflow' is the first whose output is not finite (exp(100) > f32 max);
                'normalize' then turns inf/inf into NaN. `--check-finite` must name exp_overflow.
det.onnx        Det (a determinant: no GPU kernel): wgpu refuses it strictly and runs it on the
                host with --allow-fallback, so the placement picture shows host steps and copies.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, name, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tessera-diagnostics")
    onnx.checker.check_model(model)
    onnx.save(model, name)


def overflow():
    consts = [numpy_helper.from_array(np.array(10.0, np.float32), "ten"),
              numpy_helper.from_array(np.array(100.0, np.float32), "hundred"),
              numpy_helper.from_array(np.array([1], np.int64), "axis")]
    nodes = [
        helper.make_node("Mul", ["x", "ten"], ["scaled"], name="scale"),
        helper.make_node("Add", ["scaled", "hundred"], ["shifted"], name="shift"),
        helper.make_node("Exp", ["shifted"], ["e"], name="exp_overflow"),
        helper.make_node("ReduceSum", ["e", "axis"], ["total"], name="sum", keepdims=1),
        helper.make_node("Div", ["e", "total"], ["y"], name="normalize"),
    ]
    graph = helper.make_graph(
        nodes, "overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], consts)
    save(graph, "overflow.onnx")
    np.save("overflow_input.npy", np.linspace(0.0, 0.9, 8, dtype=np.float32).reshape(1, 8))


def det():
    consts = [numpy_helper.from_array(np.array([4, 4], np.int64), "square"),
              numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "square"], ["m"], name="to_matrix"),
        helper.make_node("Det", ["m"], ["d"], name="det"),
        helper.make_node("Mul", ["d", "two"], ["scores"], name="double"),
    ]
    graph = helper.make_graph(
        nodes, "det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [])], consts)
    save(graph, "det.onnx")


if __name__ == "__main__":
    overflow()
    det()
