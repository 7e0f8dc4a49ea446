"""WebGPU RNN / LSTM / GRU (one dispatch per time step, states on the device) against the CPU EP."""
import numpy as np
import pytest

from webgpu.nodes import Const, check

rng = np.random.default_rng(5)
T, B, I, H = 4, 3, 5, 6
X = rng.standard_normal((T, B, I)).astype(np.float32)
GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
ACTS = {"RNN": ["Relu"], "LSTM": ["HardSigmoid", "LeakyRelu", "Elu"], "GRU": ["Softsign", "Softplus"]}


def _weights(op, dirs):
    g = GATES[op]
    return [Const(rng.standard_normal((dirs, g * H, I)).astype(np.float32) * 0.5),
            Const(rng.standard_normal((dirs, g * H, H)).astype(np.float32) * 0.5),
            Const(rng.standard_normal((dirs, 2 * g * H)).astype(np.float32))]


def _outputs(op):
    return ("y", "y_h", "y_c") if op == "LSTM" else ("y", "y_h")


@pytest.mark.parametrize("op", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrence(op, direction):
    dirs = 2 if direction == "bidirectional" else 1
    w, r, b = _weights(op, dirs)
    h0 = rng.standard_normal((dirs, B, H)).astype(np.float32)
    lens = Const(np.array([4, 2, 0], np.int32))
    extra = [h0 * 0.5, Const(rng.standard_normal((dirs, 3 * H)).astype(np.float32))] if op == "LSTM" else []
    kw = {"opset": 14, "hidden_size": H, "direction": direction}
    check(op, [X, w, r], _outputs(op), **kw)
    check(op, [X, w, r, b, lens, h0] + extra, _outputs(op), clip=0.8, **kw)
    check(op, [X, w, r, b], _outputs(op), activations=ACTS[op] * dirs, activation_alpha=[0.3, 0.2, 0.9],
          activation_beta=[0.6], **kw)
    xt, ht = np.swapaxes(X, 0, 1).copy(), np.swapaxes(h0, 0, 1).copy()
    check(op, [xt, w, r, b, None, ht] + ([ht * 0.3] if op == "LSTM" else []), _outputs(op), layout=1, **kw)


def test_gru_linear_before_reset_and_lstm_input_forget():
    w, r, b = _weights("GRU", 1)
    check("GRU", [X, w, r, b], ("y", "y_h"), opset=14, hidden_size=H, linear_before_reset=1)
    w, r, b = _weights("LSTM", 2)
    check("LSTM", [X, w, r, b], ("", "y_h", "y_c"), opset=14, hidden_size=H, input_forget=1,
          direction="bidirectional")


def test_recurrence_f16():
    from onnxide.runtime.devices import get_device
    if not get_device("webgpu", 0).f16:
        pytest.skip("this WebGPU device has no shader-f16")
    w, r, b = (Const(c.value.astype(np.float16)) for c in _weights("LSTM", 1))
    check("LSTM", [X.astype(np.float16), w, r, b], ("y", "y_h", "y_c"), opset=14, hidden_size=H, rtol=3e-3,
          atol=3e-3)


def test_unsupported_activation_is_declined():
    w, r, b = _weights("RNN", 1)
    check("RNN", [X, w, r, b], ("y",), opset=14, hidden_size=H, activations=["Affine"], activation_alpha=[0.5],
          on_device=False)
