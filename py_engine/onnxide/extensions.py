"""onnxide's counterpart of onnxruntime-extensions' Python custom ops: `@onnx_op` declares a function as the kernel
of a custom op, `PyCustomOpDef` holds the element type constants, and `get_library_path()` is what
`SessionOptions.register_custom_ops_library` takes to enable every declared op in a session (onnxruntime-extensions'
user flow). `SessionOptions.register_custom_op(op)` enables one op in one session instead. Pure Python: the same in
Pyodide. The engine side (checks, placement on the CPU EP) is ops/custom.py."""
import os

from . import dtypes as dt
from .ops.custom import DECLARED, DEFAULT_DOMAIN, CustomOp

__all__ = ["CustomOp", "PyCustomOpDef", "PyOp", "default_opset_domain", "get_library_path", "onnx_op"]


class PyCustomOpDef:
    """Element type constants for a custom op's inputs, outputs and attributes (ONNX's element type codes)."""

    dt_float, dt_uint8, dt_int8, dt_uint16, dt_int16 = dt.FLOAT, dt.UINT8, dt.INT8, dt.UINT16, dt.INT16
    dt_int32, dt_int64, dt_string, dt_bool, dt_float16 = dt.INT32, dt.INT64, dt.STRING, dt.BOOL, dt.FLOAT16
    dt_double, dt_uint32, dt_uint64, dt_bfloat16 = dt.DOUBLE, dt.UINT32, dt.UINT64, dt.BFLOAT16
    dt_complex64, dt_complex128 = dt.COMPLEX64, dt.COMPLEX128


PyOp = PyCustomOpDef


def default_opset_domain():
    """The domain custom ops are declared in unless told otherwise: 'ai.onnx.contrib'."""
    return DEFAULT_DOMAIN


def get_library_path():
    """The path SessionOptions.register_custom_ops_library takes to enable the @onnx_op ops (this module's file)."""
    return os.path.abspath(__file__)


def is_library_path(path):
    """Whether `path` names what get_library_path() returns."""
    try:
        return os.path.realpath(os.fspath(path)) == os.path.realpath(get_library_path())
    except TypeError:
        return False


def onnx_op(op_type=None, inputs=None, outputs=None, attrs=None, domain=DEFAULT_DOMAIN, shape_fn=None):
    """Decorator declaring the function as the kernel of custom op `domain:op_type` (op_type: the function's name
    by default). `inputs` / `outputs`: a PyCustomOpDef.dt_* per input / output ([dt_float] each by default);
    `attrs`: {name: dt_int64 | dt_float | dt_string | [one of them] for a list}, or a list of names (string
    attributes); each arrives as the keyword argument of that name. `shape_fn(*input_shapes, **attrs)` returns the
    list of output shapes (checked against every result; without it, results are checked against the shapes the
    model declares). Returns a CustomOp (callable as the function). Declaring the same op again replaces it."""
    if callable(op_type) and inputs is None and outputs is None:
        raise TypeError("onnx_op is called with the declaration first: @onnx_op(op_type='MyOp', inputs=[...], ...)")

    def declare(fn):
        op = CustomOp(fn, op_type or fn.__name__, domain,
                      [PyCustomOpDef.dt_float] if inputs is None else list(inputs),
                      [PyCustomOpDef.dt_float] if outputs is None else list(outputs),
                      {} if attrs is None else attrs, shape_fn)
        DECLARED[(op.domain, op.op_type)] = op
        return op

    return declare
