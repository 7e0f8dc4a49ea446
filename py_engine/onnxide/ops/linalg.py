"""Linear algebra: MatMul, Gemm (incl. the opset<7 `broadcast` form), MatMulInteger, Einsum, Det."""
import numpy as np

from ..dtypes import INT32
from ..errors import InvalidArgument
from .inference import broadcast, rule
from .math import is_exotic_float, via_float32
from .registry import op


def _name(kind, ctx):
    return f"{kind} node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else kind


def _matmul(a, b, name):
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"{name}: inputs must be at least 1-D, got shapes {a.shape} and {b.shape}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb or any(x != y and 1 not in (x, y) for x, y in zip(a.shape[-3::-1], b.shape[-3::-1])):
        raise InvalidArgument(f"{name}: shapes {a.shape} and {b.shape} cannot be multiplied (inner dimensions "
                              "differ or batch dimensions do not broadcast)")
    dt = a.dtype
    if dt == np.float16 or dt.kind not in "fiuc" or is_exotic_float(dt):  # f16/bf16/f8: accumulate in float32
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(dt)
    if dt.kind in "iu" and a.size and b.size:
        # integer matmul is not BLAS-accelerated in numpy; float64 is exact while |sums| stay below 2**53
        amax = float(np.abs(a.astype(np.float64)).max())
        bmax = float(np.abs(b.astype(np.float64)).max())
        if ka * amax * bmax < 2.0 ** 53:
            res = np.matmul(a.astype(np.float64), b.astype(np.float64))
            return res.astype(np.int64).astype(dt)
    return blas_matmul(a, b)


def blas_matmul(a, b):
    """np.matmul shaped so BLAS runs it: N-D @ 2-D as one 2-D GEMM, batched operands made contiguous first.

    numpy's batched matmul on strided views (e.g. a Transpose's output) falls off BLAS and runs 10-50x slower.
    """
    if a.ndim > 2 and b.ndim == 2:
        a2 = a.reshape(-1, a.shape[-1])
        return np.matmul(a2, b).reshape(a.shape[:-1] + (b.shape[1],))
    if a.ndim > 2 or b.ndim > 2:
        return np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))
    return np.matmul(a, b)


@op("MatMul", since=1)
@via_float32
def matmul(a, b, *, ctx=None):
    if a.dtype != b.dtype:
        raise InvalidArgument(f"{_name('MatMul', ctx)}: input types differ ({a.dtype} vs {b.dtype})")
    return np.asarray(_matmul(a, b, _name("MatMul", ctx)))


def matmul_dims(a, b):
    """numpy matmul's output dims for operand dims `a` and `b` (None when a rank is unknown)."""
    if a is None or b is None or not a or not b:
        return None
    if len(a) == 1:
        return [] if len(b) == 1 else b[:-2] + [b[-1]]
    if len(b) == 1:
        return a[:-1]
    batch = broadcast([a[:-2], b[:-2]])
    return None if batch is None else batch + [a[-2], b[-1]]


def _transposed(dims, flag):
    """`dims` with the last two swapped when `flag` (FusedMatMul's transA / transB)."""
    return dims[:-2] + [dims[-1], dims[-2]] if flag and dims is not None and len(dims) >= 2 else dims


@rule("MatMul")
def matmul_rule(f):
    """MatMul (and FusedMatMul, with its transA / transB): A's type, matmul dims."""
    a, b = _transposed(f.dims(0), f.attr("transA")), _transposed(f.dims(1), f.attr("transB"))
    return [(f.common_type([0, 1]), matmul_dims(a, b))]


def _gemm(a, b, c, alpha, beta, trans_a, trans_b, name):
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgument(f"{name}: A and B must be 2-D, got {a.shape} and {b.shape}")
    if trans_a:
        a = a.T
    if trans_b:
        b = b.T
    dt = a.dtype
    if dt.kind not in "iu":  # float16/bfloat16 accumulate and scale in float32, rounding once at the end
        ct = np.float64 if dt == np.float64 else np.float32
        y = _matmul(a.astype(ct, copy=False), b.astype(ct, copy=False), name)  # a fresh array: scaled in place
        if alpha != 1.0:
            y *= ct(alpha)
        if c is not None and beta != 0.0:
            cc = c.astype(ct, copy=False)
            y += cc if beta == 1.0 else cc * ct(beta)
        return np.asarray(y.astype(dt, copy=False))
    y = _matmul(a, b, name)
    if alpha != 1.0:
        y = (y * alpha).astype(dt)
    if c is not None and beta != 0.0:
        y = y + (c if beta == 1.0 else (c * beta).astype(dt)).astype(dt, copy=False)
    return np.asarray(y.astype(dt, copy=False))


def _check_c(c, m, n, name):
    if c is None:
        return
    if c.ndim > 2 or any(d not in (1, want) for d, want in zip(c.shape[::-1], (n, m))):
        raise InvalidArgument(f"{name}: C shape {c.shape} is not unidirectionally broadcastable to ({m}, {n})")


@op("Gemm", since=1)
@via_float32
def gemm_1(a, b, c=None, *, alpha=1.0, beta=1.0, broadcast=0, transA=0, transB=0, ctx=None):
    name = _name("Gemm", ctx)
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgument(f"{name}: A and B must be 2-D, got {a.shape} and {b.shape}")
    m = a.shape[1] if transA else a.shape[0]
    n = b.shape[0] if transB else b.shape[1]
    if c is not None and not broadcast and c.shape != (m, n):
        raise InvalidArgument(f"{name}: C shape {c.shape} must equal ({m}, {n}) when broadcast=0")
    _check_c(c, m, n, name)
    return _gemm(a, b, c, alpha, beta, transA, transB, name)


@op("Gemm", since=7)
@via_float32
def gemm(a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, ctx=None):
    name = _name("Gemm", ctx)
    if a.ndim == 2 and b.ndim == 2:
        _check_c(c, a.shape[1] if transA else a.shape[0], b.shape[0] if transB else b.shape[1], name)
    return _gemm(a, b, c, alpha, beta, transA, transB, name)


@rule("Gemm")
def gemm_rule(f):
    """Gemm (and FusedGemm): A's type, [M, N] (each dim unknown unless A / B fix it)."""
    a, b = f.dims(0), f.dims(1)
    m = (a[1] if f.attr("transA") else a[0]) if a is not None and len(a) == 2 else None
    n = (b[0] if f.attr("transB") else b[1]) if b is not None and len(b) == 2 else None
    return [(f.common_type([0, 1, 2]), [m, n])]


@op("MatMulInteger", since=10)
def matmul_integer(a, b, a_zero_point=None, b_zero_point=None, *, ctx=None):
    name = _name("MatMulInteger", ctx)
    af = a.astype(np.float64)
    bf = b.astype(np.float64)
    if a_zero_point is not None:
        az = np.asarray(a_zero_point).astype(np.float64)
        if az.ndim == 1 and az.size > 1:  # per-row of A
            az = az.reshape(-1, 1)
        af -= az
    if b_zero_point is not None:
        bz = np.asarray(b_zero_point).astype(np.float64)
        bf -= bz  # per-column of B broadcasts as (N,)
    y = _matmul(af, bf, name)
    return np.rint(y).astype(np.int64).astype(np.int32)


@rule("MatMulInteger")
def _matmul_integer_rule(f):
    return [(INT32, matmul_dims(f.dims(0), f.dims(1)))]


@op("Einsum", since=12)
@via_float32
def einsum(*inputs, equation, ctx=None):
    name = _name("Einsum", ctx)
    eq = equation.replace(" ", "")
    dt = inputs[0].dtype if inputs else None
    try:
        if dt is not None and (dt == np.float16 or dt.kind not in "fiucb" or is_exotic_float(dt)):
            res = np.einsum(eq, *[x.astype(np.float32) for x in inputs], optimize=len(inputs) > 2)
        else:
            res = np.einsum(eq, *inputs, optimize=len(inputs) > 2)
    except ValueError as e:
        raise InvalidArgument(f"{name}: equation '{equation}': {e}") from None
    return np.asarray(res).astype(dt, copy=False)


@rule("Einsum")
def _einsum_rule(f):
    return [(f.common_type(), None)]


@op("Det", since=11)
@via_float32
def det(x, *, ctx=None):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgument(f"{_name('Det', ctx)}: input must be [..., M, M], got {x.shape}")
    ct = np.float64 if x.dtype == np.float64 else np.float32
    return np.asarray(np.linalg.det(x.astype(ct, copy=False))).astype(x.dtype, copy=False)


@rule("Det")
def _det_rule(f):
    d = f.dims(0)
    return [(f.type(0), None if d is None else d[:-2])]
