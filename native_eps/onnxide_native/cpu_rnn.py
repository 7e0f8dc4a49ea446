"""NativeCPUExecutionProvider's LSTM: the plain form exporters write (default activations; no clip, peepholes, coupled
gate or sequence_lens) on float32, its recurrence in nx_lstm (nx_rnn.c) over the numpy kernel's own input projection
and output assembly (ops/rnn.lstm_with); FALLBACK for every other form."""
import numpy as np

from onnxide.ops import rnn

from .cpu_ops import threads


def lstm(lib, *inputs, **attrs):
    """The LSTM node's kernel (rnn.lstm_with) with nx_lstm as its recurrence."""
    def recurrence(xw, rt, h0, c0, hs, h_last, c_last):
        nd, t, batch = xw.shape[:3]
        address = lambda a: None if a is None else a.ctypes.data  # noqa: E731
        if lib.nx_lstm(t, batch, hs.shape[-1], nd, *map(address, (xw, rt, h0, c0, hs, h_last, c_last)), threads()):
            raise MemoryError("LSTM: no scratch memory")
    return rnn.lstm_with(recurrence, np.matmul, *inputs, **attrs)
