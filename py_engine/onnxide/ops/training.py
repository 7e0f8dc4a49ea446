"""ai.onnx.preview.training optimizer ops: Adagrad, Adam and Momentum (one update step over n tensors)."""
import numpy as np

from ..errors import InvalidArgument
from .math import via_float32
from .registry import op

TRAINING_DOMAIN = "ai.onnx.preview.training"


def _scalar(a):
    return np.asarray(a).reshape(-1)[0]


def _groups(name, tensors, k):
    if len(tensors) % k:
        raise InvalidArgument(f"{name}: expected {k} groups of equally many tensors after R and T, "
                              f"got {len(tensors)} inputs")
    n = len(tensors) // k
    groups = [tensors[i * n:(i + 1) * n] for i in range(k)]
    for i in range(n):  # the i-th tensor of each group updates together: one shape
        if not all(isinstance(g[i], np.ndarray) and g[i].dtype.kind == "f" for g in groups) or \
                len({g[i].shape for g in groups}) > 1:
            got = [(np.shape(g[i]), getattr(g[i], "dtype", None)) for g in groups]
            raise InvalidArgument(f"{name}: the tensors updated together (X, G, ... number {i}) must be float tensors "
                                  f"of one shape, got {got}")
    return groups


@op("Adagrad", since=1, domain=TRAINING_DOMAIN)
@via_float32
def adagrad(r, t, *tensors, decay_factor=0.0, epsilon=1e-6, norm_coefficient=0.0):
    xs, gs, hs = _groups("Adagrad", tensors, 3)
    lr = float(_scalar(r)) / (1.0 + float(_scalar(t)) * decay_factor)
    x_new, h_new = [], []
    for x, g, h in zip(xs, gs, hs):
        dt = x.dtype
        g_reg = dt.type(norm_coefficient) * x + g
        hn = h + g_reg * g_reg
        x_new.append((x - dt.type(lr) * g_reg / (np.sqrt(hn) + dt.type(epsilon))).astype(dt, copy=False))
        h_new.append(hn.astype(h.dtype, copy=False))
    return tuple(x_new + h_new)


@op("Adam", since=1, domain=TRAINING_DOMAIN)
@via_float32
def adam(r, t, *tensors, alpha=0.9, beta=0.999, epsilon=1e-6, norm_coefficient=0.0, norm_coefficient_post=0.0):
    xs, gs, vs, hs = _groups("Adam", tensors, 4)
    lr = float(_scalar(r))
    step = float(_scalar(t))
    if step > 0:
        lr = lr * np.sqrt(1.0 - beta ** step) / (1.0 - alpha ** step)
    x_new, v_new, h_new = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        dt = x.dtype
        g_reg = dt.type(norm_coefficient) * x + g
        vn = dt.type(alpha) * v + dt.type(1 - alpha) * g_reg
        hn = dt.type(beta) * h + dt.type(1 - beta) * g_reg * g_reg
        xn = x - dt.type(lr) * vn / (np.sqrt(hn) + dt.type(epsilon))
        xn = dt.type(1 - norm_coefficient_post) * xn
        x_new.append(xn.astype(dt, copy=False))
        v_new.append(vn.astype(v.dtype, copy=False))
        h_new.append(hn.astype(h.dtype, copy=False))
    return tuple(x_new + v_new + h_new)


@op("Momentum", since=1, domain=TRAINING_DOMAIN)
@via_float32
def momentum(r, t, *tensors, alpha, beta, mode, norm_coefficient):
    if mode not in ("standard", "nesterov"):
        raise InvalidArgument(f"Momentum: mode must be 'standard' or 'nesterov', got '{mode}'")
    xs, gs, vs = _groups("Momentum", tensors, 3)
    lr = float(_scalar(r))
    beta_adj = beta if float(_scalar(t)) > 0 else 1.0
    x_new, v_new = [], []
    for x, g, v in zip(xs, gs, vs):
        dt = x.dtype
        g_reg = dt.type(norm_coefficient) * x + g
        vn = dt.type(alpha) * v + dt.type(beta_adj) * g_reg
        if mode == "standard":
            xn = x - dt.type(lr) * vn
        else:
            xn = x - dt.type(lr) * (g_reg + dt.type(alpha) * vn)
        x_new.append(xn.astype(dt, copy=False))
        v_new.append(vn.astype(v.dtype, copy=False))
    return tuple(x_new + v_new)
