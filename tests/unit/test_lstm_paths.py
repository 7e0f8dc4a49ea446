"""The numpy LSTM's two paths agree: the plain form (default activations, no clip / peepholes / sequence_lens),
which steps all directions together in place, gives the general path's outputs and onnxruntime's."""
import numpy as np
import pytest
from onnx import helper, numpy_helper

import onnxide
from onnxide.ops import rnn

rng = np.random.default_rng(11)


def _model(direction, hidden, inputs, layout=0, bias=True, initial=True, outputs=3, gen=None, **attrs):
    """An LSTM model: random W, R (and B) from `gen` (this module's generator by default); X and the initial states
    are graph inputs."""
    gen = gen if gen is not None else rng
    nd = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array((gen.standard_normal((nd, 4 * hidden, inputs)) * 0.4).astype(np.float32), "W"),
             numpy_helper.from_array((gen.standard_normal((nd, 4 * hidden, hidden)) * 0.4).astype(np.float32), "R")]
    names = ["X", "W", "R", "B" if bias else ""]
    if bias:
        inits.append(numpy_helper.from_array(gen.standard_normal((nd, 8 * hidden)).astype(np.float32), "B"))
    graph_inputs = [helper.make_tensor_value_info("X", 1, None)]
    if initial:
        names += ["", "h0", "c0"]
        graph_inputs += [helper.make_tensor_value_info(n, 1, None) for n in ("h0", "c0")]
    outs = ["Y", "Y_h", "Y_c"][:outputs]
    node = helper.make_node("LSTM", names, outs, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    graph = helper.make_graph([node], "lstm", graph_inputs, [helper.make_tensor_value_info(o, 1, None) for o in outs],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString()


CASES = [("bidirectional", 80, 1, 16, 8, 0, True, False, 1), ("forward", 5, 3, 7, 4, 0, True, True, 3),
         ("reverse", 5, 3, 7, 4, 1, False, True, 3), ("bidirectional", 6, 2, 5, 3, 1, True, True, 3),
         ("forward", 1, 1, 32, 32, 0, True, True, 3), ("bidirectional", 0, 2, 4, 3, 0, True, True, 3),
         ("forward", 4, 0, 4, 3, 0, True, False, 2)]


@pytest.mark.parametrize("direction, steps, batch, inputs, hidden, layout, bias, initial, outputs", CASES)
def test_plain_lstm_matches_the_general_path(monkeypatch, direction, steps, batch, inputs, hidden, layout, bias,
                                             initial, outputs):
    model = _model(direction, hidden, inputs, layout, bias, initial, outputs)
    nd = 2 if direction == "bidirectional" else 1
    feeds = {"X": (rng.standard_normal((batch, steps, inputs) if layout else (steps, batch, inputs)) * 2)
             .astype(np.float32)}
    if initial:
        shape = (batch, nd, hidden) if layout else (nd, batch, hidden)
        feeds.update(h0=rng.standard_normal(shape).astype(np.float32), c0=rng.standard_normal(shape).astype(np.float32))
    fast = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    monkeypatch.setattr(rnn, "_default_lstm", lambda *args: False)
    general = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(fast) == len(general) == outputs
    for f, g in zip(fast, general):
        assert f.shape == g.shape and f.dtype == g.dtype == np.float32
        np.testing.assert_allclose(f, g, rtol=1e-5, atol=1e-5)
    if layout == 0 and steps and batch:  # (onnxruntime takes neither layout 1 nor, sanely, empty sizes)
        ort = pytest.importorskip("onnxruntime")
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
        for f, w in zip(fast, want):
            np.testing.assert_allclose(f, w, rtol=1e-5, atol=1e-5)


def test_only_the_plain_form_takes_the_fast_path():
    assert rnn._default_lstm(None, None, 0, None, None)
    assert rnn._default_lstm(["Sigmoid", "Tanh", "Tanh"] * 2, None, 0, None, None)
    assert not rnn._default_lstm(["Sigmoid", "Tanh", "Relu"], None, 0, None, None)
    assert not rnn._default_lstm(None, 3.0, 0, None, None)
    assert not rnn._default_lstm(None, None, 1, None, None)
    assert not rnn._default_lstm(None, None, 0, np.zeros((1, 6), np.float32), None)
    assert not rnn._default_lstm(None, None, 0, None, np.array([2, 3]))
