"""Resize (opsets 10-19: nearest/linear/cubic, every coordinate mode, antialias, axes, aspect policy) and Upsample."""
import math

import numpy as np

from ..errors import InvalidArgument, OnnxideError
from ..runtime import limits
from .inference import rule, unknown_dims
from .math import via_float32
from .registry import op


def _cast_back(y, dtype):
    """Cast the float64 interpolation result back to the input dtype (integers round and saturate)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(y), info.min, info.max).astype(dtype)
    if dtype.kind == "b":
        return y != 0
    return y.astype(dtype)


def _source_coords(mode, n_out, n_in, scale, roi_start, roi_end):
    """Source coordinate of every output index along one axis, and the tf_crop_and_resize extrapolation mask."""
    y = np.arange(n_out, dtype=np.float64)
    out_len = scale * n_in  # ONNX uses the un-rounded output length in the transforms
    extrap = None
    if mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        adjustment = n_out / out_len
        x = (n_in / 2.0) * (1 - adjustment) + (y + 0.5) / scale - 0.5
    elif mode == "pytorch_half_pixel":
        x = np.full(n_out, -0.5) if out_len == 1 else (y + 0.5) / scale - 0.5
    elif mode == "align_corners":
        x = np.zeros(n_out) if out_len == 1 else y * (n_in - 1) / (out_len - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_half_pixel_for_nn":
        x = (y + 0.5) / scale
    elif mode == "tf_crop_and_resize":
        if out_len == 1:
            x = np.full(n_out, (roi_end - roi_start) * (n_in - 1) / 2.0)
        else:
            x = y * (roi_end - roi_start) * (n_in - 1) / (out_len - 1)
        x = x + roi_start * (n_in - 1)
        extrap = (x < 0) | (x > n_in - 1)
    else:
        raise InvalidArgument(f"Resize: unsupported coordinate_transformation_mode '{mode}'")
    return x, extrap


def _nearest_index(x, nearest_mode):
    if nearest_mode == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if nearest_mode == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if nearest_mode == "floor":
        return np.floor(x)
    if nearest_mode == "ceil":
        return np.ceil(x)
    if nearest_mode == "simple":  # Resize-10 / Upsample (onnxruntime's behaviour)
        return x
    raise InvalidArgument(f"Resize: unsupported nearest_mode '{nearest_mode}'")


def _cubic_kernel(d, a):
    d = np.abs(d)
    d2, d3 = d * d, d * d * d
    near = (a + 2) * d3 - (a + 3) * d2 + 1
    far = a * d3 - 5 * a * d2 + 8 * a * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _taps(x, mode, scale, antialias, cubic_a):
    """(offsets from the left neighbour, weights) for each output: shapes (n_out, k)."""
    base = np.ceil(x) - 1  # left neighbour; an integer x counts as ratio 1 from its left neighbour
    ratio = x - base  # in (0, 1]
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "linear":
        start = int(math.floor(-1.0 / s) + 1) if antialias else 0
        offs = np.arange(start, 2 - start, dtype=np.float64)
        w = np.clip(1 - np.abs((offs[None, :] - ratio[:, None]) * s), 0, 1)
    else:  # cubic
        start = int(math.floor(-2.0 / s) + 1) if antialias else -1
        offs = np.arange(start, 2 - start, dtype=np.float64)
        w = _cubic_kernel((offs[None, :] - ratio[:, None]) * s, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    return base, offs, w


def axis_taps(n_in, n_out, scale, roi, p):
    """One axis of a Resize as taps: (source indices (n_out, k) clipped to the input, weights (n_out, k) or None for
    nearest, the tf_crop_and_resize extrapolation mask or None). EP kernels interpolate with these tables too."""
    x, extrap = _source_coords(p["ctm"], n_out, n_in, scale, roi[0], roi[1])
    if p["mode"] == "nearest":
        idx = _nearest_index(x, p["nearest_mode"])
        if p["nearest_mode"] == "simple":
            idx = np.ceil(x) if scale < 1 else np.floor(x)
        return np.clip(idx, 0, n_in - 1).astype(np.intp)[:, None], None, extrap
    base, offs, w = _taps(x, p["mode"], scale, p["antialias"], p["cubic_a"])
    idx = base[:, None] + offs[None, :]
    if p["exclude_outside"]:
        w = np.where((idx < 0) | (idx > n_in - 1), 0.0, w)
        tot = w.sum(axis=1, keepdims=True)
        w = w / np.where(tot == 0, 1.0, tot)
    return np.clip(idx, 0, n_in - 1).astype(np.intp), w, extrap


def _resize_axis(data, axis, n_out, scale, roi, p):
    """Interpolate `data` (float64 for linear/cubic) along one axis; returns (result, extrapolation mask)."""
    if n_out == 0:
        shape = list(data.shape)
        shape[axis] = 0
        return np.empty(shape, data.dtype), None
    idx, w, extrap = axis_taps(data.shape[axis], n_out, scale, roi, p)
    if w is None:
        return np.take(data, idx[:, 0], axis=axis), extrap
    moved = np.moveaxis(data, axis, -1)
    gathered = moved[..., idx]  # (..., n_out, k)
    out = np.einsum("...ok,ok->...o", gathered, w)
    return np.moveaxis(out, -1, axis), extrap


def resize_plan(shape, roi, scales, sizes, p, axes=None, policy="stretch"):
    """A Resize of an input of `shape`, checked: (output shape, [(axis, n_out, scale, (roi start, roi end))] for the
    axes that change, in order)."""
    r = len(shape)
    if axes is None:
        axes = list(range(r))
    else:
        axes = [a + r if a < 0 else a for a in axes]
        if any(a < 0 or a >= r for a in axes) or len(set(axes)) != len(axes):
            raise InvalidArgument(f"Resize: invalid axes {axes} for rank {r}")
    roi = None if roi is None or roi.size == 0 else np.asarray(roi, np.float64).ravel()
    scales = None if scales is None or scales.size == 0 else np.asarray(scales, np.float64).ravel()
    sizes = None if sizes is None or sizes.size == 0 else np.asarray(sizes, np.int64).ravel()
    if (scales is None) == (sizes is None):
        raise InvalidArgument("Resize: exactly one of 'scales' and 'sizes' must be given")
    k = len(axes)
    full_scales = [1.0] * r
    out_shape = list(shape)
    if scales is not None:
        if scales.size != k:
            raise InvalidArgument(f"Resize: scales has {scales.size} values, expected {k}")
        for i, a in enumerate(axes):
            if not scales[i] > 0 or not math.isfinite(scales[i]):
                raise InvalidArgument(f"Resize: scales must be finite and greater than 0, got {scales.tolist()}")
            full_scales[a] = float(scales[i])
            out_shape[a] = int(math.floor(full_scales[a] * shape[a]))
    else:
        if sizes.size != k:
            raise InvalidArgument(f"Resize: sizes has {sizes.size} values, expected {k}")
        if (sizes < 0).any():
            raise InvalidArgument(f"Resize: sizes must not be negative, got {sizes.tolist()}")
        ratios = [sizes[i] / shape[a] if shape[a] else 1.0 for i, a in enumerate(axes)]
        if policy == "stretch":
            for i, a in enumerate(axes):
                full_scales[a], out_shape[a] = ratios[i], int(sizes[i])
        elif policy in ("not_larger", "not_smaller"):
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                full_scales[a] = s
                out_shape[a] = int(math.floor(s * shape[a] + 0.5))
        else:
            raise InvalidArgument(f"Resize: unsupported keep_aspect_ratio_policy '{policy}'")
    full_roi = [(0.0, 1.0)] * r
    if roi is not None:
        if roi.size == 2 * r and k != r:
            full_roi = [(roi[a], roi[a + r]) for a in range(r)]
        elif roi.size == 2 * k:
            full_roi = list(full_roi)
            for i, a in enumerate(axes):
                full_roi[a] = (roi[i], roi[i + k])
        elif p["ctm"] == "tf_crop_and_resize":
            raise InvalidArgument(f"Resize: roi has {roi.size} values, expected {2 * k}")
    if p["mode"] not in ("nearest", "linear", "cubic"):
        raise InvalidArgument(f"Resize: unsupported mode '{p['mode']}'")
    passes = []
    for a in axes:
        same = (math.isclose(full_scales[a], 1.0) and out_shape[a] == shape[a]
                and (p["ctm"] != "tf_crop_and_resize" or full_roi[a] == (0.0, 1.0)))
        if not same:
            passes.append((a, out_shape[a], full_scales[a], full_roi[a]))
    for a, n_out, _, _ in passes:
        if shape[a] == 0 and n_out:
            raise InvalidArgument(f"Resize: input dim {a} is zero but the output's is {n_out} (nothing to scale)")
    limits.check(math.prod(out_shape) * 4, "Resize output {}", tuple(out_shape))
    return out_shape, passes


def _resize(x, roi, scales, sizes, p, axes=None, policy="stretch"):
    r = x.ndim
    _, passes = resize_plan(x.shape, roi, scales, sizes, p, axes, policy)
    nearest = p["mode"] == "nearest"
    y = x if nearest else x.astype(np.float64)
    masks = []
    for a, n_out, scale, roi_a in passes:
        taps = 1 if nearest else (4 if p["mode"] == "cubic" else 2) * (math.ceil(1 / scale) if p["antialias"] and
                                                                        scale < 1 else 1)
        limits.check(math.prod(y.shape) // max(y.shape[a], 1) * n_out * taps * y.dtype.itemsize,
                     "Resize intermediate along axis {}", a)
        y, m = _resize_axis(y, a, n_out, scale, roi_a, p)
        if m is not None and m.any():
            masks.append((a, m))
    if masks:
        y = np.array(y, dtype=np.float64 if not nearest else y.dtype, copy=True)
        hit = np.zeros(y.shape, dtype=bool)
        for a, m in masks:
            shape = [1] * r
            shape[a] = m.size
            hit |= m.reshape(shape)
        y[hit] = p["extrapolation_value"]
    return y if nearest else _cast_back(y, x.dtype)


def _params(mode, ctm, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value, antialias=0):
    if antialias and mode == "nearest":
        antialias = 0
    return {"mode": mode, "ctm": ctm, "nearest_mode": nearest_mode, "cubic_a": float(cubic_coeff_a),
            "exclude_outside": bool(exclude_outside), "extrapolation_value": float(extrapolation_value),
            "antialias": bool(antialias)}


def integer_nearest_factors(shape, scales=None, sizes=None, *, mode="nearest",
                            coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor", axes=None,
                            keep_aspect_ratio_policy="stretch", **_other_attributes):
    """(fh, fw) when a Resize of a 4-D `shape` is nearest upsampling of H and W by whole factors whose source index
    for output i is exactly i // f (what EP kernels that repeat pixels compute), else None."""
    if mode != "nearest" or len(shape) != 4 or axes is not None or nearest_mode == "simple" or \
            coordinate_transformation_mode == "tf_crop_and_resize":
        return None
    n, c, h, w = shape
    if scales is not None and np.size(scales):
        if sizes is not None and np.size(sizes):
            return None
        s = np.asarray(scales, np.float64).ravel()
        if s.size != 4 or s[0] != 1 or s[1] != 1:
            return None
        fh, fw = s[2], s[3]
    elif sizes is not None and np.size(sizes) == 4 and keep_aspect_ratio_policy == "stretch":
        sz = [int(v) for v in np.asarray(sizes).ravel()]
        if sz[:2] != [n, c] or h == 0 or w == 0 or sz[2] % h or sz[3] % w:
            return None
        fh, fw = sz[2] / h, sz[3] / w
    else:
        return None
    if not (math.isfinite(fh) and math.isfinite(fw)) or fh != int(fh) or fw != int(fw) or fh < 1 or fw < 1 or \
            n * c * h * w == 0:
        return None
    limits.check(n * c * h * int(fh) * w * int(fw) * 4, "Resize output")
    for n_in, f in ((h, int(fh)), (w, int(fw))):
        x, _ = _source_coords(coordinate_transformation_mode, n_in * f, n_in, float(f), 0.0, 1.0)
        idx = np.clip(_nearest_index(x, nearest_mode), 0, n_in - 1)
        if f > 1 and not np.array_equal(idx, np.arange(n_in * f) // f):
            return None
    return int(fh), int(fw)


@op("Resize", since=10, host_inputs=(1,))
@via_float32
def resize_10(x, scales, *, mode="nearest"):
    if mode not in ("nearest", "linear"):
        raise InvalidArgument(f"Resize(10): unsupported mode '{mode}'")
    p = _params(mode, "asymmetric", "simple", -0.75, 0, 0.0)
    return _resize(x, None, scales, None, p)


@op("Resize", since=11, host_inputs=(1, 2, 3))
@via_float32
def resize_11(x, roi=None, scales=None, sizes=None, *, mode="nearest",
              coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75, exclude_outside=0,
              extrapolation_value=0.0, nearest_mode="round_prefer_floor"):
    p = _params(mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside,
                extrapolation_value)
    return _resize(x, roi, scales, sizes, p)


@op("Resize", since=18, host_inputs=(1, 2, 3))
@via_float32
def resize_18(x, roi=None, scales=None, sizes=None, *, mode="nearest",
              coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75, exclude_outside=0,
              extrapolation_value=0.0, nearest_mode="round_prefer_floor", antialias=0, axes=None,
              keep_aspect_ratio_policy="stretch"):
    p = _params(mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside,
                extrapolation_value, antialias)
    return _resize(x, roi, scales, sizes, p, axes, keep_aspect_ratio_policy)


def upsample_params(rank, scales, mode):
    """Upsample as a Resize: (scales, Resize parameters), checked."""
    mode = {"bilinear": "linear", "trilinear": "linear"}.get(mode, mode)
    if mode not in ("nearest", "linear"):
        raise InvalidArgument(f"Upsample: unsupported mode '{mode}'")
    scales = np.asarray(scales, np.float64).ravel()
    if scales.size != rank:
        raise InvalidArgument(f"Upsample: scales has {scales.size} values for rank {rank}")
    if np.any(scales < 1):
        raise InvalidArgument("Upsample: scales must be >= 1")
    return scales, _params(mode, "asymmetric", "simple", -0.75, 0, 0.0)


def _upsample(x, scales, mode):
    scales, p = upsample_params(x.ndim, scales, mode)
    return _resize(x, None, scales, None, p)


@op("Upsample", since=1)
@via_float32
def upsample_1(x, *, height_scale, width_scale, mode="nearest"):
    scales = [1.0] * (x.ndim - 2) + [height_scale, width_scale]
    return _upsample(x, scales, mode)


@op("Upsample", since=7)
@via_float32
def upsample_7(x, *, scales, mode="nearest"):
    return _upsample(x, scales, mode)


@op("Upsample", since=9, host_inputs=(1,))
@via_float32
def upsample_9(x, scales, *, mode="nearest"):
    return _upsample(x, scales, mode)


@rule("Resize", "Upsample")
def _resize_rule(f):
    """The input's type and rank; the dims too where the input's are fixed and the scales or sizes are constants
    (resize_plan's output shape, what the kernel makes)."""
    dims = f.dims(0)
    unknown = [(f.type(0), unknown_dims(f.rank(0)))]
    if dims is None or not all(isinstance(d, int) for d in dims) or f.node.op_type != "Resize" or f.opset < 11:
        return unknown  # (Resize-10 and Upsample: their scales rule is upsample_params')
    roi, scales, sizes = f.const(1), f.const(2), f.const(3)
    if (f.has(2) and scales is None) or (f.has(3) and sizes is None):
        return unknown
    p = _params(f.attr("mode", "nearest"), f.attr("coordinate_transformation_mode", "half_pixel"), "floor", -0.75, 0,
                0.0)
    try:
        out, _ = resize_plan(tuple(dims), None if roi is None else np.asarray(roi), None if scales is None else
                             np.asarray(scales), None if sizes is None else np.asarray(sizes), p, f.attr("axes"),
                             f.attr("keep_aspect_ratio_policy", "stretch"))
    except (OnnxideError, ValueError, TypeError):
        return unknown  # (the kernel reports what is wrong)
    return [(f.type(0), [int(d) for d in out])]
