"""NativeCPUExecutionProvider's LSTM: the plain form exporters write (default activations; no clip, peepholes, coupled
gate or sequence_lens) on float32, its recurrence in nx_lstm (nx_rnn.c) over the numpy kernel's own input projection
and output assembly (ops/rnn.py); FALLBACK for every other form."""
import numpy as np

from onnxide.ops import rnn
from onnxide.runtime.providers import FALLBACK

from .cpu_ops import _f32, threads

F32 = np.dtype(np.float32)


def lstm(lib, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha=None,
         activation_beta=None, activations=None, clip=None, direction="forward", hidden_size=None, input_forget=0,
         layout=0, ctx=None):
    if not rnn._default_lstm(activations, clip, input_forget, P, sequence_lens) or not _f32(X, W, R) or \
            any(v is not None and not _f32(v) for v in (B, initial_h, initial_c)):
        return FALLBACK
    _, xw, h0, c0, reverse, H = rnn.lstm_projection(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction)
    nd, T, Bn = xw.shape[:3]
    rt = rnn.transposed_r(R)
    h0 = None if initial_h is None else np.ascontiguousarray(h0)
    c0 = None if initial_c is None else np.ascontiguousarray(c0)
    hs = np.empty((T, nd, Bn, H), F32)
    h_last, c_last = np.empty((nd, Bn, H), F32), np.empty((nd, Bn, H), F32)
    if lib.nx_lstm(T, Bn, H, nd, xw.ctypes.data, rt.ctypes.data, None if h0 is None else h0.ctypes.data,
                   None if c0 is None else c0.ctypes.data, hs.ctypes.data, h_last.ctypes.data, c_last.ctypes.data,
                   threads()):
        raise MemoryError("LSTM: no scratch memory")
    n = ctx.num_outputs if ctx is not None else 1
    return rnn.lstm_outputs(hs, h_last, c_last, reverse, layout, n, F32)
