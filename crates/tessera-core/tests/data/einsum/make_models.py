"""Generates the f32 Einsum models of the GPU lowering tests, with inputs and numpy's outputs
(onnx 1.23, numpy; run from this folder): forms that are not one matrix product (a sum, a
transpose, a batch diagonal, a trace, an outer product, a product of three operands).
Each case NAME has NAME.onnx, NAME.input_K.npy and NAME.output.npy.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper

CASES = {
    "sum": ("ij->i", [[3, 4]]),
    "transpose": ("ij->ji", [[3, 4]]),
    "batch_diagonal": ("...ii->...i", [[3, 5, 5]]),
    "trace": ("ii->", [[4, 4]]),
    "outer": ("i,j->ij", [[9], [10]]),
    "bilinear": ("bi,ij,bj->b", [[4, 5], [5, 6], [4, 6]]),
    "diagonal_times_vector": ("iij,j->ij", [[3, 3, 4], [4]]),
}

rng = np.random.default_rng(7)
for name, (equation, shapes) in CASES.items():
    names = [f"x{k}" for k in range(len(shapes))]
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    expected = np.array(np.einsum(equation, *inputs), dtype=np.float32, order="C")
    graph = helper.make_graph(
        [helper.make_node("Einsum", names, ["y"], equation=equation)], name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(expected.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="tessera-tests")
    onnx.checker.check_model(model)
    onnx.save(model, f"{name}.onnx")
    for k, x in enumerate(inputs):
        np.save(f"{name}.input_{k}.npy", x)
    np.save(f"{name}.output.npy", expected)
