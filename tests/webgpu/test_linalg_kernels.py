"""WebGPU MatMul, Gemm, FusedMatMul and FusedGemm (ops_linalg.py) against the CPU EP, on random small shapes."""
import numpy as np
import pytest

from webgpu.nodes import Const, check

rng = np.random.default_rng(11)
F16 = dict(rtol=3e-3, atol=3e-3)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _random_matmul_shapes(count):
    """(A shape, B shape) pairs: 1-D to 4-D operands, broadcast batch dims, dims up to 64 (odd ones included)."""
    out = []
    for _ in range(count):
        m, k, n = (int(v) for v in rng.integers(1, 65, 3))
        batch = [int(v) for v in rng.integers(1, 4, rng.integers(0, 3))]
        a_batch = [d if rng.random() < 0.7 else 1 for d in batch]
        b_batch = [d if rng.random() < 0.7 else 1 for d in batch][int(rng.integers(0, len(batch) + 1)):]
        out.append((tuple(a_batch + [m, k]), tuple(b_batch + [k, n])))
    return out


@pytest.mark.parametrize("sa,sb", _random_matmul_shapes(8) + [
    ((7,), (7,)), ((9,), (2, 9, 5)), ((3, 4, 6), (6,)), ((2, 1, 40, 9), (3, 9, 5)), ((70, 33), (33, 130)),
    ((1, 100), (100, 3)), ((65, 64), (64, 65)), ((5, 0), (0, 3))])
def test_matmul(sa, sb):
    check("MatMul", [rand(*sa), rand(*sb)], rtol=1e-4, atol=1e-4)


def test_matmul_f16_and_weights():
    check("MatMul", [rand(3, 17, 33, dtype=np.float16), rand(33, 20, dtype=np.float16)], **F16)
    check("MatMul", [rand(2, 5, 48), Const(rand(48, 40))], rtol=1e-4, atol=1e-4)


def test_matmul_declines_integers():
    a = rng.integers(-5, 5, (4, 6)).astype(np.int32)
    check("MatMul", [a, a.T.copy()], exact=True, on_device=False)


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (37,), (1, 37), (23, 1), (23, 37)])
def test_gemm(trans_a, trans_b, c_shape):
    a = rand(29, 23) if trans_a else rand(23, 29)
    b = rand(37, 29) if trans_b else rand(29, 37)
    inputs = [a, b] + ([] if c_shape is None else [rand(*c_shape)])
    check("Gemm", inputs, transA=trans_a, transB=trans_b, alpha=0.75, beta=1.5, rtol=1e-4, atol=1e-4)


def test_gemm_beta_zero_ignores_c_and_f16():
    c = np.full((5, 6), np.nan, np.float32)
    y = check("Gemm", [rand(5, 7), rand(7, 6), c], beta=0.0, rtol=1e-4, atol=1e-4)[0]
    assert not np.isnan(y).any()
    check("Gemm", [rand(40, 33, dtype=np.float16), Const(rand(33, 70, dtype=np.float16)),
                   Const(rand(70, dtype=np.float16))], **F16)


def test_gemm_opset6_broadcast():
    check("Gemm", [rand(4, 5), rand(5, 6), rand(6)], opset=6, broadcast=1, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act,params", [("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.3}), ("Sigmoid", {}),
                                        ("Tanh", {}), ("HardSigmoid", {"activation_alpha": 0.3,
                                                                       "activation_beta": 0.4}),
                                        ("HardSigmoid", {}), ("LeakyRelu", {})])
def test_fused_gemm(act, params):
    check("ms:FusedGemm", [rand(9, 40), Const(rand(50, 40)), Const(rand(50))], transB=1, activation=act,
          rtol=1e-4, atol=1e-4, **params)


@pytest.mark.parametrize("sa,sb,ta,tb", [((3, 9, 5), (3, 7, 9), 1, 1), ((9, 5), (9, 7), 1, 0),
                                         ((2, 4, 6), (5, 6), 0, 1), ((6,), (6, 4), 1, 0), ((2, 3, 6), (6,), 0, 1)])
def test_fused_matmul(sa, sb, ta, tb):
    check("ms:FusedMatMul", [rand(*sa), rand(*sb)], transA=ta, transB=tb, alpha=0.5, rtol=1e-4, atol=1e-4)


def test_matmul_nan_propagates():
    a = rand(6, 8)
    a[2, 3] = np.nan
    y = check("MatMul", [a, rand(8, 70)], rtol=1e-4, atol=1e-4)[0]
    assert np.isnan(y[2]).all() and not np.isnan(np.delete(y, 2, 0)).any()
