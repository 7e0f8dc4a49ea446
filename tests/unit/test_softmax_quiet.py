"""Softmax / LogSoftmax give the spec's NaN rows (all -inf, NaN, +inf) without numpy RuntimeWarnings."""
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxide as ort


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_masked_rows_warn_nothing(op, opset):
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
    x = np.array([[-np.inf] * 4, [1, np.nan, 2, 3], [np.inf, 1, 2, 3]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.isnan(y[0]).all() and np.isnan(y[1]).all() and np.isnan(y[2, 0])
