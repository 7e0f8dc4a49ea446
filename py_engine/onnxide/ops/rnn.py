"""Recurrent layers: RNN, LSTM and GRU (all directions, activations, clip, layouts, sequence_lens), batch-vectorised."""
import numpy as np

from ..errors import InvalidArgument
from .activation import sigmoid_array
from .inference import rule
from .math import via_float32
from .registry import op
from . import weight_cache
from ..runtime.providers import FALLBACK

# name (lower case) -> (function(x, alpha, beta), default alpha, default beta, uses alpha, uses beta)
_ACTS = {
    "relu": (lambda x, a, b: np.maximum(x, 0), None, None),
    "tanh": (lambda x, a, b: np.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: sigmoid_array(x), None, None),
    "affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: np.where(x >= a, x, 0), 1.0, None),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), 0.2, 0.5),
    "elu": (lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0))), 1.0, None),
    "softsign": (lambda x, a, b: x / (1 + np.abs(x)), None, None),
    "softplus": (lambda x, a, b: np.logaddexp(0, x), None, None),
}


_ACTIVATION_SETS = {}  # (op, names, alphas, betas, num_dirs, dtype) -> _activations' result
GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


def _activations(op_name, names, alphas, betas, defaults, num_dirs, cdt):
    """List (per direction) of lists of callables (built once per attribute set). alphas/betas are consumed in
    order by the functions using them."""
    key = (op_name, None if names is None else tuple(names), None if alphas is None else tuple(alphas),
           None if betas is None else tuple(betas), num_dirs, cdt)
    fns = _ACTIVATION_SETS.get(key)
    if fns is None:
        if len(_ACTIVATION_SETS) > 64:
            _ACTIVATION_SETS.clear()
        fns = _ACTIVATION_SETS[key] = _build_activations(op_name, names, alphas, betas, defaults, num_dirs, cdt)
    return fns


def activation_specs(op_name, names, alphas, betas, defaults, num_dirs):
    """Per direction, (lower-case name, alpha, beta) of each activation function: `defaults` when none are named (one
    set named for two directions serves both), alphas / betas consumed in order by the functions that use them."""
    n = len(defaults)
    if names is None or len(names) == 0:
        names = list(defaults) * num_dirs
    elif len(names) == n and num_dirs == 2:
        names = list(names) * 2
    if len(names) != n * num_dirs:
        raise InvalidArgument(f"{op_name}: expected {n * num_dirs} activations, got {len(names)}")
    alphas = list(alphas or [])
    betas = list(betas or [])
    ai = bi = 0
    specs = []
    for name in names:
        key = name.lower()
        if key not in _ACTS:
            raise InvalidArgument(f"{op_name}: unsupported activation function '{name}'")
        _, da, db = _ACTS[key]
        a = b = None
        if da is not None:
            if ai < len(alphas):
                a, ai = alphas[ai], ai + 1
            else:
                a = da
        if db is not None:
            if bi < len(betas):
                b, bi = betas[bi], bi + 1
            else:
                b = db
        specs.append((key, a, b))
    return [specs[d * n:(d + 1) * n] for d in range(num_dirs)]


def _build_activations(op_name, names, alphas, betas, defaults, num_dirs, cdt):
    def fn(key, a, b):
        f = _ACTS[key][0]
        a = None if a is None else cdt.type(a)
        b = None if b is None else cdt.type(b)
        return lambda x: f(x, a, b)
    return [[fn(*spec) for spec in specs]
            for specs in activation_specs(op_name, names, alphas, betas, defaults, num_dirs)]


def _prepare(op_name, X, W, R, B, sequence_lens, initial, layout, hidden_size, direction, gates):
    """Validate shapes; return compute dtype, X as [T, B, I], lens array, and the per-direction initial states."""
    if direction not in ("forward", "reverse", "bidirectional"):
        raise InvalidArgument(f"{op_name}: invalid direction '{direction}'")
    num_dirs = 2 if direction == "bidirectional" else 1
    X = np.asarray(X)
    if X.ndim != 3:
        raise InvalidArgument(f"{op_name}: X must be 3-D, got shape {X.shape}")
    if layout:
        X = X.transpose(1, 0, 2)
    T, Bn, _ = X.shape
    W, R = np.asarray(W), np.asarray(R)
    if W.ndim != 3 or W.shape[0] != num_dirs or W.shape[2] != X.shape[2]:
        raise InvalidArgument(f"{op_name}: W has shape {W.shape}, incompatible with X and direction '{direction}'")
    H = hidden_size if hidden_size is not None else W.shape[1] // gates
    if W.shape[1] != gates * H or R.shape != (num_dirs, gates * H, H):
        raise InvalidArgument(f"{op_name}: W {W.shape} / R {R.shape} do not match hidden_size {H}")
    if B is not None and np.asarray(B).shape != (num_dirs, 2 * gates * H):
        raise InvalidArgument(f"{op_name}: B has shape {np.asarray(B).shape}, expected {(num_dirs, 2 * gates * H)}")
    cdt = np.dtype(np.float64) if X.dtype == np.float64 else np.dtype(np.float32)
    if sequence_lens is None:
        lens = np.full(Bn, T, dtype=np.int64)
    else:
        lens = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
        if lens.shape != (Bn,) or (lens < 0).any() or (lens > T).any():
            raise InvalidArgument(f"{op_name}: sequence_lens {lens.tolist()} invalid for batch {Bn}, length {T}")
    states = []
    for init in initial:
        if init is None:
            states.append(np.zeros((num_dirs, Bn, H), dtype=cdt))
            continue
        init = np.asarray(init)
        if layout:
            init = init.transpose(1, 0, 2)
        if init.shape != (num_dirs, Bn, H):
            raise InvalidArgument(f"{op_name}: initial state has shape {init.shape}, expected {(num_dirs, Bn, H)}")
        states.append(init.astype(cdt, copy=False))
    return cdt, X.astype(cdt, copy=False), lens, states, num_dirs, H


def _time_index(T, lens, reverse):
    """[T, B] source time index of each step and the validity mask (step < len) for one direction."""
    t = np.arange(T)[:, None]
    valid = t < lens[None, :]
    if reverse:
        src = np.where(valid, lens[None, :] - 1 - t, t)
    else:
        src = np.broadcast_to(t, valid.shape)
    return src, valid


def _run(op_name, X, W, R, B, sequence_lens, initials, P, layout, hidden_size, direction, gates, default_acts,
         activations, activation_alpha, activation_beta, step_factory, num_outputs, out_dtype, bias_in_input=True):
    """The recurrence over time, per direction; `bias_in_input`: the recurrent bias Rb is added to the input
    projection up front (RNN / LSTM; not GRU with linear_before_reset, whose reset gate multiplies it)."""
    with np.errstate(over="ignore"):  # the logistic function's e^-x may overflow to inf (the limit, 0, is right)
        return _recur(op_name, X, W, R, B, sequence_lens, initials, P, layout, hidden_size, direction, gates,
                      default_acts, activations, activation_alpha, activation_beta, step_factory, num_outputs,
                      out_dtype, bias_in_input)


def _recur(op_name, X, W, R, B, sequence_lens, initials, P, layout, hidden_size, direction, gates, default_acts,
           activations, activation_alpha, activation_beta, step_factory, num_outputs, out_dtype, bias_in_input):
    cdt, X, lens, states, num_dirs, H = _prepare(op_name, X, W, R, B, sequence_lens, initials, layout,
                                                  hidden_size, direction, gates)
    acts = _activations(op_name, activations, activation_alpha, activation_beta, default_acts, num_dirs, cdt)
    T, Bn, _ = X.shape
    W, R = np.asarray(W).astype(cdt, copy=False), np.asarray(R).astype(cdt, copy=False)
    Bv = np.zeros((num_dirs, 2 * gates * H), cdt) if B is None else np.asarray(B).astype(cdt, copy=False)
    Y = np.zeros((T, num_dirs, Bn, H), dtype=cdt)
    finals = [np.empty((num_dirs, Bn, H), dtype=cdt) for _ in states]
    cols = np.arange(Bn)[None, :]
    for d in range(num_dirs):
        reverse = direction == "reverse" or d == 1
        full = sequence_lens is None  # every sequence full length: plain (reversed) time order, no masks
        if full:
            xs = X[::-1] if reverse else X  # [T, B, I] in processing order
        else:
            src, valid = _time_index(T, lens, reverse)
            xs = X[src, cols]
        # input projection for all steps at once, with both biases (the recurrent one then costs nothing per step)
        xw = xs @ W[d].T + (Bv[d, :gates * H] + Bv[d, gates * H:] if bias_in_input else Bv[d, :gates * H])
        step = step_factory(R[d], None if bias_in_input else Bv[d, gates * H:], None if P is None else P[d],
                            acts[d], H)
        st = [s[d] for s in states]
        ys = (Y[::-1, d] if reverse else Y[:, d]) if full else np.zeros((T, Bn, H), dtype=cdt)
        for t in range(T):
            new = step(xw[t], *st)
            if full:
                st = list(new)
                ys[t] = new[0]
            else:
                m = valid[t][:, None]
                st = [np.where(m, n, o) for n, o in zip(new, st)]
                ys[t] = np.where(m, new[0], 0)
        if not full:
            Y[src, d, cols] = ys
        empty = (lens == 0)[:, None]  # like onnxruntime: a zero-length sequence gives zero final states
        for f, s in zip(finals, st):
            f[d] = np.where(empty, 0, s) if not full else s
    return _node_outputs(Y, finals, layout, num_outputs, out_dtype)


def _clip(x, clip):
    return x if clip is None else np.clip(x, -clip, clip)


def _rnn_step(clip):
    def factory(R, Rb, P, acts, H):
        f = acts[0]

        def step(xw, h):
            return (f(_clip(xw + h @ R.T if Rb is None else xw + h @ R.T + Rb, clip)),)
        return step
    return factory


def _lstm_step(clip, input_forget):
    def factory(R, Rb, P, acts, H):
        f, g, hact = acts
        if P is None:
            pi = po = pf = 0
        else:
            if P.shape != (3 * H,):
                raise InvalidArgument(f"LSTM: P has shape {P.shape}, expected (num_directions, {3 * H})")
            pi, po, pf = P[:H], P[H:2 * H], P[2 * H:]

        def step(xw, h, c):
            z = xw + h @ R.T if Rb is None else xw + h @ R.T + Rb
            zi, zo, zf, zc = z[:, :H], z[:, H:2 * H], z[:, 2 * H:3 * H], z[:, 3 * H:]
            i = f(_clip(zi + pi * c, clip))
            fg = 1 - i if input_forget else f(_clip(zf + pf * c, clip))
            c_new = fg * c + i * g(_clip(zc, clip))
            o = f(_clip(zo + po * c_new, clip))
            return o * hact(c_new), c_new

        def step_no_peepholes(xw, h, c):  # the i, o, f gates in one activation call
            z = xw + h @ R.T if Rb is None else xw + h @ R.T + Rb
            gates = f(_clip(z[:, :3 * H], clip))
            i, o = gates[:, :H], gates[:, H:2 * H]
            fg = 1 - i if input_forget else gates[:, 2 * H:]
            c_new = fg * c + i * g(_clip(z[:, 3 * H:], clip))
            return o * hact(c_new), c_new
        return step if P is not None else step_no_peepholes
    return factory


def _gru_step(clip, linear_before_reset):
    def factory(R, Rb, P, acts, H):
        f, g = acts
        Rzr, Rh = R[:2 * H], R[2 * H:]
        Rbzr, Rbh = Rb[:2 * H], Rb[2 * H:]

        def step(xw, h):
            zr = f(_clip(xw[:, :2 * H] + h @ Rzr.T + Rbzr, clip))
            z, r = zr[:, :H], zr[:, H:]
            if linear_before_reset:
                hh = g(_clip(xw[:, 2 * H:] + r * (h @ Rh.T + Rbh), clip))
            else:
                hh = g(_clip(xw[:, 2 * H:] + (r * h) @ Rh.T + Rbh, clip))
            return ((1 - z) * hh + z * h,)
        return step
    return factory


def _check_float(op_name, X):
    dt = np.asarray(X).dtype
    if dt.kind != "f" and "bfloat16" not in dt.name:
        raise InvalidArgument(f"{op_name}: X must be a float tensor, got {dt}")
    return dt


# ---------------------------------------------------------------- RNN


def _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip, direction,
         hidden_size, layout, ctx):
    dt = _check_float("RNN", X)
    return _run("RNN", X, W, R, B, sequence_lens, [initial_h], None, layout, hidden_size, direction, GATES["RNN"],
                DEFAULT_ACTIVATIONS["RNN"], activations, activation_alpha, activation_beta, _rnn_step(clip),
                ctx.num_outputs, dt)


@op("RNN", since=1, host_inputs=(4,))
@via_float32
def rnn_1(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None, output_sequence=0, ctx):
    return _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, 0, ctx)


@op("RNN", since=7, host_inputs=(4,))
@via_float32
def rnn_7(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None, ctx):
    return _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, 0, ctx)


@op("RNN", since=14, host_inputs=(4,))
@via_float32
def rnn_14(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
           activations=None, clip=None, direction="forward", hidden_size=None, layout=0, ctx):
    return _rnn(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, layout, ctx)


# ---------------------------------------------------------------- LSTM


def _default_lstm(activations, clip, input_forget, P, sequence_lens):
    """Whether an LSTM node is the plain one every exporter writes: default activations, no clip, no peepholes,
    no coupled input-forget gate, every sequence full length (no sequence_lens)."""
    names = [a.lower() for a in activations or ()]
    return (clip is None and not input_forget and P is None and sequence_lens is None
            and names in ([], ["sigmoid", "tanh", "tanh"], ["sigmoid", "tanh", "tanh"] * 2))


def plain_lstm(activations, clip, input_forget, node_inputs):
    """Whether a node's attributes and inputs are the plain form (_default_lstm) at plan time: P and sequence_lens
    not given (the EPs' LSTM kernels claim only this form)."""
    given = list(node_inputs) + [""] * (8 - len(node_inputs))
    return _default_lstm(activations, clip, input_forget, None, None) and not given[4] and not given[7]


def transposed_r(R):
    """R (nd, 4H, H) as the EPs' LSTM recurrences read it, (nd, H, 4H): once per weight."""
    return weight_cache.derived(R, "lstm R transposed", lambda r: np.ascontiguousarray(r.transpose(0, 2, 1)))


def lstm_projection(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction, matmul=np.matmul):
    """The plain LSTM's inputs checked (_prepare) and its input projection for every step, both biases added:
    (dtype, xw [directions, T, batch, 4H] in each direction's processing order, h0, c0, reverse flags, H).
    matmul(a, b, out=...) computes each direction's projection (an EP may pass its own GEMM)."""
    cdt, X, _, (h, c), nd, H = _prepare("LSTM", X, W, R, B, None, [initial_h, initial_c], layout, hidden_size,
                                        direction, 4)
    T, Bn, I = X.shape
    W = np.asarray(W).astype(cdt, copy=False)
    reverse = [direction == "reverse" or d == 1 for d in range(nd)]
    xw = np.empty((nd, T * Bn, 4 * H), cdt)
    for d, r in enumerate(reverse):
        matmul((X[::-1] if r else X).reshape(T * Bn, I), W[d].T, out=xw[d])
    xw = xw.reshape(nd, T, Bn, 4 * H)
    if B is not None:
        Bv = np.asarray(B).astype(cdt, copy=False)
        xw += (Bv[:, :4 * H] + Bv[:, 4 * H:])[:, None, None, :]
    return cdt, xw, h, c, reverse, H


def lstm_with(recurrence, matmul, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *,
              activation_alpha=None, activation_beta=None, activations=None, clip=None, direction="forward",
              hidden_size=None, input_forget=0, layout=0, ctx=None):
    """The plain float32 LSTM (_default_lstm) on an EP's kernels — the input projection by matmul(a, b, out=...), the
    recurrence by recurrence(xw, rt, h0, c0, hs, h_last, c_last) (rt = transposed_r(R); h0 / c0 contiguous or None;
    it fills hs [T, directions, batch, H] in processing order and the last h and c) — with this module's checks and
    output assembly; FALLBACK for the other forms and dtypes (the numpy kernel)."""
    f32 = lambda v: type(v) is np.ndarray and v.dtype == np.float32  # noqa: E731
    if not _default_lstm(activations, clip, input_forget, P, sequence_lens) or not all(map(f32, (X, W, R))) or \
            not all(v is None or f32(v) for v in (B, initial_h, initial_c)):
        return FALLBACK
    _, xw, h0, c0, reverse, H = lstm_projection(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction,
                                                matmul)
    nd, T, Bn = xw.shape[:3]
    hs = np.empty((T, nd, Bn, H), np.float32)
    h_last, c_last = np.empty((nd, Bn, H), np.float32), np.empty((nd, Bn, H), np.float32)
    recurrence(xw, transposed_r(R), None if initial_h is None else np.ascontiguousarray(h0),
               None if initial_c is None else np.ascontiguousarray(c0), hs, h_last, c_last)
    return lstm_outputs(hs, h_last, c_last, reverse, layout, ctx.num_outputs if ctx is not None else 1, np.float32)


def lstm_outputs(hs, h_last, c_last, reverse, layout, num_outputs, out_dtype):
    """Y, Y_h, Y_c (as many as the node has) from each step's h in processing order ([T, directions, batch, H])
    and the last h and c."""
    Y = np.empty_like(hs)
    for d, r in enumerate(reverse):
        Y[:, d] = hs[::-1, d] if r else hs[:, d]
    return _node_outputs(Y, [h_last, c_last], layout, num_outputs, out_dtype)


def _node_outputs(Y, finals, layout, num_outputs, out_dtype):
    """The node's outputs (as many as it has) from Y [T, directions, batch, H] and the final states, in `layout`."""
    if layout:
        Y = Y.transpose(2, 0, 1, 3)
        finals = [f.transpose(1, 0, 2) for f in finals]
    outs = [Y.astype(out_dtype, copy=False)] + [f.astype(out_dtype, copy=False) for f in finals]
    n = max(1, num_outputs)
    return tuple(outs[:n]) if n > 1 else outs[0]


def _lstm_all_directions(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction, num_outputs, out_dtype):
    """The plain LSTM (see _default_lstm) with both directions' gates worked together, in place in preallocated
    buffers: half the element-wise numpy calls per step of a bidirectional layer, no temporaries (the same
    arithmetic, in the same order, as _lstm_step's)."""
    cdt, xw, h, c, reverse, H = lstm_projection(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction)
    nd, T, Bn = xw.shape[:3]
    rt = np.asarray(R).astype(cdt, copy=False).transpose(0, 2, 1)
    hs = np.empty((T, nd, Bn, H), cdt)  # each step's h, in processing order
    c = c.copy()
    z = np.empty((nd, Bn, 4 * H), cdt)
    sig, zi, zo, zf, zc = z[..., :3 * H], z[..., :H], z[..., H:2 * H], z[..., 2 * H:3 * H], z[..., 3 * H:]
    one = np.ones((), cdt)
    with np.errstate(over="ignore"):  # e^-x overflowing to inf gives the logistic function's limit, 0
        for t in range(T):
            for d in range(nd):  # (2-D products, the general path's BLAS calls; a stacked one ran slower with
                np.matmul(h[d], rt[d], out=z[d])  # OpenBLAS on two threads on this shared machine)
            z += xw[:, t]
            np.negative(sig, out=sig)  # the i, o, f gates: 1 / (1 + e^-x), in place (sigmoid_array's steps)
            np.exp(sig, out=sig)
            sig += one
            np.reciprocal(sig, out=sig)
            np.tanh(zc, out=zc)
            zc *= zi
            c *= zf
            c += zc
            h = hs[t]
            np.tanh(c, out=h)
            h *= zo
    return lstm_outputs(hs, h if T else h.copy(), c, reverse, layout, num_outputs, out_dtype)


def _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations, clip,
          direction, hidden_size, input_forget, layout, ctx):
    dt = _check_float("LSTM", X)
    if _default_lstm(activations, clip, input_forget, P, sequence_lens):
        return _lstm_all_directions(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction,
                                    ctx.num_outputs, dt)
    if P is not None:
        P = np.asarray(P)
        nd = 2 if direction == "bidirectional" else 1
        if P.ndim != 2 or P.shape[0] != nd:
            raise InvalidArgument(f"LSTM: P has invalid shape {P.shape}")
        P = P.astype(np.float64 if np.asarray(X).dtype == np.float64 else np.float32)
    return _run("LSTM", X, W, R, B, sequence_lens, [initial_h, initial_c], P, layout, hidden_size, direction,
                GATES["LSTM"], DEFAULT_ACTIVATIONS["LSTM"], activations, activation_alpha, activation_beta,
                _lstm_step(clip, input_forget), ctx.num_outputs, dt)


@op("LSTM", since=1, host_inputs=(4,))
@via_float32
def lstm_1(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha=None,
           activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None,
           input_forget=0, output_sequence=0, ctx):
    return _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations,
                 clip, direction, hidden_size, input_forget, 0, ctx)


@op("LSTM", since=7, host_inputs=(4,))
@via_float32
def lstm_7(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha=None,
           activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None,
           input_forget=0, ctx):
    return _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations,
                 clip, direction, hidden_size, input_forget, 0, ctx)


@op("LSTM", since=14, host_inputs=(4,))
@via_float32
def lstm_14(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha=None,
            activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None,
            input_forget=0, layout=0, ctx):
    return _lstm(X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations,
                 clip, direction, hidden_size, input_forget, layout, ctx)


# ---------------------------------------------------------------- GRU


def _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip, direction,
         hidden_size, linear_before_reset, layout, ctx):
    dt = _check_float("GRU", X)
    return _run("GRU", X, W, R, B, sequence_lens, [initial_h], None, layout, hidden_size, direction, GATES["GRU"],
                DEFAULT_ACTIVATIONS["GRU"], activations, activation_alpha, activation_beta,
                _gru_step(clip, linear_before_reset), ctx.num_outputs, dt, bias_in_input=False)


@op("GRU", since=1, host_inputs=(4,))
@via_float32
def gru_1(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None, output_sequence=0, ctx):
    return _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, 0, 0, ctx)


@op("GRU", since=3, host_inputs=(4,))
@via_float32
def gru_3(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None, linear_before_reset=0,
          output_sequence=0, ctx):
    return _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, linear_before_reset, 0, ctx)


@op("GRU", since=7, host_inputs=(4,))
@via_float32
def gru_7(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
          activations=None, clip=None, direction="forward", hidden_size=None, linear_before_reset=0, ctx):
    return _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, linear_before_reset, 0, ctx)


@op("GRU", since=14, host_inputs=(4,))
@via_float32
def gru_14(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha=None, activation_beta=None,
           activations=None, clip=None, direction="forward", hidden_size=None, linear_before_reset=0, layout=0,
           ctx):
    return _gru(X, W, R, B, sequence_lens, initial_h, activation_alpha, activation_beta, activations, clip,
                direction, hidden_size, linear_before_reset, layout, ctx)


def recurrent_outputs(f, hidden):
    """Every output of X's type: Y [T, dirs, B, H] (layout 1: [B, T, dirs, H]), the final states [dirs, B, H]
    (layout 1: [B, dirs, H]), H = `hidden`."""
    s0 = f.dims(0)
    if s0 is None or len(s0) != 3:
        return [(f.type(0), None)] * f.n_outputs
    dirs = 2 if f.attr("direction") == "bidirectional" else 1
    batch_first = f.attr("layout", 0)
    t, b = (s0[1], s0[0]) if batch_first else (s0[0], s0[1])
    y = [b, t, dirs, hidden] if batch_first else [t, dirs, b, hidden]
    state = [b, dirs, hidden] if batch_first else [dirs, b, hidden]
    return [(f.type(0), y)] + [(f.type(0), state)] * (f.n_outputs - 1)


@rule("RNN", "LSTM", "GRU")
def _recurrent_rule(f):
    """H is hidden_size, or R's last dim ([dirs, gates * H, H])."""
    r = f.dims(2)
    return recurrent_outputs(f, f.attr("hidden_size") or (r[2] if r is not None and len(r) == 3 else None))
