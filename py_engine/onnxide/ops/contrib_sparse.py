"""com.microsoft SparseToDenseMatMul: alpha * op(A) @ op(B), A densified before it reaches the kernel."""
import numpy as np

from ..errors import InvalidArgument
from .inference import rule
from .linalg import _transposed, matmul_dims
from .registry import MS_DOMAIN, op


@op("SparseToDenseMatMul", since=1, domain=MS_DOMAIN)
def sparse_to_dense_matmul(a, b, *, alpha=1.0, transA=0, transB=0):  # noqa: N803 - ONNX attribute names
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgument(f"SparseToDenseMatMul: A and B must be 2-D, got {a.shape} and {b.shape}")
    a = a.T if transA else a
    b = b.T if transB else b
    if a.shape[1] != b.shape[0]:
        raise InvalidArgument(f"SparseToDenseMatMul: A {a.shape} and B {b.shape} do not multiply")
    y = a.astype(b.dtype, copy=False) @ b
    return y if alpha == 1.0 else (y * np.asarray(alpha, b.dtype)).astype(b.dtype, copy=False)


@rule("SparseToDenseMatMul", domain=MS_DOMAIN)
def sparse_to_dense_matmul_rule(f):
    """B's element type; the product's dims when both ranks are known."""
    a, b = _transposed(f.dims(0), f.attr("transA")), _transposed(f.dims(1), f.attr("transB"))
    return [(f.type(1), matmul_dims(a, b))]
