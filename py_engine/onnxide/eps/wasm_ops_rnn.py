"""The WASM EP's LSTM: the plain form exporters write (onnxide.ops.rnn.plain_lstm: default activations; no clip,
peepholes, coupled gate or sequence_lens) on float32, its input projection on the module's GEMM and its recurrence
in ox_lstm (wasm_kernels/ox_rnn.c), the output assembly the numpy kernel's own; FALLBACK for every other form."""
import numpy as np

from ..ops import rnn
from .wasm_ops import F32, FALLBACK, _contig, _is_f32, gemm_call, guarded
from .wasm_runtime import In, Out, Scratch


def _projection(rt):
    """rnn.lstm_projection's matmul(a, W[d].T, out) on ox_gemm (W[d] read transposed in place)."""
    def matmul(a, wt, out):
        m, k = a.shape
        n = wt.shape[1]
        gemm_call(rt, 1, m, n, k, _contig(a), k, 1, 0, _contig(wt.T), 1, k, 0, out, n, 0)
    return matmul


def lstm_fast(rt, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *,
              activation_alpha=None, activation_beta=None, activations=None, clip=None, direction="forward",
              hidden_size=None, input_forget=0, layout=0, ctx=None):
    if not rnn._default_lstm(activations, clip, input_forget, P, sequence_lens) or not _is_f32(X, W, R) or \
            any(v is not None and not _is_f32(v) for v in (B, initial_h, initial_c)) or X.ndim != 3 or W.ndim != 3:
        return FALLBACK
    _, xw, h0, c0, reverse, H = rnn.lstm_projection(X, W, R, B, initial_h, initial_c, layout, hidden_size, direction,
                                                    matmul=_projection(rt))
    nd, T, Bn = xw.shape[:3]
    hs = np.empty((T, nd, Bn, H), F32)
    h_last, c_last = np.empty((nd, Bn, H), F32), np.empty((nd, Bn, H), F32)
    rt.call("ox_lstm", [T, Bn, H, nd, In(_contig(xw)), In(rnn.transposed_r(R)),
                        0 if initial_h is None else In(_contig(h0)), 0 if initial_c is None else In(_contig(c0)),
                        Out(hs), Out(h_last), Out(c_last), Scratch(4 * H + 4)])
    n = ctx.num_outputs if ctx is not None else 1
    return rnn.lstm_outputs(hs, h_last, c_last, reverse, layout, n, F32)


def claim_lstm(rt, node, opdef, attrs):
    """The plain LSTM at opset 7+ (LSTM-1's output_sequence attribute stays with numpy)."""
    if opdef.since < 7 or not rnn.plain_lstm(attrs.get("activations"), attrs.get("clip"),
                                             attrs.get("input_forget", 0), node.inputs):
        return None
    return guarded(lambda *xs, **kw: lstm_fast(rt, *xs, **kw), opdef.kernel)
