"""Spatial image ops: GridSample (N-d), AffineGrid, RoiAlign and NonMaxSuppression."""
import itertools
import math

import numpy as np

from ..dtypes import INT64
from ..errors import InvalidArgument
from ..runtime import limits
from .inference import rule
from .math import via_float32
from .registry import op


# ----------------------------------------------------------------------------------------------- GridSample
def _denormalize(g, size, align_corners):
    if align_corners:
        return (g + 1) / 2.0 * (size - 1)
    return ((g + 1) * size - 1) / 2.0


def _reflect(x, lo, hi):
    """Reflect coordinates into [lo, hi] by bouncing off the borders (GridSample's reflection padding)."""
    rng = hi - lo
    if rng <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    n = np.floor(d / rng)
    r = d - n * rng
    even = (n % 2) == 0
    low_res = np.where(even, lo + r, hi - r)
    high_res = np.where(even, hi - r, lo + r)
    return np.where(below, low_res, np.where(above, high_res, x))


def _cubic_weights(t, a=-0.75):
    """Keys cubic weights for taps at floor-1 .. floor+2 given the fractional part t; shape (..., 4)."""
    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def _grid_sample(x, grid, mode, padding_mode, align_corners):
    if x.ndim < 3:
        raise InvalidArgument(f"GridSample: input shape {x.shape} must be (N, C, D1, ...), rank 3 or more")
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    nd = len(spatial)
    if grid.ndim != nd + 2 or grid.shape[0] != n or grid.shape[-1] != nd:
        raise InvalidArgument(f"GridSample: grid shape {grid.shape} does not match input shape {x.shape}")
    out_sp = grid.shape[1:-1]
    if mode in ("bilinear",):
        mode = "linear"
    elif mode == "bicubic":
        mode = "cubic"
    if mode not in ("nearest", "linear", "cubic"):
        raise InvalidArgument(f"GridSample: unsupported mode '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise InvalidArgument(f"GridSample: unsupported padding_mode '{padding_mode}'")
    if x.size == 0 or grid.size == 0:
        return np.zeros((n, c) + tuple(out_sp), x.dtype)
    g = grid.astype(np.float64)
    per_dim = []  # for each spatial dim: (indices (N,*G,k) int, weights (N,*G,k), valid mask)
    for d in range(nd):
        size = spatial[d]
        coord = _denormalize(g[..., nd - 1 - d], size, align_corners)  # the grid's last dim is (x, y, z...)
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if mode == "nearest":
            coord = np.rint(coord)
        if padding_mode == "border":
            coord = np.clip(coord, 0, size - 1)
        elif padding_mode == "reflection":
            coord = _reflect(coord, lo, hi)
        if mode == "nearest":
            idx = np.trunc(coord)[..., None]
            w = np.ones_like(idx)
        elif mode == "linear":
            f = np.floor(coord)
            t = (coord - f)[..., None]
            idx = f[..., None] + np.array([0.0, 1.0])
            w = np.concatenate([1 - t, t], axis=-1)
        else:
            f = np.floor(coord)
            idx = f[..., None] + np.array([-1.0, 0.0, 1.0, 2.0])
            w = _cubic_weights(coord - f)
        if padding_mode == "zeros":
            valid = (idx >= 0) & (idx <= size - 1)
            w = np.where(valid, w, 0.0)
        elif padding_mode == "border":
            pass
        else:
            idx = np.trunc(_reflect(idx, lo, hi))
        nan = np.isnan(idx)  # (a NaN grid coordinate samples nothing)
        if nan.any():
            idx, w = np.where(nan, 0.0, idx), np.where(nan, 0.0, w)
        idx = np.clip(idx, 0, size - 1).astype(np.intp)
        per_dim.append((idx, w))
    xt = np.moveaxis(x, 1, -1).astype(np.float64)  # (N, *S, C)
    bidx = np.arange(n).reshape((n,) + (1,) * len(out_sp))
    out = np.zeros((n,) + tuple(out_sp) + (c,), np.float64)
    taps = [range(per_dim[d][0].shape[-1]) for d in range(nd)]
    for combo in itertools.product(*taps):
        weight = np.ones(per_dim[0][1].shape[:-1])
        index = [bidx]
        for d, k in enumerate(combo):
            weight = weight * per_dim[d][1][..., k]
            index.append(per_dim[d][0][..., k])
        out += xt[tuple(index)] * weight[..., None]
    out = np.moveaxis(out, -1, 1)
    if x.dtype.kind in "iu":
        return np.rint(out).astype(x.dtype)
    return out.astype(x.dtype)


@op("GridSample", since=16)
@via_float32
def grid_sample_16(x, grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):
    if x.ndim != 4:
        raise InvalidArgument(f"GridSample(16): only 4-D input is supported, got rank {x.ndim}")
    return _grid_sample(x, grid, mode, padding_mode, bool(align_corners))


@op("GridSample", since=20)
@via_float32
def grid_sample_20(x, grid, *, align_corners=0, mode="linear", padding_mode="zeros"):
    return _grid_sample(x, grid, mode, padding_mode, bool(align_corners))


# ----------------------------------------------------------------------------------------------- AffineGrid
def _base_coords(n, align_corners):
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(n)
    return (np.arange(n, dtype=np.float64) * 2 + 1) / n - 1


@op("AffineGrid", since=20, host_inputs=(1,))
@via_float32
def affine_grid(theta, size, *, align_corners=0):
    size = [int(s) for s in np.asarray(size).ravel()]
    if len(size) not in (4, 5):
        raise InvalidArgument(f"AffineGrid: size must have 4 or 5 elements, got {len(size)}")
    n, spatial = size[0], size[2:]
    nd = len(spatial)
    if theta.shape != (n, nd, nd + 1):
        raise InvalidArgument(f"AffineGrid: theta shape {theta.shape} does not match size {size}")
    axes = [_base_coords(s, bool(align_corners)) for s in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    # homogeneous coordinates ordered (x, y[, z], 1): x varies along the last spatial dim
    base = np.stack([m for m in reversed(mesh)] + [np.ones_like(mesh[0])], axis=-1)  # (*S, nd+1)
    grid = np.einsum("...k,njk->n...j", base, theta.astype(np.float64))
    return grid.astype(theta.dtype)


# ----------------------------------------------------------------------------------------------- RoiAlign
def _roi_align(x, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
               half_pixel):
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        raise InvalidArgument(f"RoiAlign: bad shapes X {x.shape}, rois {rois.shape}")
    if mode not in ("avg", "max"):
        raise InvalidArgument(f"RoiAlign: unsupported mode '{mode}'")
    num_rois = rois.shape[0]
    bi = np.asarray(batch_indices).ravel().astype(np.int64)
    if bi.size != num_rois:
        raise InvalidArgument("RoiAlign: batch_indices and rois disagree on the number of rois")
    _, c, h, w = x.shape
    ph, pw = int(output_height), int(output_width)
    out = np.zeros((num_rois, c, ph, pw), np.float64)
    off = 0.5 if half_pixel else 0.0
    xd = x.astype(np.float64)
    for r in range(num_rois):
        b = int(bi[r])
        if b < 0 or b >= x.shape[0]:
            raise InvalidArgument(f"RoiAlign: batch index {b} out of range")
        x1, y1, x2, y2 = (float(v) for v in rois[r])
        sw, sh = x1 * spatial_scale - off, y1 * spatial_scale - off
        rw, rh = x2 * spatial_scale - off - sw, y2 * spatial_scale - off - sh
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / ph))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / pw))
        limits.check(x.shape[1] * ph * max(gh, 0) * pw * max(gw, 0) * 8 * 4, "RoiAlign sampling grid of {}x{} points "
                     "per bin", gh, gw)
        count = max(gh * gw, 1)
        if gh <= 0 or gw <= 0:
            continue
        ys = sh + np.arange(ph)[:, None] * bh + (np.arange(gh)[None, :] + 0.5) * bh / gh  # (ph, gh)
        xs = sw + np.arange(pw)[:, None] * bw + (np.arange(gw)[None, :] + 0.5) * bw / gw  # (pw, gw)

        def prep(v, lim):
            inside = ~((v < -1.0) | (v > lim))
            v = np.maximum(v, 0.0)
            low = np.floor(v).astype(np.int64)
            clamp = low >= lim - 1
            low = np.where(clamp, lim - 1, low)
            high = np.where(clamp, lim - 1, low + 1)
            v = np.where(clamp, low, v)
            frac = v - low
            return inside, low, high, frac

        iy, yl, yh, ly = prep(ys, h)
        ix, xl, xh, lx = prep(xs, w)
        # broadcast to (ph, gh, pw, gw)
        e = (slice(None), slice(None), None, None)
        f = (None, None, slice(None), slice(None))
        valid = iy[e] & ix[f]
        hy, hx = 1 - ly, 1 - lx
        ws = [hy[e] * hx[f], hy[e] * lx[f], ly[e] * hx[f], ly[e] * lx[f]]
        ws = [np.where(valid, wi, 0.0) for wi in ws]
        img = xd[b]  # (C, H, W)
        vals = [img[:, yl[e], xl[f]], img[:, yl[e], xh[f]], img[:, yh[e], xl[f]], img[:, yh[e], xh[f]]]
        terms = [wi[None] * vi for wi, vi in zip(ws, vals)]  # (C, ph, gh, pw, gw)
        if mode == "avg":
            out[r] = sum(terms).sum(axis=(2, 4)) / count
        else:
            m = np.maximum(np.maximum(terms[0], terms[1]), np.maximum(terms[2], terms[3]))
            out[r] = m.max(axis=(2, 4))
    return out.astype(x.dtype)


def _check_roi_align(x, rois, output_height, output_width, sampling_ratio, spatial_scale):
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        raise InvalidArgument(f"RoiAlign: X must be 4-D and rois (num_rois, 4), got {x.shape} and {rois.shape}")
    if output_height < 1 or output_width < 1 or sampling_ratio < 0 or not math.isfinite(spatial_scale):
        raise InvalidArgument(f"RoiAlign: output_height {output_height} and output_width {output_width} must be "
                              f"positive, sampling_ratio {sampling_ratio} non-negative, spatial_scale finite")
    limits.check_shape((rois.shape[0], x.shape[1], output_height, output_width), x.dtype, "RoiAlign output")


@op("RoiAlign", since=10)
@via_float32
def roi_align_10(x, rois, batch_indices, *, mode="avg", output_height=1, output_width=1, sampling_ratio=0,
                 spatial_scale=1.0):
    _check_roi_align(x, rois, output_height, output_width, sampling_ratio, spatial_scale)
    return _roi_align(x, rois, batch_indices, mode, output_height, output_width, sampling_ratio,
                      spatial_scale, False)


@op("RoiAlign", since=16)
@via_float32
def roi_align_16(x, rois, batch_indices, *, coordinate_transformation_mode="half_pixel", mode="avg",
                 output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0):
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise InvalidArgument(f"RoiAlign: unsupported coordinate_transformation_mode "
                              f"'{coordinate_transformation_mode}'")
    _check_roi_align(x, rois, output_height, output_width, sampling_ratio, spatial_scale)
    return _roi_align(x, rois, batch_indices, mode, output_height, output_width, sampling_ratio,
                      spatial_scale, coordinate_transformation_mode == "half_pixel")


# ----------------------------------------------------------------------------------------------- NonMaxSuppression
def _corners(boxes, center_point_box):
    b = boxes.astype(np.float64)
    if center_point_box:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)


@op("NonMaxSuppression", since=10, host_inputs=(2, 3, 4))
@via_float32
def non_max_suppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=None,
                        score_threshold=None, *, center_point_box=0):
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3:
        raise InvalidArgument(f"NonMaxSuppression: bad shapes boxes {boxes.shape}, scores {scores.shape}")
    nb, nc, n = scores.shape
    if boxes.shape[0] != nb or boxes.shape[1] != n:
        raise InvalidArgument("NonMaxSuppression: boxes and scores disagree on batch or box count")
    max_out = 0 if max_output_boxes_per_class is None or max_output_boxes_per_class.size == 0 \
        else int(np.asarray(max_output_boxes_per_class).ravel()[0])
    iou_t = 0.0 if iou_threshold is None or iou_threshold.size == 0 \
        else float(np.asarray(iou_threshold).ravel()[0])
    score_t = None if score_threshold is None or score_threshold.size == 0 \
        else float(np.asarray(score_threshold).ravel()[0])
    if iou_t < 0 or iou_t > 1:
        raise InvalidArgument("NonMaxSuppression: iou_threshold must be in [0, 1]")
    result = []
    if max_out > 0:
        y1, x1, y2, x2 = _corners(boxes, center_point_box)
        area = (y2 - y1) * (x2 - x1)
        for b in range(nb):
            # pairwise IoU of this batch's boxes
            iy1 = np.maximum(y1[b][:, None], y1[b][None, :])
            ix1 = np.maximum(x1[b][:, None], x1[b][None, :])
            iy2 = np.minimum(y2[b][:, None], y2[b][None, :])
            ix2 = np.minimum(x2[b][:, None], x2[b][None, :])
            inter = np.clip(iy2 - iy1, 0, None) * np.clip(ix2 - ix1, 0, None)
            union = area[b][:, None] + area[b][None, :] - inter
            ok = (area[b][:, None] > 0) & (area[b][None, :] > 0) & (union > 0)
            iou = np.where(ok, inter / np.where(union > 0, union, 1.0), 0.0)
            for cl in range(nc):
                sc = scores[b, cl].astype(np.float64)
                cand = np.arange(n) if score_t is None else np.nonzero(sc > score_t)[0]
                order = cand[np.argsort(-sc[cand], kind="stable")]
                alive = np.ones(order.size, bool)
                picked = 0
                for i in range(order.size):
                    if not alive[i]:
                        continue
                    k = order[i]
                    result.append((b, cl, k))
                    picked += 1
                    if picked >= max_out:
                        break
                    alive[i + 1:] &= ~(iou[k, order[i + 1:]] > iou_t)
    return np.array(result, dtype=np.int64).reshape(-1, 3)


@rule("GridSample")
def _grid_sample_rule(f):
    """X's type; [N, C, *grid's spatial dims]."""
    x, grid = f.dims(0), f.dims(1)
    return [(f.type(0), None if x is None or grid is None else x[:2] + grid[1:-1])]


@rule("AffineGrid")
def _affine_grid_rule(f):
    """theta's type; [N, *spatial size, spatial rank] from a constant size."""
    size = f.ints(1)
    return [(f.type(0), None if size is None or len(size) < 3 else [size[0]] + size[2:] + [len(size) - 2])]


@rule("RoiAlign")
def _roi_align_rule(f):
    """X's type; [number of rois, C, output_height, output_width]."""
    x, rois = f.dims(0), f.dims(1)
    return [(f.type(0), [rois[0] if rois else None, x[1] if x is not None and len(x) > 1 else None,
                         f.attr("output_height", 1), f.attr("output_width", 1)])]


@rule("NonMaxSuppression")
def _nms_rule(f):
    """int64 [selected, 3] (batch, class, box index)."""
    return [(INT64, [None, 3])]
