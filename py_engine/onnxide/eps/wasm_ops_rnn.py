"""The WASM EP's LSTM: the plain form exporters write (onnxide.ops.rnn.plain_lstm: default activations; no clip,
peepholes, coupled gate or sequence_lens) on float32, its input projection on the module's GEMM and its recurrence
in ox_lstm (wasm_kernels/ox_rnn.c), checks and output assembly the numpy kernel's own (rnn.lstm_with); FALLBACK for every
other form."""
from ..ops import rnn
from .wasm_ops import _contig, gemm_call, guarded
from .wasm_runtime import In, Out, Scratch


def _projection(rt):
    """rnn.lstm_projection's matmul(a, W[d].T, out) on ox_gemm (W[d] read transposed in place)."""
    def matmul(a, wt, out):
        m, k = a.shape
        n = wt.shape[1]
        gemm_call(rt, 1, m, n, k, _contig(a), k, 1, 0, _contig(wt.T), 1, k, 0, out, n, 0)
    return matmul


def lstm_fast(rt, *inputs, **attrs):
    """The LSTM node's kernel (rnn.lstm_with) with the module's GEMM and ox_lstm."""
    def recurrence(xw, r_t, h0, c0, hs, h_last, c_last):
        nd, t, batch = xw.shape[:3]
        rt.call("ox_lstm", [t, batch, hs.shape[-1], nd, In(xw), In(r_t), 0 if h0 is None else In(h0),
                            0 if c0 is None else In(c0), Out(hs), Out(h_last), Out(c_last),
                            Scratch(4 * hs.shape[-1] + 4)])
    return rnn.lstm_with(recurrence, _projection(rt), *inputs, **attrs)


def claim_lstm(rt, node, opdef, attrs):
    """The plain LSTM at opset 7+ (LSTM-1's output_sequence attribute stays with numpy)."""
    if opdef.since < 7 or not rnn.plain_lstm(attrs.get("activations"), attrs.get("clip"),
                                             attrs.get("input_forget", 0), node.inputs):
        return None
    return guarded(lambda *xs, **kw: lstm_fast(rt, *xs, **kw), opdef.kernel)
