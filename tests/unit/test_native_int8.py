"""The native 8-bit kernels (native_eps/cpu_kernels/nx_qgemm.c): MatMulInteger and DynamicQuantizeLinear, and on them
QLinearMatMul, DynamicQuantizeMatMul and MatMulIntegerToFloat, give exactly the CPU EP's (numpy oracle's) and onnxruntime's results — batch dims, M = 1, K odd and off the vector width, zero-size
dims, uint8 / int8 on both sides, scalar / per-row / per-column zero points, int32 wrap-around, rounding ties,
extreme values — on one and two threads, and each per-level build this CPU runs (the baseline's plain C included)
agrees with the numpy kernel. Where onnxruntime is not deterministic the comparison is with the oracle only: uint8 ×
int8 pair sums past int16 saturate in its AVX2 kernel (so those B values stay within ±64 against it), and a K = 0
product returns uninitialised memory there."""
import os

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxide

NATIVE = "NativeCPUExecutionProvider"
pytestmark = pytest.mark.skipif(NATIVE not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
rng = np.random.default_rng(16)
U8, S8 = np.uint8, np.int8


CALLS = []  # the native kernels that answered (nx_qgemm / nx_dynamic_quantize returned 0) since the last _run


def _counted(name, fn):
    def call(*args):
        status = fn(*args)
        if status == 0:
            CALLS.append(name)
        return status
    return call


@pytest.fixture(autouse=True)
def native_for_any_size(monkeypatch):
    """Small inputs normally stay in numpy (cpu_ops.SMALL_ACT); these tests' small inputs must reach the kernels,
    whose entries are counted (a kernel answering FALLBACK everywhere would pass the comparisons)."""
    from onnxide_native import cpu_ops, lib
    monkeypatch.setattr(cpu_ops, "SMALL_ACT", 1)
    library = lib.load()
    for name in ("nx_qgemm", "nx_qgemm_f32", "nx_dynamic_quantize"):
        monkeypatch.setattr(library, name, _counted(name, getattr(library, name)))


def _model(op, inputs, n_out, domain=""):
    names = [f"i{k}" if a is not None else "" for k, a in enumerate(inputs)]
    node = helper.make_node(op, names, [f"o{k}" for k in range(n_out)], domain=domain)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                                      a.shape) for n, a in zip(names, inputs) if n],
                          [helper.ValueInfoProto(name=f"o{k}") for k in range(n_out)])
    ops = [helper.make_opsetid("", 20)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, opset_imports=ops, ir_version=10).SerializeToString(), \
        {n: a for n, a in zip(names, inputs) if n}


def _run(op, inputs, n_out=1, domain="", ort=True, threads=1, native=True):
    """The native EP's outputs, checked equal (values, dtypes, shapes) to the CPU EP's and, with `ort`, to
    onnxruntime's; `native`: whether its C kernels ran (else the numpy kernel answered)."""
    model, feeds = _model(op, inputs, n_out, domain)
    CALLS.clear()
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onnxide.InferenceSession(model, so, providers=[NATIVE, "CPUExecutionProvider"])
    assert sess._executor.main_plan.steps[0].ep.name == NATIVE, f"{op} not claimed"
    got = sess.run(None, feeds)
    assert bool(CALLS) == native, (op, CALLS)
    wants = [onnxide.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)]
    if ort:
        oso = onnxruntime.SessionOptions()
        oso.intra_op_num_threads = threads
        wants.append(onnxruntime.InferenceSession(model, oso, providers=["CPUExecutionProvider"]).run(None, feeds))
    for want in wants:
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    return got


def _ints(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, shape).astype(dtype)


def _b(bt, at, shape, ort):
    """B values: full range, except uint8 A × int8 B against onnxruntime (its int16 pair sums saturate)."""
    return _ints(bt, shape, -64, 63) if ort and at == U8 and bt == S8 else _ints(bt, shape)


TYPES = [(U8, U8), (U8, S8), (S8, S8), (S8, U8)]
SHAPES = [((2, 3, 37), 19), ((1, 384), 40), ((13, 1), 17), ((7, 64), 16), ((6, 33), 33), ((130, 96), 70)]


@pytest.mark.parametrize("at,bt", TYPES)
@pytest.mark.parametrize("a_shape,n", SHAPES)
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per_column"])
@pytest.mark.parametrize("threads", [1, 2])
def test_matmul_integer(at, bt, a_shape, n, zero_points, threads):
    ort = not (at == S8 and bt == U8)  # (onnxruntime has no int8 × uint8 kernel)
    a, b = _ints(at, a_shape), _b(bt, at, (a_shape[-1], n), ort)
    zps = {"none": [], "scalar": [_ints(at, ()), _ints(bt, ())], "per_column": [_ints(at, ()), _ints(bt, (n,))]}
    for full in (False, True):  # full: over the whole range, against the oracle only
        b = _ints(bt, b.shape) if full else b
        _run("MatMulInteger", [a, b] + zps[zero_points], ort=ort and not full, threads=threads)


@pytest.mark.parametrize("at,bt", TYPES)
def test_matmul_integer_extremes(at, bt):
    """Every product at its largest magnitude (zero points at the far end), and sums past int32 that wrap."""
    ia, ib = np.iinfo(at), np.iinfo(bt)
    for av, azv, bv, bzv in ((ia.max, ia.min, ib.max, ib.min), (ia.min, ia.max, ib.max, ib.min)):
        a, b = np.full((5, 67), av, at), np.full((67, 21), bv, bt)
        _run("MatMulInteger", [a, b, np.array(azv, at), np.array(bzv, bt)], ort=False)
    a, b = np.full((2, 70001), ia.max, at), np.full((70001, 16), ib.min, bt)  # 70001·255·255 > 2³¹
    _run("MatMulInteger", [a, b, np.array(ia.min, at), np.array(ib.max, bt)], ort=False)


def test_matmul_integer_wraps_as_onnxruntime():
    a, b = np.full((2, 70001), 255, U8), np.full((70001, 16), 255, U8)
    _run("MatMulInteger", [a, b])
    _run("MatMulInteger", [a, b, np.array(0, U8), np.array(0, U8)])


@pytest.mark.parametrize("a_shape,b_shape", [((0, 8), (8, 5)), ((4, 0), (0, 5)), ((4, 8), (8, 0)),
                                             ((2, 0, 8), (8, 5))])
def test_matmul_integer_empty(a_shape, b_shape):
    ins = [_ints(U8, a_shape), _ints(U8, b_shape), np.array(7, U8), np.array(3, U8)]
    got = _run("MatMulInteger", ins, ort=0 not in (a_shape[-1],))  # (onnxruntime: K = 0 gives stale memory)
    assert got[0].shape == a_shape[:-1] + b_shape[-1:]


def test_matmul_integer_per_row_a_zero_point():
    a, b = _ints(U8, (9, 40)), _ints(U8, (40, 20))
    _run("MatMulInteger", [a, b, _ints(U8, (9,)), _ints(U8, (20,))], ort=False)  # (onnxruntime: scalar only)


def test_matmul_integer_other_shapes_fall_back():
    """Batched B and 1-D A are the numpy kernel's (claimed, answered by the fallback, still exact)."""
    _run("MatMulInteger", [_ints(U8, (2, 5, 9)), _ints(U8, (2, 9, 4))], ort=False, native=False)
    _run("MatMulInteger", [_ints(U8, (9,)), _ints(U8, (9, 4))], ort=False, native=False)


def _dql(x, threads=1, ort=True):
    y, scale, zero = _run("DynamicQuantizeLinear", [x], n_out=3, ort=ort, threads=threads)
    return y, float(scale), int(zero)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,shift", [((4, 1000), 0.0), ((128, 384), 0.3), ((70001,), 5.0), ((3, 7), -9.0),
                                         ((1,), 2.0)])
def test_dynamic_quantize_linear(shape, shift, threads):
    _dql((rng.standard_normal(shape) * 3 + shift).astype(np.float32), threads)


def test_dynamic_quantize_linear_ties():
    """Quotients and zero points exactly halfway between integers round to even (scale 1: range 255)."""
    x = np.concatenate([[-127.5, 127.5], np.arange(-127.5, 128, 1.0), np.arange(-100, 100) + 0.5]).astype(np.float32)
    y, scale, zero = _dql(x)
    assert scale == 1.0 and zero == 128  # 127.5 rounds to 128
    assert y[:4].tolist() == [0, 255, 0, 2]  # 127.5 -> 128 + 128 saturates; -127.5 -> -128 + 128; -126.5 -> -126
    x = np.array([0.0, 255.0, 0.5, 1.5, 2.5, 253.5, 254.5], np.float32)
    assert _dql(x)[0].tolist() == [0, 255, 0, 2, 2, 254, 254]
    _dql(np.tile(x, 100))  # the vector path, with a tail


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")  # (the numpy kernel's: ±3e38's range is infinite)
@pytest.mark.parametrize("x", [[3e38, -3e38, 0.0, 1.0, -1.0], [1e-45, -1e-45, 1e-38], [1.0, 2.0, 3.0],
                               [-1.0, -2.0, -3.0], [-0.0, 5.0], [1e30] * 40 + [-1e-30]])
def test_dynamic_quantize_linear_extremes(x):
    _dql(np.array(x, np.float32))


def test_dynamic_quantize_linear_all_zero():
    """All zeros: y and the zero point 0 everywhere; the scale is 1/255 as onnx's reference computes it (onnxruntime
    returns 1.0 there), so against the oracle only."""
    y, scale, zero = _dql(np.zeros((4, 9), np.float32), ort=False)
    assert not y.any() and zero == 0 and scale == np.float32(1) / np.float32(255)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (the numpy kernel's, on NaN / infinity)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_dynamic_quantize_linear_non_finite_falls_back(bad):
    x = rng.standard_normal(100).astype(np.float32)
    x[17] = bad
    _run("DynamicQuantizeLinear", [x], n_out=3, ort=False, native=False)  # the numpy kernel's answer (its NaN / infinity handling is the oracle's to define)


def _level_libraries():
    from onnxide_native import lib
    folder = next((d for d in lib.search_dirs() if lib.builds(d)), None)
    found = lib.builds(folder) if folder else {}
    cpu = lib.load().cpu_level
    return [(name, path) for name, path in found.items() if name is not None and lib.LEVELS[name] <= cpu]


@pytest.mark.parametrize("level,path", _level_libraries())
def test_each_level_build_matches_numpy(level, path):
    """The baseline build's plain C kernels (and the AVX2 ones) against the numpy kernels, loaded side by side."""
    from onnxide.ops.registry import lookup
    from onnxide_native import cpu_qops, lib
    library = lib.Library(path)
    mmi, dql = lookup("", "MatMulInteger", 10).kernel, lookup("", "DynamicQuantizeLinear", 11).kernel
    to_float = lookup("com.microsoft", "MatMulIntegerToFloat", 1).kernel
    for at, bt in TYPES:
        for a_shape, n in SHAPES + [((3, 0), 4)]:
            a, b = _ints(at, a_shape), _ints(bt, (a_shape[-1], n))
            az, bz = _ints(at, ()), _ints(bt, (n,))
            got = cpu_qops.matmul_integer(library, a, b, az, bz)
            np.testing.assert_array_equal(got, mmi(a, b, az, bz))
            if a_shape[-1]:  # (the float epilogue, with a per-column scale and a bias, then with one scale)
                for scales in ((_scale(), _scale(n)), (_scale(), _scale())):
                    bias = rng.standard_normal(n).astype(np.float32)
                    got = cpu_qops.matmul_integer_to_float(library, a, b, *scales, az, bz, bias)
                    np.testing.assert_array_equal(got, to_float(a, b, *scales, az, bz, bias))
    x = np.concatenate([rng.standard_normal(5003) * 4, np.arange(-127.5, 128, 1.0)]).astype(np.float32)
    for got, want in zip(cpu_qops.dynamic_quantize_linear(library, x), dql(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_vnni_form_where_the_cpu_has_it():
    """On a CPU with AVX-512 VNNI the AVX-512 build packs B as byte quads for vpdpbusd (so the tests above ran that
    kernel): 37×19 is one 32-column panel of 10 quads, 19 column sums and B's offset (680 int16s, not the 912 of
    the 24-column int16 panels)."""
    from onnxide_native import lib
    flags = open("/proc/cpuinfo").read().split() if os.path.exists("/proc/cpuinfo") else []
    v4 = dict(_level_libraries()).get("x86-64-v4")
    if "avx512_vnni" not in flags or v4 is None:
        pytest.skip("no AVX-512 VNNI here (or no AVX-512 build)")
    assert lib.Library(v4).nx_qgemm_packed_size(37, 19) == (10 * 4 * 32 + 4 * 20) // 2


def _scale(*shape):
    return np.asarray(rng.random(shape) * 0.05 + 0.001, np.float32)


@pytest.mark.parametrize("at,bt", TYPES[:3])
@pytest.mark.parametrize("a_shape,n", SHAPES)
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinear_matmul(at, bt, a_shape, n, per_column):
    a, b = _ints(at, a_shape), _b(bt, at, (a_shape[-1], n), True)
    cols = (n,) if per_column else ()
    ins = [a, _scale(), _ints(at, ()), b, _scale(*cols), _ints(bt, cols), np.array(0.02, np.float32), _ints(at, ())]
    _run("QLinearMatMul", ins)
    ins[3] = _ints(bt, b.shape)
    _run("QLinearMatMul", ins, ort=False)  # full range: against the oracle


@pytest.mark.parametrize("bt", [U8, S8])
@pytest.mark.parametrize("a_shape,n", SHAPES)
@pytest.mark.parametrize("extras", ["none", "zero_point", "all"])
@pytest.mark.parametrize("threads", [1, 2])
def test_dynamic_quantize_matmul(bt, a_shape, n, extras, threads):
    a = (rng.standard_normal(a_shape) * 2).astype(np.float32)
    b = _b(bt, U8, (a_shape[-1], n), True)
    ins = [a, b, _scale(n)] + {"none": [], "zero_point": [_ints(bt, (n,))],
                                "all": [_ints(bt, ()), rng.standard_normal(n).astype(np.float32)]}[extras]
    _run("DynamicQuantizeMatMul", ins, domain="com.microsoft", threads=threads)


@pytest.mark.parametrize("at,bt", TYPES[:3])
@pytest.mark.parametrize("a_shape,n", SHAPES[:4])
def test_matmul_integer_to_float(at, bt, a_shape, n):
    a, b = _ints(at, a_shape), _b(bt, at, (a_shape[-1], n), True)
    ins = [a, b, _scale(), _scale(n), _ints(at, ()), _ints(bt, (n,)), rng.standard_normal(n).astype(np.float32)]
    _run("MatMulIntegerToFloat", ins, domain="com.microsoft")


def test_one_value_bias_is_per_column():
    """A bias of one value (which the numpy kernels broadcast) reaches the kernels as one per column: the kernels
    index bias[n], and read past a one-value array before."""
    a, b = _ints(U8, (3, 16)), _ints(S8, (16, 40))
    bias = np.array([1.5], np.float32)
    _run("MatMulIntegerToFloat", [a, b, _scale(), _scale(), None, None, bias], domain="com.microsoft", ort=False)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    _run("DynamicQuantizeMatMul", [x, b, _scale(), None, bias], domain="com.microsoft", ort=False)


def test_qlinear_matmul_long_k_falls_back():
    """Past K = 33,025 int32 sums could wrap where the numpy kernel's float64 ones do not: its kernel answers."""
    a, b = np.full((2, 40000), 255, U8), np.full((40000, 16), 255, U8)
    ins = [a, _scale(), np.array(0, U8), b, _scale(), np.array(0, U8), np.array(1e6, np.float32), np.array(0, U8)]
    _run("QLinearMatMul", ins, ort=False, native=False)
