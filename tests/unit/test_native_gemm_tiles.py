"""nx_gemm against float64 numpy on every partial tile shape: row counts 1-28 (each tail of the 16-row panels: the
AVX-512 build's blocks of 1-8 rows, the AVX2 build's 6-row, 3-row and 2-row blocks), column counts around the 8 / 16
/ 32-wide blocks, K within and past one K block; A raw or packed, B packed or raw (A packed and B raw: on the AVX-512
build the transposed few-column form, 16-column blocks of 1-16 columns), with a bias, row bias and residual in the
epilogue."""
import numpy as np
import pytest

import onnxide

pytestmark = pytest.mark.skipif("NativeCPUExecutionProvider" not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")


RELU = 1  # nx activation code (onnxide_native.cpu_ops.ACT["relu"])


def _lib():
    from onnxide_native import lib
    return lib.load()


def _addr(a):
    return None if a is None else a.ctypes.data


def _gemm(lib, a, b, *, pack_a, pack_b, bias=None, row_bias=None, res=None, act=0):
    m, k = a.shape
    n = b.shape[1]
    ap = bp = None
    if pack_a:
        ap = np.empty(lib.nx_gemm_packed_a_size(m, k), np.float32)
        lib.nx_gemm_pack_a(m, k, a.ctypes.data, k, ap.ctypes.data)
    if pack_b:
        bp = np.empty(lib.nx_gemm_packed_size(k, n), np.float32)
        lib.nx_gemm_pack_b(k, n, b.ctypes.data, n, 1, bp.ctypes.data)
    c = np.full((m, n), np.nan, np.float32)
    rc = lib.nx_gemm(m, n, k, None if pack_a else a.ctypes.data, k, _addr(ap), None if pack_b else b.ctypes.data, n,
                     _addr(bp), c.ctypes.data, n, _addr(bias), _addr(row_bias), _addr(res), n, act, 0.0, 0.0, None, 1)
    assert rc == 0
    return c


@pytest.mark.parametrize("k", [3, 300])
@pytest.mark.parametrize("pack_a,pack_b", [(False, True), (True, True), (False, False), (True, False)])
def test_every_tile_shape(k, pack_a, pack_b):
    lib = _lib()
    rng = np.random.default_rng(k)
    for m in range(1, 29):
        for n in (1, 5, 8, 9, 16, 17, 24, 31, 32, 33, 40):  # (one column with A packed and B raw: nx_gemm's GEMV)
            a = rng.standard_normal((m, k)).astype(np.float32)
            b = rng.standard_normal((k, n)).astype(np.float32)
            extra = m % 3 == 0
            bias = rng.standard_normal(n).astype(np.float32) if extra else None
            row_bias = rng.standard_normal(m).astype(np.float32) if extra else None
            res = rng.standard_normal((m, n)).astype(np.float32) if extra else None
            want = a.astype(np.float64) @ b.astype(np.float64)
            if extra:
                want += bias[None, :] + row_bias[:, None] + res
            got = _gemm(lib, a, b, pack_a=pack_a, pack_b=pack_b, bias=bias, row_bias=row_bias, res=res)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k), err_msg=f"M={m} N={n} K={k}")
            if extra:  # the epilogue bit for bit: float32 (acc + (bias + row bias)) + res, then ReLU
                acc = _gemm(lib, a, b, pack_a=pack_a, pack_b=pack_b)
                res = res.copy()
                res[0, 0], res[-1, -1] = np.nan, -acc[-1, -1] - (bias[-1] + row_bias[-1])  # (a NaN; a ±0 sum)
                relu = (acc + (bias[None, :] + row_bias[:, None])) + res
                relu = np.where(relu < 0, np.float32(0), relu)
                got = _gemm(lib, acc, np.eye(n, dtype=np.float32), pack_a=pack_a, pack_b=pack_b, bias=bias,
                            row_bias=row_bias, res=res, act=RELU)
                np.testing.assert_array_equal(got.view(np.uint32), relu.view(np.uint32), f"M={m} N={n} K={k}")
