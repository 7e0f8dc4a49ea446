"""Regression tests for what the seed-19 campaign's chunks found when rerun after the load checks of 43ac12f (issue
19): each was an internal or raw exception, or an EP disagreeing with the CPU EP; onnxruntime refusing or running the
same model is the oracle where it applies."""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide

vi = helper.make_tensor_value_info
EPS = [p for p in ("CPUExecutionProvider", "NativeCPUExecutionProvider", "WasmExecutionProvider")
       if p in onnxide.get_available_providers()]


def test_an_untyped_tensor_attribute_of_several_values_is_refused_by_the_schema_check():
    """Chunk 10,000 (test_operator_repeat_dim_overflow, a byte flip): a Constant's `value` attribute without a type,
    holding a 2-element tensor, reached `not array` in the untyped-attribute check (a wrapped ValueError)."""
    node = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([1, 2], np.int64)))
    node.attribute[0].type = 0
    data = helper.make_model(helper.make_graph([node, helper.make_node("Identity", ["c"], ["y"])], "g", [],
                                               [vi("y", T.INT64, [2])]),
                             opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph):
        onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    for ep in EPS:
        with pytest.raises(onnxide.InvalidGraph, match="type field and data field mismatch in attribute value"):
            onnxide.InferenceSession(data, providers=[ep])


def _declared_wrong(dims, value_info=False):
    """x [3, 5] through Mul, Add and Softmax (a run the native and WASM EPs chain), its output declared (as a graph
    output, or a value_info of an intermediate) with static dims of the right rank but the wrong sizes."""
    nodes = [helper.make_node("Mul", ["x", "two"], ["m"]), helper.make_node("Add", ["m", "one"], ["a"]),
             helper.make_node("Softmax", ["a"], ["y"], axis=-1)]
    inits = [numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(1, np.float32), "one")]
    out = vi("y", T.FLOAT, [3, 5] if value_info else dims)
    g = helper.make_graph(nodes, "g", [vi("x", T.FLOAT, [3, 5])], [out], inits,
                          value_info=[vi("a", T.FLOAT, dims)] if value_info else [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("value_info", [False, True])
def test_declared_static_dims_that_differ_from_the_real_ones_do_not_shape_outputs(value_info):
    """Chunks 10,000 to 50,000 (mutated dims of an expanded Attention, SoftmaxCrossEntropyLoss, LayerNormalization):
    onnxruntime runs a model whose declared output dims (same rank) are wrong, giving the real shape; the native and
    WASM EPs' chains planned with the declared dims and returned outputs of that shape."""
    data = _declared_wrong([5, 3], value_info)
    x = np.random.default_rng(0).random((3, 5), dtype=np.float32)
    sess = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    assert want.shape == (3, 5)
    for ep in EPS:
        ours = onnxide.InferenceSession(data, providers=[ep])
        np.testing.assert_allclose(ours.run(None, {"x": x})[0], want, rtol=1e-6, atol=1e-7)
