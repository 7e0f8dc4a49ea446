"""HQQ (half-quadratic quantization, Badri & Shaji 2023) of MatMul weights in blocks along K: round to nearest from
each block's min / max, then a few half-quadratic steps that move the (float) zero point to lower an lp (p < 1) error
of the dequantized block. numpy only, so it runs in Pyodide."""
import numpy as np

LP_NORM, BETA, KAPPA, ITERS = 0.7, 10.0, 1.01, 20  # the paper's (and onnxruntime's) solver settings


def _shrink_lp(x, beta, p):
    """The proximal step of the lp norm (p < 1): sign(x) max(|x| - |x|^(p-1) / beta, 0)."""
    with np.errstate(divide="ignore"):
        return np.sign(x) * np.maximum(np.abs(x) - np.abs(x) ** (p - 1) / beta, 0)


def hqq_quantize_blocks(w, block_size, bits=4):
    """Codes [N, k_blocks, block_size] uint8, scales [N, k_blocks] and float zero points [N, k_blocks] of a [K, N]
    weight (K zero-padded to whole blocks), dequantized as (code - zero point) x scale."""
    k, n = w.shape
    k_blocks = -(-k // block_size)
    wt = np.zeros((n, k_blocks * block_size), np.float32)
    wt[:, :k] = w.T.astype(np.float32)
    wf = wt.reshape(n, k_blocks, block_size)
    qmax = float(2 ** bits - 1)
    lo, hi = wf.min(axis=2, keepdims=True), wf.max(axis=2, keepdims=True)
    span = hi - lo
    with np.errstate(divide="ignore"):  # 1 / scale, at most 2e4; 1 for a constant block (its zero point holds it)
        inv = np.where(span > 0, np.minimum(np.float32(qmax) / span, np.float32(2e4)), 1).astype(np.float32)
    zero = np.rint(-lo * inv)
    beta, best = BETA, np.inf
    for _ in range(ITERS):
        wq = np.clip(np.rint(wf * inv + zero), 0, qmax)
        wr = (wq - zero) / inv
        we = _shrink_lp(wf - wr, beta, LP_NORM)
        zero = np.mean(wq - (wf - we) * inv, axis=2, keepdims=True).astype(np.float32)
        beta *= KAPPA
        err = float(np.mean(np.abs(wf - wr)))
        if err >= best:
            break
        best = err
    codes = np.clip(np.rint(wf * inv + zero), 0, qmax).astype(np.uint8)
    return codes, (1 / inv)[..., 0].astype(np.float32), zero[..., 0].astype(np.float32)
