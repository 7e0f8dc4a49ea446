"""Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (weights, ignore_index, reductions, log_prob)."""
import numpy as np

from ..errors import InvalidArgument
from .inference import rule
from .math import via_float32
from .registry import op
from .softmax import compute_dtype, log_softmax_along


def _nll(logp, target, weight, ignore_index, reduction, name):
    """Weighted NLL of log-probabilities `logp` (N, C, d...) at integer `target` (N, d...), computed in logp's dtype."""
    if logp.ndim < 2:
        raise InvalidArgument(f"{name}: input must have shape (N, C, ...), got {logp.shape}")
    if target.shape != (logp.shape[0],) + logp.shape[2:]:
        raise InvalidArgument(f"{name}: target shape {target.shape} does not match input shape {logp.shape}")
    if reduction not in ("none", "sum", "mean"):
        raise InvalidArgument(f"{name}: unsupported reduction '{reduction}'")
    c = logp.shape[1]
    if weight is not None and np.shape(weight) != (c,):
        raise InvalidArgument(f"{name}: weight shape {np.shape(weight)} must be (C,) = {(c,)}")
    tgt = target.astype(np.int64, copy=False)
    ignored = (tgt == ignore_index) if ignore_index is not None else np.zeros(tgt.shape, dtype=bool)
    valid = ~ignored
    if np.any(valid & ((tgt < 0) | (tgt >= c))):
        raise InvalidArgument(f"{name}: target values must be in [0, {c}) or equal ignore_index")
    safe = np.where(valid, tgt, 0)
    picked = np.take_along_axis(logp, np.expand_dims(safe, 1), axis=1).squeeze(1)
    dt = logp.dtype
    if weight is not None:
        w = np.asarray(weight).astype(dt, copy=False)[safe]
    else:
        w = np.ones(tgt.shape, dtype=dt)
    w = np.where(valid, w, dt.type(0))
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(np.sum(loss), dtype=dt)
    return np.asarray(np.sum(loss) / np.sum(w), dtype=dt)


@op("NegativeLogLikelihoodLoss", since=12)
@via_float32
def nll_loss(input, target, weight=None, *, ignore_index=None, reduction="mean"):  # noqa: A002 - ONNX input name
    cd = compute_dtype(input.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = _nll(input.astype(cd, copy=False), target, weight, ignore_index, reduction, "NegativeLogLikelihoodLoss")
    return np.asarray(loss).astype(input.dtype, copy=False)


@op("SoftmaxCrossEntropyLoss", since=12)
@via_float32
def softmax_cross_entropy_loss(scores, labels, weights=None, *, ignore_index=None, reduction="mean", ctx=None):
    cd = compute_dtype(scores.dtype)
    if scores.ndim < 2:
        raise InvalidArgument(f"SoftmaxCrossEntropyLoss: scores must have shape (N, C, ...), got {scores.shape}")
    if scores.shape[1] == 0:
        raise InvalidArgument(f"SoftmaxCrossEntropyLoss: scores {scores.shape} have no classes (C = 0)")
    logp = log_softmax_along(scores.astype(cd, copy=False), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = _nll(logp, labels, weights, ignore_index, reduction, "SoftmaxCrossEntropyLoss")
    loss = np.asarray(loss).astype(scores.dtype, copy=False)
    if ctx is not None and ctx.num_outputs > 1:
        return loss, logp.astype(scores.dtype, copy=False)
    return loss


def _loss_dims(f):
    """The loss's dims: the target's without reduction, a scalar with one."""
    return f.dims(1) if f.attr("reduction", "mean") == "none" else []


@rule("NegativeLogLikelihoodLoss")
def _nll_loss_rule(f):
    return [(f.type(0), _loss_dims(f))]


@rule("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy_rule(f):
    """The loss and the log-probabilities (scores' dims) of the scores' type."""
    return [(f.type(0), _loss_dims(f)), f.ins[0]]
