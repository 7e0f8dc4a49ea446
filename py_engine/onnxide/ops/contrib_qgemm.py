"""com.microsoft QGemm: alpha * (A - a_zp)(B - b_zp) * a_scale * b_scale + C (int32, same scale), requantized to
y_scale / y_zero_point, or float32 output without y_scale (onnxruntime's quantization tool emits it for Gemm)."""
import numpy as np

from ..errors import InvalidArgument
from .inference import rule
from .registry import MS_DOMAIN, op

_RANGES = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def _ints(v):
    return np.asarray(v).astype(np.int64)


@op("QGemm", since=1, domain=MS_DOMAIN)
def qgemm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c=None, y_scale=None, y_zero_point=None, *,
          alpha=1.0, transA=0, transB=0, ctx=None):  # noqa: N803 - the op's attribute names
    name = f"QGemm node '{ctx.node_name}'" if ctx is not None and getattr(ctx, "node_name", None) else "QGemm"
    if a.dtype not in _RANGES or b.dtype not in _RANGES or a.ndim != 2 or b.ndim != 2:
        raise InvalidArgument(f"{name}: A and B must be 2-D uint8 / int8 tensors, got {a.dtype}{list(a.shape)} "
                              f"and {b.dtype}{list(b.shape)}")
    af = _ints(a.T if transA else a) - _ints(a_zero_point).reshape(())
    bz = _ints(b_zero_point).reshape(-1)
    bf = _ints(b.T if transB else b) - (bz if bz.size > 1 else bz.reshape(()))
    if af.shape[1] != bf.shape[0]:
        raise InvalidArgument(f"{name}: shapes {list(af.shape)} and {list(bf.shape)} cannot be multiplied")
    acc = (af @ bf).astype(np.float64) * np.float64(alpha)
    if c is not None:
        if c.dtype != np.int32:
            raise InvalidArgument(f"{name}: C must be int32, got {c.dtype}")
        acc = acc + c.astype(np.float64)
    bs = np.asarray(b_scale, np.float32).reshape(-1)
    scale = np.float32(np.asarray(a_scale, np.float32).reshape(())) * (bs if bs.size > 1 else bs.reshape(()))
    if y_scale is None:
        return (acc.astype(np.float32) * scale).astype(np.float32)
    out = np.dtype(np.asarray(y_zero_point).dtype if y_zero_point is not None else a.dtype)
    lo, hi = _RANGES[out]
    y = acc.astype(np.float32) * (scale / np.asarray(y_scale, np.float32).reshape(()))
    y = np.rint(y) + (0 if y_zero_point is None else float(np.asarray(y_zero_point).reshape(())))
    return np.clip(y, lo, hi).astype(out)


@rule("QGemm", domain=MS_DOMAIN)
def _qgemm_rule(f):
    """y_zero_point's type (A's with y_scale only, float32 without); rows of op(A) x columns of op(B)."""
    from onnx import TensorProto
    t = (f.type(8) if f.has(8) else f.type(0)) if f.has(7) else TensorProto.FLOAT
    da, db = f.dims(0), f.dims(3)
    if da is None or db is None or len(da) != 2 or len(db) != 2:
        return [(t, None)]
    m = da[1] if f.attr("transA", 0) else da[0]
    n = db[0] if f.attr("transB", 0) else db[1]
    return [(t, [m, n])]
