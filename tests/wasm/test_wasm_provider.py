"""WasmExecutionProvider end to end: a small CNN + MLP graph through InferenceSession against the CPU EP, claims that
must be declined (Indices output, training BatchNorm, legacy attributes), and fallback for non-float32 tensors."""
import numpy as np
import pytest

pytest.importorskip("wasmtime", reason="wasmtime (pip) runs the wasm kernels natively")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnxide  # noqa: E402
from onnxide.eps import wasm as wasm_ep  # noqa: E402

if not wasm_ep.available():
    pytest.skip("no wasm kernel build (run wasm_kernels/build.sh)", allow_module_level=True)

PROVIDERS = ["WasmExecutionProvider", "CPUExecutionProvider"]
RNG = np.random.default_rng(7)


def _init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _ep_of(sess):
    """Where each node runs (the steps inside a WASM chain step, eps/wasm_chain.py, as they were placed)."""
    steps = [t for s in sess._executor.main_plan.steps for t in (s.kernel.steps if s.node.op_type == "WasmChain"
                                                                  else [s])]
    return {s.node.op_type + (":" + s.node.name if s.node.name else ""): s.ep.name for s in steps}


def test_cnn_mlp_matches_cpu():
    f32 = np.float32
    inits = [_init("w1", RNG.standard_normal((8, 3, 3, 3)).astype(f32)),
             _init("b1", RNG.standard_normal(8).astype(f32)),
             _init("s", RNG.random(8).astype(f32) + 0.5), _init("bb", RNG.standard_normal(8).astype(f32)),
             _init("m", RNG.standard_normal(8).astype(f32)), _init("v", RNG.random(8).astype(f32) + 0.5),
             _init("wd", RNG.standard_normal((8, 1, 3, 3)).astype(f32)),
             _init("wf", RNG.standard_normal((10, 8)).astype(f32)), _init("bf", RNG.standard_normal(10).astype(f32)),
             _init("shape", np.array([1, 8], np.int64))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["dw0"], group=8, pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["dw0", "r1"], ["dw"]),  # a residual: FusedConv's Z input
             helper.make_node("HardSwish", ["dw"], ["hs"]),
             helper.make_node("MaxPool", ["hs"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["mp"], ["gp"]),
             helper.make_node("Reshape", ["gp", "shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "wf", "bf"], ["fc"], transB=1),
             helper.make_node("Softmax", ["fc"], ["y"], axis=-1)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits, opset=17)
    x = RNG.standard_normal((1, 3, 16, 16)).astype(f32)
    sess = onnxide.InferenceSession(model, providers=PROVIDERS)
    assert sess.get_providers() == PROVIDERS
    eps = _ep_of(sess)
    assert eps.pop("Reshape") == "CPUExecutionProvider"
    assert set(eps.values()) == {"WasmExecutionProvider"}, eps  # incl. the optimizer's fused ops
    got = sess.run(None, {"x": x})[0]
    want = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_declines_what_it_cannot_do_exactly():
    f32 = np.float32
    c = 4
    inits = [_init("s", np.ones(c, f32)), _init("b", np.zeros(c, f32)), _init("m", np.zeros(c, f32)),
             _init("v", np.ones(c, f32))]
    nodes = [helper.make_node("MaxPool", ["x"], ["mp", "idx"], kernel_shape=[2, 2], name="withidx"),
             helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn", "rm", "rv"], training_mode=1,
                              name="train"),
             helper.make_node("LayerNormalization", ["x", "s"], ["ln"], stash_type=0, name="stash"),
             helper.make_node("Gelu", ["x"], ["g"], approximate="tanh", name="gelu")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("mp", "bn", "ln", "g")]
    outs.append(helper.make_tensor_value_info("idx", TensorProto.INT64, None))
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 4, 4])], outs, inits,
                   opset=20)
    sess = onnxide.InferenceSession(model, providers=PROVIDERS)
    eps = _ep_of(sess)
    assert eps["MaxPool:withidx"] == "CPUExecutionProvider"
    assert eps["BatchNormalization:train"] == "CPUExecutionProvider"
    assert eps["LayerNormalization:stash"] == "CPUExecutionProvider"
    assert eps["Gelu:gelu"] == "WasmExecutionProvider"


@pytest.mark.parametrize("dtype,tp", [(np.int32, TensorProto.INT32), (np.float64, TensorProto.DOUBLE),
                                      (np.float16, TensorProto.FLOAT16)])
def test_other_dtypes_fall_back_to_numpy(dtype, tp):
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("MatMul", ["s", "b"], ["y"])]
    ins = [helper.make_tensor_value_info(n, tp, [3, 3]) for n in ("a", "b")]
    model = _model(nodes, ins, [helper.make_tensor_value_info("y", tp, None)])
    a = np.arange(9).reshape(3, 3).astype(dtype)
    got = onnxide.InferenceSession(model, providers=PROVIDERS).run(None, {"a": a, "b": a})[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ((a + a) @ a).astype(dtype))


def test_build_option_and_bad_option():
    for build in ("simd128", "relaxed"):
        from onnxide.eps import wasm_runtime

        if wasm_runtime.find_build(build) is None:
            continue
        ep = wasm_ep.WasmExecutionProvider({"wasm_simd": build})
        assert ep.build == build
    with pytest.raises(onnxide.EPFail):
        wasm_ep.WasmExecutionProvider({"wasm_simd": "avx512"})


@pytest.mark.parametrize("chains", ["1", "0"])
def test_skip_layer_norm_matches_cpu(chains):
    """com.microsoft SkipLayerNormalization on the WASM EP (in a chain with its neighbours, or per node), every
    output count and optional input; outputs as the CPU EP's."""
    h = 24
    for n_out in (1, 2, 4):
        for with_bias in (True, False):
            ins = ["x", "skip", "g", "be", "bi" if with_bias else ""]
            outs = ["y", "m", "iv", "s"][:n_out]
            nodes = [helper.make_node("MatMul", ["x0", "w"], ["x"]),
                     helper.make_node("SkipLayerNormalization", [i for i in ins if i] if with_bias else ins[:4], outs,
                                      domain="com.microsoft", epsilon=1e-5),
                     helper.make_node("Relu", ["y"], ["out"])]
            inits = [_init("w", RNG.standard_normal((h, h)).astype(np.float32))] + [
                _init(k, RNG.standard_normal(h).astype(np.float32)) for k in ("g", "be", "bi")]
            g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, [2, 5, h])
                                               for k in ("x0", "skip")],
                                  [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in
                                   ["out"] + outs[1:]], inits)
            model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)]).SerializeToString()
            feeds = {k: RNG.standard_normal((2, 5, h)).astype(np.float32) for k in ("x0", "skip")}
            want = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
            sess = onnxide.InferenceSession(model, providers=[("WasmExecutionProvider", {"chains": chains}),
                                                               "CPUExecutionProvider"])
            for _ in range(2):
                for got, w in zip(sess.run(None, feeds), want):
                    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
            assert _ep_of(sess)["SkipLayerNormalization"] == "WasmExecutionProvider"


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("hidden,layout", [(5, 0), (8, 1)])
def test_lstm_matches_cpu(direction, hidden, layout):
    """The plain LSTM on the WASM EP (GEMM input projection, ox_lstm recurrence; H not a multiple of 4 too), with and
    without biases and initial states, all three outputs: as the CPU EP's."""
    nd, t, batch, i = (2 if direction == "bidirectional" else 1), 6, 2, 7
    for with_b, with_state in ((True, True), (False, False)):
        ins = ["x", "W", "R", "B" if with_b else "", "", "h0" if with_state else "", "c0" if with_state else ""]
        while not ins[-1]:
            ins.pop()
        inits = [_init("W", (RNG.standard_normal((nd, 4 * hidden, i)) * 0.3).astype(np.float32)),
                 _init("R", (RNG.standard_normal((nd, 4 * hidden, hidden)) * 0.3).astype(np.float32)),
                 _init("B", (RNG.standard_normal((nd, 8 * hidden)) * 0.3).astype(np.float32))]
        states = ["h0", "c0"] if with_state else []
        model = _model([helper.make_node("LSTM", ins, ["Y", "Yh", "Yc"], direction=direction, hidden_size=hidden,
                                         layout=layout)],
                       [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in ["x"] + states],
                       [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in ("Y", "Yh", "Yc")], inits,
                       opset=14)
        feeds = {"x": RNG.standard_normal((batch, t, i) if layout else (t, batch, i)).astype(np.float32)}
        feeds.update({k: RNG.standard_normal((batch, nd, hidden) if layout else (nd, batch, hidden)).astype(
            np.float32) for k in states})
        want = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
        sess = onnxide.InferenceSession(model, providers=PROVIDERS)
        for _ in range(2):  # (the second run reads the cached transposed R)
            for got, w in zip(sess.run(None, feeds), want):
                np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
        assert _ep_of(sess)["LSTM"] == "WasmExecutionProvider"
