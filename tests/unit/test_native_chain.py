"""Native chains (native_eps/onnxide_native/chain.py): runs of nodes lowered to one nx_chain_run call give
onnxruntime's results for every lowering (GEMM forms, element-wise broadcasts, activations, softmax, norms, pooling,
each conv path, views), at one and two threads; the chain really forms; inputs of other shapes run the original steps;
values read after the chain and graph outputs come out right; symbolic dims get a chain once the shapes repeat."""
import asyncio
import concurrent.futures

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide
from chain_graphs import dq_matmul_readers

NATIVE = "NativeCPUExecutionProvider"
pytestmark = pytest.mark.skipif(NATIVE not in onnxide.get_available_providers(),
                                reason="native CPU kernels not built (native_eps/cpu_kernels/build.sh)")
rng = np.random.default_rng(16)
F = TensorProto.FLOAT


def _w(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inputs, output, inits=(), opset=17, out_shape=None):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, a.shape) for n, a in inputs.items()],
                          [helper.make_tensor_value_info(output, F, out_shape)],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    ops = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(g, opset_imports=ops, ir_version=9).SerializeToString()


def _chains(sess):
    plans = [sess._executor.main_plan] + [e.main_plan for e in (sess._specialized._executors.values()
                                                                 if sess._specialized else ()) if e is not None]
    return [s for p in plans for s in p.steps if s.node.op_type == "NativeChain"]


def _check(data, feeds, threads=1, optimize=False, chained=True, atol=1e-5):
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    if not optimize:
        so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxide.InferenceSession(data, so, providers=[NATIVE, "CPUExecutionProvider"])
    got = sess.run(None, feeds)
    assert bool(_chains(sess)) == chained
    want = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)
    return sess, got


def _then_scale(node_out, final="y"):
    """A Mul by 0.5 after the node under test (a second kernel, so the two form a chain)."""
    return helper.make_node("Mul", [node_out, "half"], [final]), ("half", np.array(0.5, np.float32))


GEMM_CASES = {
    "matmul const B": ([helper.make_node("MatMul", ["x", "w"], ["t"])], {"x": _w(5, 24)}, [("w", _w(24, 40))]),
    "matmul 3-D A": ([helper.make_node("MatMul", ["x", "w"], ["t"])], {"x": _w(2, 3, 24)}, [("w", _w(24, 33))]),
    "matmul row": ([helper.make_node("MatMul", ["x", "w"], ["t"])], {"x": _w(1, 64)}, [("w", _w(64, 70))]),
    "matmul dynamic B": ([helper.make_node("MatMul", ["x", "b"], ["t"])], {"x": _w(6, 20), "b": _w(20, 17)}, []),
    "matmul batched": ([helper.make_node("MatMul", ["x", "b"], ["t"])], {"x": _w(2, 3, 5, 20), "b": _w(2, 3, 20, 9)},
                       []),
    "gemm bias n": ([helper.make_node("Gemm", ["x", "w", "c"], ["t"], transB=1)], {"x": _w(7, 24)},
                    [("w", _w(30, 24)), ("c", _w(30))]),
    "gemm bias 1xn": ([helper.make_node("Gemm", ["x", "w", "c"], ["t"])], {"x": _w(2, 24)},
                      [("w", _w(24, 30)), ("c", _w(1, 30))]),
    "gemm row bias": ([helper.make_node("Gemm", ["x", "w", "c"], ["t"])], {"x": _w(9, 24)},
                      [("w", _w(24, 30)), ("c", _w(9, 1))]),
    "gemm full C": ([helper.make_node("Gemm", ["x", "w", "c"], ["t"])], {"x": _w(9, 24), "c": _w(9, 30)},
                    [("w", _w(24, 30))]),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm_forms(case, threads):
    nodes, feeds, inits = GEMM_CASES[case]
    mul, half = _then_scale("t")
    _check(_model(nodes + [mul], feeds, "y", inits + [half]), feeds, threads)


ELEMENTWISE = [("Add", (2, 8, 5, 5), (1, 8, 1, 1)), ("Sub", (1, 8, 1, 1), (2, 8, 5, 5)), ("Mul", (4, 30), (30,)),
               ("Div", (4, 30), (4, 30)), ("Add", (3, 4, 5), ()), ("Mul", (5, 3, 1), (5, 3, 7)),
               ("Max", (2, 8, 5, 5), ()), ("Min", (), (4, 30)), ("Max", (4, 30), (30,))]


@pytest.mark.parametrize("op,sa,sb", ELEMENTWISE)
def test_binary_broadcasts(op, sa, sb):
    a, b = np.asarray(_w(*sa)), np.asarray(_w(*sb) + np.float32(3.0 if op == "Div" else 0.0))
    out = np.broadcast_shapes(sa, sb)
    nodes = [helper.make_node(op, ["a", "b"], ["t"]), helper.make_node("Softmax", ["t"], ["y"])]
    _check(_model(nodes, {"a": a, "b": b}, "y", out_shape=list(out)), {"a": a, "b": b})


def test_a_broadcast_the_kernels_lack_stays_out():
    """(4, 1, 5) with (1, 3, 1): neither operand has the output's shape, so the Add runs in numpy, alone (the
    Softmax after it, a heavy op, is a chain of its own)."""
    a, b = _w(4, 1, 5), _w(1, 3, 1)
    nodes = [helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("Softmax", ["t"], ["y"])]
    sess, _ = _check(_model(nodes, {"a": a, "b": b}, "y"), {"a": a, "b": b})
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["Add", "NativeChain"]


@pytest.mark.parametrize("op,attrs", [("Relu", {}), ("LeakyRelu", {"alpha": 0.2}), ("Tanh", {}), ("Sigmoid", {}),
                                      ("HardSigmoid", {}), ("HardSwish", {}), ("Erf", {}), ("Sqrt", {})])
def test_activations(op, attrs):
    x = _w(3, 50, scale=2.0)
    nodes = [helper.make_node(op, ["x"], ["t"], **attrs), helper.make_node("Softmax", ["t"], ["y"])]
    _check(_model(nodes, {"x": x}, "y"), {"x": x})


def test_pow_by_two_is_a_product():
    """A spectrum's magnitude (silero VAD's STFT): Pow(re, 2) + Pow(im, 2), then Sqrt, in one chain with the
    softmax; Pow by another exponent stays out of it (x^0.5 is not sqrt at -0 and -inf)."""
    x = np.concatenate([_w(2, 40, scale=2.0), np.array([[0.0, -0.0] + [1.5] * 38] * 2, np.float32)])
    nodes = [helper.make_node("Pow", ["x", "two"], ["sq"]), helper.make_node("Pow", ["x", "two"], ["sq2"]),
             helper.make_node("Add", ["sq", "sq2"], ["s"]), helper.make_node("Sqrt", ["s"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"])]
    sess, _ = _check(_model(nodes, {"x": x}, "y", [("two", np.array(2, np.float32))]), {"x": x})
    assert [c.node.name.rsplit("(", 1)[1] for c in _chains(sess)] == ["5 nodes)"]
    half = [helper.make_node("Pow", ["x", "e"], ["p"]), helper.make_node("Relu", ["p"], ["r"]),
            helper.make_node("Softmax", ["r"], ["y"])]
    sess, _ = _check(_model(half, {"x": np.abs(x)}, "y", [("e", np.array(0.5, np.float32))]), {"x": np.abs(x)})
    assert [c.node.name.rsplit("(", 1)[1] for c in _chains(sess)] == ["2 nodes)"]  # Relu, Softmax
    assert sess._executor.main_plan.steps[0].node.op_type == "Pow"


@pytest.mark.parametrize("opset,axis", [(17, -1), (11, 1), (11, 0)])
def test_softmax_forms(opset, axis):
    x = _w(2, 3, 7, scale=3.0)
    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("LogSoftmax", ["t"], ["y"], axis=axis)]
    _check(_model(nodes, {"x": x}, "y", opset=opset), {"x": x})


@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm(with_bias):
    x = _w(2, 5, 16)
    inits = [("g", _w(16) + 1)] + ([("b", _w(16))] if with_bias else [])
    nodes = [helper.make_node("LayerNormalization", ["x", "g"] + (["b"] if with_bias else []), ["t"], epsilon=1e-3),
             helper.make_node("Tanh", ["t"], ["y"])]
    _check(_model(nodes, {"x": x}, "y", inits), {"x": x})


def test_batch_norm_pools_and_views():
    x = _w(2, 4, 9, 9)
    bn = [("s", _w(4) + 1), ("bb", _w(4)), ("m", _w(4)), ("v", np.abs(_w(4)) + 0.5)]
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["n"]),
             helper.make_node("MaxPool", ["n"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 0],
                              ceil_mode=1),
             helper.make_node("GlobalAveragePool", ["p"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Softmax", ["f"], ["y"])]
    _check(_model(nodes, {"x": x}, "y", bn), {"x": x})


def test_max_pool_1d():
    x = _w(1, 3, 20)
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3], strides=[2], dilations=[2]),
             helper.make_node("Softmax", ["p"], ["y"])]
    _check(_model(nodes, {"x": x}, "y"), {"x": x})


CONVS = {  # (x shape, w shape, attributes): each conv path of cpu_ops.conv_plan
    "depthwise": ((2, 8, 11, 11), (8, 1, 3, 3), {"group": 8, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "shifted": ((2, 5, 12, 10), (7, 5, 3, 3), {"pads": [1, 2, 0, 1], "dilations": [1, 2]}),
    "1x1": ((2, 6, 7, 7), (9, 6, 1, 1), {}),
    "winograd": ((1, 32, 12, 12), (32, 32, 3, 3), {"pads": [1, 1, 1, 1]}),
    "1-D": ((2, 4, 30), (6, 4, 5), {"strides": [3]}),
    "STFT-like": ((1, 1, 576), (258, 1, 256), {"strides": [128]}),  # (silero VAD: few positions, long taps)
    "spectrogram frames": ((2, 1, 1760), (257, 1, 512), {"strides": [160]}),  # (openWakeWord's; windows, batch 2)
    "frames of an H=1 image": ((1, 1, 1, 300), (16, 1, 1, 40), {"strides": [1, 20]}),
    "few positions": ((1, 129, 3), (128, 129, 3), {"pads": [1, 1]}),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("z", [False, True])
@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_paths(case, z, threads):
    """Conv + bias + Relu (fused by the optimizer into FusedConv), with a residual Add as Z where asked."""
    xs, ws, attrs = CONVS[case]
    x, w, b = _w(*xs), _w(*ws), _w(ws[0])
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)]
    last = "c"
    feeds = {"x": x}
    if z:
        so = onnxide.SessionOptions()
        so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL
        probe = _model(nodes, feeds, "c", [("w", w), ("b", b)])
        feeds["z"] = _w(*onnxide.InferenceSession(probe, so).run(None, {"x": x})[0].shape)
        nodes.append(helper.make_node("Add", ["c", "z"], ["s"]))
        last = "s"
    nodes += [helper.make_node("Relu", [last], ["r"]), helper.make_node("Sigmoid", ["r"], ["y"])]
    _check(_model(nodes, feeds, "y", [("w", w), ("b", b)]), feeds, threads, optimize=True)


@pytest.mark.parametrize("case", ["STFT-like", "spectrogram frames", "frames of an H=1 image"])
def test_windows_conv_equals_the_shifted_tiles(case, monkeypatch):
    """A one-channel unpadded conv as a GEMM over the input's windows: what the shifted conv's tiles give (the same
    bits on the AVX2 build; the plain build's tiles sum in another order)."""
    from onnxide_native import cpu_ops, lib
    xs, ws, attrs = CONVS[case]
    x, w, b = _w(*xs), _w(*ws), _w(ws[0])
    assert cpu_ops.conv_plan(lib.load(), xs, w, small=True, **attrs).kind == "windows"  # (the path under test)
    data = _model([helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs),
                   helper.make_node("Relu", ["c"], ["y"])], {"x": x}, "y", [("w", w), ("b", b)])
    got = {}
    for windows in (True, False):
        monkeypatch.setattr(cpu_ops, "CONV_WINDOWS", windows)
        sess = onnxide.InferenceSession(data, providers=[NATIVE, "CPUExecutionProvider"])
        assert _chains(sess)
        got[windows] = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(got[True], got[False], rtol=1e-5, atol=1e-6)


def test_mlp_is_one_chain_and_middle_values_escape():
    """A graph output taken from the middle of the chain, and a value the chain makes that a numpy-only node (Cos)
    reads afterwards, both come out of it."""
    x = _w(1, 64)
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["m0"]), helper.make_node("Add", ["m0", "b0"], ["a0"]),
             helper.make_node("Relu", ["a0"], ["r0"]), helper.make_node("MatMul", ["r0", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["y"]), helper.make_node("Cos", ["r0"], ["cos"])]
    inits = [("w0", _w(64, 32)), ("b0", _w(32)), ("w1", _w(32, 10)), ("b1", _w(10))]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, [1, 64])],
                          [helper.make_tensor_value_info(n, F, None) for n in ("y", "cos", "a0")],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess, got = _check(data, {"x": x}, optimize=True)
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["NativeChain", "Cos"]
    again = sess.run(None, {"x": x})  # (the arena is reused: earlier outputs are the caller's, unchanged)
    for g1, g2 in zip(got, again):
        np.testing.assert_array_equal(g1, g2)


def test_inputs_of_another_shape_run_the_steps():
    """A rank-0 declared input takes a shape-[1] feed (as onnxruntime): not the shape the chain was lowered for, so
    its steps run one by one."""
    w = _w(4, 3)
    nodes = [helper.make_node("Expand", ["x", "sh"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["y"])]
    data = _model(nodes, {"x": np.zeros((), np.float32)}, "y", [_i64("sh", [2, 4]), ("w", w)])
    so = onnxide.SessionOptions()
    so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxide.InferenceSession(data, so, providers=[NATIVE, "CPUExecutionProvider"])
    assert _chains(sess)
    for x in (np.array(0.3, np.float32), np.array([0.3], np.float32)):
        y = sess.run(None, {"x": x})[0]
        np.testing.assert_allclose(y, np.full((2, 4), 0.3, np.float32) @ w, rtol=1e-6)


def test_small_element_wise_runs_stay_as_they_are():
    """Only small element-wise nodes (the CPU EP's): no chain, the partition's steps run (a few µs to gain)."""
    x = _w(2, 3)
    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["y"])]
    _check(_model(nodes, {"x": x}, "y"), {"x": x}, chained=False)


def test_symbolic_dims_get_a_chain_once_the_shapes_repeat():
    x = _w(3, 3, 10, 10)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["n", 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", F, ["n", 4, 1, 1])],
                          [numpy_helper.from_array(_w(4, 3, 3, 3), "w")])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess = onnxide.InferenceSession(data, providers=[NATIVE, "CPUExecutionProvider"])
    want = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    first = sess.run(None, {"x": x})[0]
    assert not _chains(sess)
    for _ in range(2):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-5)
    assert _chains(sess)
    np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-5)


def test_chains_off_by_provider_option():
    x = _w(2, 30)
    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["y"])]
    data = _model(nodes, {"x": x}, "y")
    sess = onnxide.InferenceSession(data, providers=[(NATIVE, {"chains": "0"}), "CPUExecutionProvider"])
    assert not _chains(sess)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)


def _i64(name, v):
    return name, np.array(v, np.int64)


COPIES = {  # nodes after Relu(x), x of shape (2, 3, 4, 5)
    "transpose": ([helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1])], []),
    "transpose default": ([helper.make_node("Transpose", ["r"], ["t"])], []),
    "slice steps": ([helper.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["t"])],
                    [_i64("st", [-1, 1]), _i64("en", [-100, 5]), _i64("ax", [3, 2]), _i64("sp", [-2, 2])]),
    "slice clamps": ([helper.make_node("Slice", ["r", "st", "en"], ["t"])], [_i64("st", [0, 1]), _i64("en", [9, 99])]),
    "concat": ([helper.make_node("Concat", ["r", "k", "r"], ["t"], axis=1)],
               [("k", np.arange(40, dtype=np.float32).reshape(2, 1, 4, 5))]),
    "concat last": ([helper.make_node("Concat", ["r", "r"], ["t"], axis=-1)], []),
    "resize": ([helper.make_node("Resize", ["r", "", "sc"], ["t"], mode="nearest")],
               [("sc", np.array([1, 1, 2, 3], np.float32))]),
    "gather": ([helper.make_node("Gather", ["r", "i"], ["t"], axis=2)], [_i64("i", -1)]),
    "pad reflect": ([helper.make_node("Pad", ["r", "pads"], ["t"], mode="reflect")],
                    [_i64("pads", [0, 2, 3, 1, 0, 1, 0, 4])]),
    "pad edge": ([helper.make_node("Pad", ["r", "pads"], ["t"], mode="edge")], [_i64("pads", [1, 0, 5, 0, 0, 2, 1, 7])]),
    "pad wrap": ([helper.make_node("Pad", ["r", "pads"], ["t"], mode="wrap")], [_i64("pads", [0, 0, 2, 3, 0, 3, 1, 0])]),
    "reduce mean last axes": ([helper.make_node("ReduceMean", ["r", "ax"], ["t"])], [_i64("ax", [-1, 2])]),
    "reduce mean keepdims 0": ([helper.make_node("ReduceMean", ["r", "ax"], ["m"], keepdims=0),
                                helper.make_node("Unsqueeze", ["m", "ax1"], ["t"])], [_i64("ax", [3]), _i64("ax1", [0])]),
    "reduce max last axes": ([helper.make_node("ReduceMax", ["r", "ax"], ["t"])], [_i64("ax", [-1, 2])]),
    # (a log-mel spectrogram's tail: clipped at its maximum minus 80; the bound a computed scalar)
    "clip at a computed bound": ([helper.make_node("ReduceMax", ["r"], ["m"], keepdims=0),
                                  helper.make_node("Sub", ["m", "c"], ["lo"]),
                                  helper.make_node("Clip", ["r", "lo", "hi"], ["t"])],
                                 [("c", np.array(0.5, np.float32)), ("hi", np.array(0.9, np.float32))]),
    "clip below a computed bound only": ([helper.make_node("ReduceMean", ["r"], ["m"], keepdims=0),
                                          helper.make_node("Clip", ["r", "m"], ["t"])], []),
}


@pytest.mark.parametrize("case", sorted(COPIES))
def test_copies(case):
    x = _w(2, 3, 4, 5)
    nodes, inits = COPIES[case]
    nodes = [helper.make_node("Relu", ["x"], ["r"])] + nodes + [helper.make_node("Softmax", ["t"], ["y"])]
    sess, _ = _check(_model(nodes, {"x": x}, "y", inits, opset=18), {"x": x})
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["NativeChain"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("with_state,with_bias", [(True, True), (False, True), (True, False)])
def test_lstm_joins_the_chain(with_state, with_bias, threads):
    """silero VAD's decoder: h0 / c0 gathered from one state input, a forward LSTM, its Y through a conv-like GEMM
    and Y_h / Y_c out as graph outputs; all one chain, onnxruntime's values."""
    t, batch, i, h = 3, 2, 16, 8
    x = _w(t, batch, i, scale=1.0)
    inits = [("W", _w(1, 4 * h, i)), ("R", _w(1, 4 * h, h)), ("proj", _w(h, 5)), _i64("zero", 0), _i64("one", 1)]
    names = ["x", "W", "R", "B" if with_bias else "", "", "h0" if with_state else "", "c0" if with_state else ""]
    if with_bias:
        inits.append(("B", _w(1, 8 * h)))
    nodes = [helper.make_node("Relu", ["x"], ["xr"]), helper.make_node("LSTM", ["xr"] + names[1:], ["Y", "Yh", "Yc"],
                                                                       hidden_size=h),
             helper.make_node("MatMul", ["Y", "proj"], ["y"])]
    feeds = {"x": x}
    if with_state:
        nodes[:0] = [helper.make_node("Gather", ["state", "zero"], ["h0"]),
                     helper.make_node("Gather", ["state", "one"], ["c0"])]
        feeds["state"] = _w(2, 1, batch, h, scale=1.0)
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, a.shape) for n, a in feeds.items()],
                          [helper.make_tensor_value_info(o, F, None) for o in ("y", "Yh", "Yc")],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess, _ = _check(data, feeds, threads)
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["NativeChain"]


def _ms_model(node, inputs, inits, out_shape):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), node, helper.make_node("Softmax", ["t"], ["y"])]
    return _model(nodes, inputs, "y", inits, out_shape=out_shape)


@pytest.mark.parametrize("op,with_bias", [("BiasGelu", True), ("FastGelu", True), ("FastGelu", False),
                                          ("Gelu", False), ("QuickGelu", False)])
def test_contrib_activations(op, with_bias):
    x = _w(2, 6, 16, scale=2.0)
    node = helper.make_node(op, ["r"] + (["b"] if with_bias else []), ["t"], domain="com.microsoft")
    _check(_ms_model(node, {"x": x}, [("b", _w(16))] if with_bias else [], [2, 6, 16]), {"x": x})


@pytest.mark.parametrize("beta,bias", [(True, True), (False, False)])
def test_skip_layer_norm(beta, bias):
    x, skip = _w(2, 6, 16), _w(2, 6, 16)
    inputs = ["r", "skip", "g"] + (["beta"] if beta else [""]) + (["bias"] if bias else [])
    inits = [("g", _w(16) + 1)] + ([("beta", _w(16))] if beta else []) + ([("bias", _w(16))] if bias else [])
    node = helper.make_node("SkipLayerNormalization", inputs, ["t"], domain="com.microsoft", epsilon=1e-5)
    _check(_ms_model(node, {"x": x, "skip": skip}, inits, [2, 6, 16]), {"x": x, "skip": skip})


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("bias_shape", [None, (1, 1, 5, 7), (2, 4, 5, 7)])
def test_multi_head_attention(bias_shape, threads):
    q, k, v = _w(2, 5, 32), _w(2, 7, 32), _w(2, 7, 24)
    inputs = {"x": q, "k": k, "v": v}
    names = ["r", "k", "v", "", ""]
    if bias_shape:
        inputs["ab"] = _w(*bias_shape)
        names.append("ab")
    node = helper.make_node("MultiHeadAttention", names, ["t"], domain="com.microsoft", num_heads=4)
    _check(_ms_model(node, inputs, [], [2, 5, 24]), inputs, threads)


@pytest.mark.parametrize("case", ["expand", "pad", "pad value"])
def test_expand_and_pad(case):
    x = _w(2, 1, 4, 5)
    if case == "expand":
        node, inits = helper.make_node("Expand", ["r", "sh"], ["t"]), [_i64("sh", [3, 2, 6, 1, 1])]
    else:
        inits = [_i64("pads", [0, 1, 2, 0, 1, 0, 0, 3])] + ([("v", np.array(1.5, np.float32))] if case == "pad value"
                                                             else [])
        node = helper.make_node("Pad", ["r", "pads"] + (["v"] if case == "pad value" else []), ["t"])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), node, helper.make_node("Softmax", ["t"], ["y"])]
    sess, _ = _check(_model(nodes, {"x": x}, "y", inits, opset=18), {"x": x})
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["NativeChain"]


def test_resize_output_dims_are_inferred_from_constant_scales():
    """Resize's shape rule gives the output dims (fixed input, constant scales or sizes), so what follows an
    upsampling in a detector's neck stays in the chain."""
    x = _w(1, 2, 3, 4)
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Resize", ["r", "", "sc"], ["u"], mode="nearest"),
             helper.make_node("Resize", ["u", "", "", "sz"], ["t"], mode="nearest"),
             helper.make_node("Sigmoid", ["t"], ["y"])]
    inits = [("sc", np.array([1, 1, 2, 2], np.float32)), _i64("sz", [1, 2, 12, 24])]
    sess, got = _check(_model(nodes, {"x": x}, "y", inits, opset=18), {"x": x})
    assert got[0].shape == (1, 2, 12, 24)
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["NativeChain"]
    types = sess._executor.main_plan.types
    assert types["u"][1] == [1, 2, 6, 8] and types["t"][1] == [1, 2, 12, 24]


def test_steps_run_one_by_one_keep_their_kernel_context():
    """The stepwise path calls LayerNormalization's numpy kernel, which takes the node's context (its outputs)."""
    nodes = [helper.make_node("Expand", ["x", "sh"], ["e"]),
             helper.make_node("LayerNormalization", ["e", "g"], ["y"], axis=-1)]
    data = _model(nodes, {"x": np.zeros((), np.float32)}, "y", [_i64("sh", [2, 4]), ("g", _w(4) + 1)], opset=18)
    so = onnxide.SessionOptions()
    so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxide.InferenceSession(data, so, providers=[NATIVE, "CPUExecutionProvider"])
    assert _chains(sess)
    want = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    for x in (np.array(0.5, np.float32), np.array([0.5], np.float32)):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want.run(None, {"x": x})[0], atol=1e-6)


def _chain_ops(sess):
    """The instruction names of the session's chains."""
    from onnxide_native.chain import OPS
    names = {code: name for name, code in OPS.items()}
    return [names[int(op)] for s in _chains(sess) for prog in s.kernel.programs.values() if prog is not None
            for op in prog.code[:prog.n, 0]]


@pytest.mark.parametrize("case", ["depthwise", "shifted", "1x1", "winograd"])
def test_activation_folds_into_the_conv_before_it(case):
    """HardSwish after a conv becomes the conv's epilogue when nothing else reads the conv's output; when something
    does (an Add of both, or a graph output) the conv's own output stays and the act is its own instruction."""
    xs, ws, attrs = CONVS[case]
    x, w, b = _w(*xs), _w(*ws), _w(ws[0])
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)
    inits = [("w", w), ("b", b)]
    scale, half = _then_scale("h")
    alone = [conv, helper.make_node("HardSwish", ["c"], ["h"]), scale]
    inits.append(half)
    sess, _ = _check(_model(alone, {"x": x}, "y", inits), {"x": x})
    assert "act" not in _chain_ops(sess)
    shared = [conv, helper.make_node("HardSwish", ["c"], ["h"]), helper.make_node("Add", ["c", "h"], ["y"])]
    sess, _ = _check(_model(shared, {"x": x}, "y", inits), {"x": x})
    assert "act" in _chain_ops(sess)
    g = helper.make_graph(alone, "g", [helper.make_tensor_value_info("x", F, x.shape)],
                          [helper.make_tensor_value_info(n, F, None) for n in ("y", "c")],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess, _ = _check(data, {"x": x})
    assert "act" in _chain_ops(sess)


POOLED_CONVS = {  # (x shape, w shape): 3×3 convs padded by 1, then a 2×2 stride-2 max pool
    "rows in pairs": ((1, 3, 16, 16), (16, 3, 3, 3)),
    "4-row items, an odd row, a partial row panel, batch 2": ((2, 4, 9, 8), (20, 4, 3, 3)),
    "24 wide, a short last item": ((1, 5, 6, 24), (16, 5, 3, 3)),
    "not whole groups of columns": ((1, 5, 10, 12), (8, 5, 3, 3)),
    "weights streamed": ((1, 512, 4, 8), (64, 512, 3, 3)),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", sorted(POOLED_CONVS))
def test_max_pool_folds_into_the_conv_before_it(case, threads):
    """A 2×2 stride-2 MaxPool of a shifted conv's (Relu'd) output that nothing else reads is made by the conv
    instruction: the bits of the conv and the pool run apart (the conv's output also a graph output keeps them
    apart), NaN included; a HardSwish after the pool stays its own instruction."""
    xs, ws = POOLED_CONVS[case]
    x, w, b = _w(*xs), _w(*ws), _w(ws[0])
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("HardSwish", ["p"], ["y"])]
    inits = [("w", w), ("b", b)]
    # (sums of K = 4,608 products in another order than onnxruntime's differ by more than 1e-5 near 0: 1.6e-5 seen)
    atol = 1e-5 * max(1.0, np.sqrt(w[0].size / 64))
    fused, got = _check(_model(nodes, {"x": x}, "y", inits), {"x": x}, threads, atol=atol)
    assert "maxpool" not in _chain_ops(fused) and "act" in _chain_ops(fused)
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, x.shape)],
                          [helper.make_tensor_value_info(n, F, None) for n in ("y", "r")],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    apart, want = _check(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                                           ir_version=9).SerializeToString(), {"x": x}, threads, atol=atol)
    assert "maxpool" in _chain_ops(apart)
    np.testing.assert_array_equal(got[0], want[0])
    x[0, 0, 1, 2] = np.nan  # (onnxruntime's pool drops a NaN where numpy's max, and so onnxide, propagates it)
    got, want = fused.run(None, {"x": x}), apart.run(None, {"x": x})
    assert np.isnan(got[0]).any()
    np.testing.assert_array_equal(got[0], want[0])


def test_a_one_chain_plan_runs_directly_with_the_general_paths_results_and_errors():
    """A graph that is one chain runs through Executor._run_single (run and run_async): outputs in any order and
    subset, as the general step loop (taken with RunOptions) gives them; a failing kernel is reported as the same
    node error."""
    x = _w(1, 64)
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["m0"]), helper.make_node("Relu", ["m0"], ["r0"]),
             helper.make_node("MatMul", ["r0", "w1"], ["y"])]
    inits = [("w0", _w(64, 32)), ("w1", _w(32, 10))]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", F, [1, 64])],
                          [helper.make_tensor_value_info(n, F, None) for n in ("y", "r0")],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess, _ = _check(data, {"x": x})
    assert sess._executor._single is not None
    general = onnxide.RunOptions()
    for names in (None, ["r0"], ["r0", "y"], ["y", "y"]):
        want = sess.run(names, {"x": x}, general)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # (a fresh event loop: Playwright may own this one)
            awaited = pool.submit(asyncio.run, sess.run_async(names, {"x": x})).result()
        for got in (sess.run(names, {"x": x}), awaited):
            for g1, w1 in zip(got, want):
                np.testing.assert_array_equal(g1, w1)
    chain = _chains(sess)[0].kernel

    def fail(*args):
        raise MemoryError("no scratch")
    chain.backend.run = fail
    errors = []
    for options in (None, general):
        with pytest.raises(Exception) as e:
            sess.run(None, {"x": x}, options)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1] and "no scratch" in errors[0][1]


def test_a_one_chain_plan_leaves_blas_threads_alone_and_other_plans_set_them(monkeypatch):
    """A run of a plan that is one chain (one C call, no BLAS) does not get or set BLAS's thread count; a plan with
    a step on the numpy CPU EP still runs with BLAS on one thread (the native EP splits its kernels itself) and
    gets the count back after; the EP reads the session's count in both."""
    from onnxide.runtime import threads as T
    calls, seen = [], []
    monkeypatch.setattr(T, "_blas", [(lambda: calls.append("get") or 4, lambda n: calls.append(("set", n)))])
    x = _w(1, 64)
    chained = _model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                     {"x": x}, "y", [("w", _w(64, 32))])
    s = _w(3, 3)  # (a Det of a fed matrix: a numpy step)
    mixed = _model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["r"]),
                    helper.make_node("Det", ["s"], ["d"]), helper.make_node("Mul", ["r", "d"], ["y"])],
                   {"x": x, "s": s}, "y", [("w", _w(64, 32))])
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = 2
    for data, feeds, want in ((chained, {"x": x}, []), (mixed, {"x": x, "s": s}, ["get", ("set", 1), ("set", 4)])):
        sess = onnxide.InferenceSession(data, so, providers=[NATIVE, "CPUExecutionProvider"])
        assert sess._executor.one_chain == (want == [])
        chain = _chains(sess)[0].kernel
        real = chain.backend.run
        monkeypatch.setattr(chain.backend, "run", lambda *a, real=real: seen.append(T.current()) or real(*a))
        calls.clear()
        sess.run(None, feeds)
        assert calls == want
    assert seen == [2, 2]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("zero_point,bias,per_column", [(False, False, False), (True, True, True),
                                                        (True, False, False), (False, True, True)])
def test_dynamic_quantize_matmul_readers_of_one_x_quantize_it_once(monkeypatch, zero_point, bias, per_column,
                                                                   threads):
    """Three com.microsoft DynamicQuantizeMatMul of one x (attention's Q, K, V projections) and an Add in one chain:
    x quantized by one "dq" instruction, each GEMM a "qgemm" reading it; the numpy kernels' bits (quantization and
    int8 GEMM are exact, the float epilogue the same float32 steps). A NaN in x reruns the chain with the steps' own
    kernels, as the per-node kernel hands NaN to the numpy one."""
    from onnxide.plan import chains
    k, n = 40, 24
    nodes, inits = dq_matmul_readers(rng, _w, k, n, zero_point, per_column, bias)
    inits.append(("c", _w(n)))
    nodes += [helper.make_node("Add", ["y0", "y1"], ["s"]), helper.make_node("Add", ["s", "y2"], ["t"]),
              helper.make_node("Add", ["t", "c"], ["out"])]
    model = _model(nodes, {"x": _w(2, 7, k)}, "out", inits)
    x = rng.standard_normal((2, 7, k)).astype(np.float32) * 3
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    cpu = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"])
    sess = onnxide.InferenceSession(model, so, providers=[NATIVE, "CPUExecutionProvider"])
    for _ in range(2):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0])
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["NativeChain"]
    ops = _chain_ops(sess)  # (one program per thread count a run asked for)
    assert ops and sorted(ops) == sorted((["binary"] * 3 + ["dq"] + ["qgemm"] * 3) * (len(ops) // 7))
    stepwise = []
    real = chains.Chain.stepwise
    monkeypatch.setattr(chains.Chain, "stepwise", lambda self, inputs: stepwise.append(1) or real(self, inputs))
    x[0, 0, 0] = np.nan
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0])
    assert stepwise
