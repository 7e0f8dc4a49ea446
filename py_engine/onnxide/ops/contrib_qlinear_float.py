"""com.microsoft QLinearAveragePool / QLinearSoftmax / QLinearWhere: dequantize (per-tensor), the float op, requantize
(round half to even, saturate) - what onnxruntime's quantization tool emits for AveragePool, Softmax and Where."""
import numpy as np

from .contrib_quant import _check_type, _k, _name, dequant, quant
from .inference import rule, same_as_input
from .registry import MS_DOMAIN, op


def _out_dtype(x, y_zero_point):
    return np.asarray(y_zero_point).dtype if y_zero_point is not None else x.dtype


@op("QLinearAveragePool", since=1, domain=MS_DOMAIN)
def qlinear_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point=None, *, auto_pad="NOTSET", ceil_mode=0,
                         channels_last=0, count_include_pad=0, kernel_shape=None, pads=None, strides=None, ctx=None):
    _check_type(x, x_zero_point, _name("QLinearAveragePool", ctx))
    xf = dequant(x, x_scale, x_zero_point)
    if channels_last:
        xf = np.moveaxis(xf, -1, 1)
    y = _k("AveragePool", 19)(xf, auto_pad=auto_pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                              kernel_shape=kernel_shape, pads=pads, strides=strides)
    if channels_last:
        y = np.moveaxis(y, 1, -1)
    return quant(y, y_scale, y_zero_point, _out_dtype(x, y_zero_point))


@op("QLinearSoftmax", since=1, domain=MS_DOMAIN)
def qlinear_softmax(x, x_scale, x_zero_point, y_scale, y_zero_point=None, *, axis=-1, opset=13, ctx=None):
    _check_type(x, x_zero_point, _name("QLinearSoftmax", ctx))
    xf = dequant(x, x_scale, x_zero_point)
    y = _k("Softmax", 13 if opset >= 13 else 1)(xf, axis=axis)
    return quant(y, y_scale, y_zero_point, _out_dtype(x, y_zero_point))


@op("QLinearWhere", since=1, domain=MS_DOMAIN)
def qlinear_where(condition, x, x_scale, x_zero_point, y, y_scale, y_zero_point, z_scale, z_zero_point, *, ctx=None):
    name = _name("QLinearWhere", ctx)
    _check_type(x, x_zero_point, name)
    _check_type(y, y_zero_point, name)
    z = _k("Where", 16)(condition, dequant(x, x_scale, x_zero_point), dequant(y, y_scale, y_zero_point))
    return quant(z, z_scale, z_zero_point, _out_dtype(x, z_zero_point))


@rule("QLinearAveragePool", domain=MS_DOMAIN)
def _qlinear_average_pool_rule(f):
    """x's type (y_zero_point's when given); the pooled dims are left to run time."""
    from .inference import unknown_dims
    return [(f.type(4) if f.has(4) else f.type(0), unknown_dims(f.rank(0)))]


rule("QLinearSoftmax", domain=MS_DOMAIN)(same_as_input)


@rule("QLinearWhere", domain=MS_DOMAIN)
def _qlinear_where_rule(f):
    from .inference import broadcast
    return [(f.type(8), broadcast([f.dims(0), f.dims(1), f.dims(4)]))]
