"""The WASM EP's 8-bit kernels (wasm_kernels/ox_qgemm.c) against the numpy kernels, bit for bit, in both builds:
MatMulInteger (all four type pairs, scalar / per-row / per-column zero points, odd sizes, K = 0), the float32
epilogue of MatMulIntegerToFloat / DynamicQuantizeMatMul, DynamicQuantizeLinear (ties, one-signed ranges, NaN and
infinity left to the numpy kernel), and a quantize_dynamic model through InferenceSession."""
import numpy as np
import pytest

pytest.importorskip("wasmtime", reason="wasmtime (pip) runs the wasm kernels natively")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnxide  # noqa: E402
from onnxide.eps import wasm as wasm_ep, wasm_ops_quant as Q, wasm_runtime  # noqa: E402
from onnxide.ops import qgemm_forms as forms  # noqa: E402
from onnxide.ops.registry import lookup  # noqa: E402
from onnxide.runtime.providers import FALLBACK  # noqa: E402

if not wasm_ep.available():
    pytest.skip("no wasm kernel build (run wasm_kernels/build.sh)", allow_module_level=True)

RNG = np.random.default_rng(11)
TYPES = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.uint8), (np.int8, np.int8)]
SHAPES = [(1, 1, 1), (5, 3, 7), (4, 16, 8), (13, 37, 19), (2, 33, 9), (3, 0, 4), (64, 96, 40)]
MMI = lookup("", "MatMulInteger", 10).kernel
DQL = lookup("", "DynamicQuantizeLinear", 11).kernel
TO_FLOAT = lookup("com.microsoft", "MatMulIntegerToFloat", 1).kernel
DQ_MATMUL = lookup("com.microsoft", "DynamicQuantizeMatMul", 1).kernel


@pytest.fixture(scope="module", params=[b for b in wasm_runtime.BUILDS if wasm_runtime.find_build(b)])
def rt(request):
    backend, build = wasm_runtime.load(request.param)
    return wasm_ep._Kernels(backend, build)


def _ints(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("at,bt", TYPES)
def test_matmul_integer_matches_numpy(rt, at, bt):
    gemm = Q._gemm(rt)
    for m, k, n in SHAPES:
        a, b = _ints(at, (m, k)), _ints(bt, (k, n))
        for az, bz in ((None, None), (_ints(at, ()), _ints(bt, (n,))), (_ints(at, (m,)), _ints(bt, ()))):
            got = forms.matmul_integer(gemm, a, b, az, bz)
            assert got is not FALLBACK
            np.testing.assert_array_equal(got, MMI(a, b, az, bz))
    a3 = _ints(at, (2, 5, 12))  # batched A folds into rows
    b = _ints(bt, (12, 6))
    az = _ints(at, ())
    np.testing.assert_array_equal(forms.matmul_integer(gemm, a3, b, az, None), MMI(a3, b, az, None))


@pytest.mark.parametrize("at,bt", TYPES)
def test_float_epilogue_matches_numpy(rt, at, bt):
    gemm = Q._gemm(rt)
    for m, k, n in SHAPES:
        if k == 0:
            continue
        a, b = _ints(at, (m, k)), _ints(bt, (k, n))
        az, bz = _ints(at, ()), _ints(bt, (n,))
        bias = RNG.standard_normal(n).astype(np.float32)
        for scales in ((np.array(0.013, np.float32), (RNG.random(n) * 0.01).astype(np.float32)),
                       (np.array(0.02, np.float32), np.array(0.003, np.float32))):
            for zb in ((az, bz, bias), (az, None, None)):
                got = forms.matmul_integer_to_float(gemm, a, b, *scales, *zb)
                assert got is not FALLBACK
                np.testing.assert_array_equal(got, TO_FLOAT(a, b, *scales, *zb))


def test_one_value_bias_is_per_column(rt):
    """A bias of one value (the numpy kernels broadcast it) reaches the kernel as one per column."""
    a, b = _ints(np.uint8, (3, 16)), _ints(np.int8, (16, 40))
    scales, bias = (np.array(0.01, np.float32), np.array(0.02, np.float32)), np.array([1.5], np.float32)
    got = forms.matmul_integer_to_float(Q._gemm(rt), a, b, *scales, None, None, bias)
    np.testing.assert_array_equal(got, TO_FLOAT(a, b, *scales, None, None, bias))


def test_dynamic_quantize_linear_matches_numpy(rt):
    x = np.concatenate([RNG.standard_normal(5003) * 4, np.arange(-127.5, 128, 1.0)]).astype(np.float32)
    for v in (x, x[:7], np.abs(x), -np.abs(x), np.zeros(20, np.float32), x[:5257].reshape(-1, 7)[:, 2:]):
        got = Q.dynamic_quantize_linear(rt, v)
        for g, w in zip(got, DQL(v)):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[100] = bad
        assert Q.dynamic_quantize_linear(rt, y) is FALLBACK  # (the numpy kernel defines these)


def test_dynamic_quantize_matmul_matches_numpy(rt):
    a = RNG.standard_normal((1, 20, 48)).astype(np.float32)
    b = _ints(np.int8, (48, 30))
    scale, bias = (RNG.random(30) * 0.01).astype(np.float32), RNG.standard_normal(30).astype(np.float32)
    got = forms.dynamic_quantize_matmul(Q._gemm(rt), lambda x: Q.dynamic_quantize_linear(rt, x), a, b, scale, None,
                                        bias)
    assert got is not FALLBACK
    np.testing.assert_array_equal(got, DQ_MATMUL(a, b, scale, None, bias))


def test_quantized_model_runs_on_wasm_like_cpu(tmp_path):
    """quantize_dynamic's MatMulInteger chain of a two-layer MLP: the same bits from the WASM EP as from the CPU EP,
    with the 8-bit nodes placed on the WASM EP."""
    from onnxide.quantization import quantize_dynamic
    w1, w2 = (RNG.standard_normal((32, 64)) * 0.2).astype(np.float32), (RNG.standard_normal((64, 16)) * 0.2).astype(
        np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    quantize_dynamic(str(src), str(dst))
    x = RNG.standard_normal((4, 32)).astype(np.float32)
    want = onnxide.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    sess = onnxide.InferenceSession(str(dst), providers=["WasmExecutionProvider", "CPUExecutionProvider"])
    for _ in range(2):  # (the second run uses the packed weights)
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)
    placed = {t.node.op_type: t.ep.name for s in sess._executor.main_plan.steps  # (inside WASM chains too)
              for t in (s.kernel.steps if s.node.op_type == "WasmChain" else [s])}
    int8_ops = {op for op in placed if op in ("MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul",
                                              "MatMulIntegerToFloat")}
    assert int8_ops and all(placed[op] == "WasmExecutionProvider" for op in int8_ops), placed
