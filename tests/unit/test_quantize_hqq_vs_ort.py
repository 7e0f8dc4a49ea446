"""HQQ weight-only quantization (matmul_nbits_quantizer.HQQWeightOnlyQuantConfig) against onnxruntime's tool (which
needs torch): the same MatMulNBits inputs, codes, scales and float zero points, constant blocks included; the
quantized model runs on onnxide as on onnxruntime."""
import numpy as np
import pytest
from onnx import helper, numpy_helper

import onnxide
from onnxide.quantization import matmul_nbits_quantizer as ours

pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
ort_nbits = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")


def _model(k, n, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((k, n)).astype(np.float32)
    w[:32, 0], w[:32, 1], w[32:, 1] = 0.3, 0.0, -2.5  # constant blocks
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", 1, [None, k])],
                          [helper.make_tensor_value_info("y", 1, [None, n])], [numpy_helper.from_array(w, "W")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("k,n,block_size", [(64, 6, 32), (52, 5, 16)])
def test_hqq_matches_onnxruntime(k, n, block_size):
    results = []
    for mod in (ort_nbits, ours):
        q = mod.MatMulNBitsQuantizer(_model(k, n, k), 4, block_size, False,
                                     algo_config=mod.HQQWeightOnlyQuantConfig(block_size=block_size))
        q.process()
        m = q.model.model
        results.append((m, [(x.op_type, list(x.input)) for x in m.graph.node],
                        {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}))
    (m_ort, nodes_ort, t_ort), (m_ours, nodes_ours, t_ours) = results
    assert nodes_ours == nodes_ort and t_ours.keys() == t_ort.keys()
    np.testing.assert_array_equal(t_ours["W_Q4"], t_ort["W_Q4"])
    np.testing.assert_allclose(t_ours["W_scales"], t_ort["W_scales"], rtol=1e-6)
    np.testing.assert_allclose(t_ours["W_zero_points"], t_ort["W_zero_points"], rtol=1e-4, atol=1e-4)
    x = {"x": np.random.default_rng(1).standard_normal((3, k)).astype(np.float32)}
    want = ort.InferenceSession(m_ours.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    got = onnxide.InferenceSession(m_ours.SerializeToString()).run(None, x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
