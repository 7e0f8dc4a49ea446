"""NativeCPUExecutionProvider's LSTM (nx_rnn.c): the plain form runs natively and gives the CPU EP's (numpy oracle's)
outputs and onnxruntime's — directions, layouts, initial states or none, bias or none, empty sizes, one and two
threads; other forms (clip, peepholes, sequence_lens, other activations) stay with numpy."""
import numpy as np
import onnx
import pytest
from onnx import helper

import onnxide
from test_lstm_paths import _model as lstm_model

NATIVE = "NativeCPUExecutionProvider"
pytestmark = pytest.mark.skipif(NATIVE not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
rng = np.random.default_rng(21)


def _model(direction, hidden, inputs, layout=0, bias=True, initial=True, outputs=3, **attrs):
    return lstm_model(direction, hidden, inputs, layout, bias, initial, outputs, gen=rng, **attrs)


def _feeds(steps, batch, inputs, hidden, nd, layout, initial):
    feeds = {"X": (rng.standard_normal((batch, steps, inputs) if layout else (steps, batch, inputs)) * 2)
             .astype(np.float32)}
    if initial:
        shape = (batch, nd, hidden) if layout else (nd, batch, hidden)
        feeds.update(h0=rng.standard_normal(shape).astype(np.float32), c0=rng.standard_normal(shape).astype(np.float32))
    return feeds


def _sessions(model, threads):
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    native = onnxide.InferenceSession(model, so, providers=[NATIVE, "CPUExecutionProvider"])
    return native, onnxide.InferenceSession(model, so, providers=["CPUExecutionProvider"])


CASES = [("bidirectional", 80, 1, 64, 32, 0, True, False, 1), ("forward", 5, 3, 7, 24, 0, True, True, 3),
         ("reverse", 5, 3, 7, 24, 1, False, True, 3), ("bidirectional", 6, 2, 5, 16, 1, True, True, 3),
         ("forward", 1, 1, 128, 128, 0, True, True, 3), ("bidirectional", 0, 2, 40, 32, 0, True, True, 3)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direction, steps, batch, inputs, hidden, layout, bias, initial, outputs", CASES)
def test_plain_lstm_runs_natively_like_the_cpu_ep(threads, direction, steps, batch, inputs, hidden, layout, bias,
                                                  initial, outputs):
    model = _model(direction, hidden, inputs, layout, bias, initial, outputs)
    feeds = _feeds(steps, batch, inputs, hidden, 2 if direction == "bidirectional" else 1, layout, initial)
    native, cpu = _sessions(model, threads)
    assert native._executor.main_plan.steps[0].ep.name == NATIVE, "LSTM not claimed"
    got, want = native.run(None, feeds), cpu.run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)
    if layout == 0 and steps and batch:  # (onnxruntime takes no layout 1)
        ort = pytest.importorskip("onnxruntime")
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"clip": 2.0}, {"input_forget": 1},
                                   {"activations": ["Sigmoid", "Tanh", "Relu"]}])
def test_other_forms_stay_with_numpy(attrs):
    native, cpu = _sessions(_model("forward", 24, 7, **attrs), 1)
    assert native._executor.main_plan.steps[0].ep.name == "CPUExecutionProvider"
    feeds = _feeds(4, 2, 7, 24, 1, 0, True)
    for g, w in zip(native.run(None, feeds), cpu.run(None, feeds)):
        np.testing.assert_array_equal(g, w)


def test_sequence_lens_stays_with_numpy():
    """sequence_lens given (a graph input): the node is not claimed; same outputs."""
    model = _model("bidirectional", 16, 5, initial=False)
    m = onnx.load_from_string(model)
    m.graph.node[0].input.extend(["seq"])
    m.graph.input.append(helper.make_tensor_value_info("seq", 6, [3]))
    model = m.SerializeToString()
    native, cpu = _sessions(model, 1)
    assert native._executor.main_plan.steps[0].ep.name == "CPUExecutionProvider"
    feeds = {"X": rng.standard_normal((6, 3, 5)).astype(np.float32), "seq": np.array([6, 2, 4], np.int32)}
    for g, w in zip(native.run(None, feeds), cpu.run(None, feeds)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
