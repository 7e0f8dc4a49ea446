"""WASM chains (py_engine/onnxide/eps/wasm_chain.py, wasm_kernels/ox_chain.c) through wasmtime: runs of nodes
lowered to one ox_chain_run call give the CPU EP's results (an MLP, a small CNN, a transformer-style block, each
lowering's forms), the plan really holds a chain step, inputs of other shapes run the original steps, symbolic dims
get a chain once the shapes recur, values read after the chain come out, and a dropped session frees the constants
its chains pinned in the module's memory."""
import gc

import numpy as np
import pytest

pytest.importorskip("wasmtime", reason="wasmtime (pip) runs the wasm kernels natively")
pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnxide  # noqa: E402
from onnxide.eps import wasm as wasm_ep  # noqa: E402
from chain_graphs import dq_matmul_readers  # noqa: E402

if not wasm_ep.available():
    pytest.skip("no wasm kernel build (run wasm_kernels/build.sh)", allow_module_level=True)

WASM = "WasmExecutionProvider"
F = TensorProto.FLOAT
rng = np.random.default_rng(161)


def _w(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _i64(name, v):
    return name, np.array(v, np.int64)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    """inputs: {name: shape (dims may be names)}; outputs: names (shapes left to inference)."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
                          [helper.make_tensor_value_info(n, F, None) for n in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    ops = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(g, opset_imports=ops, ir_version=9).SerializeToString()


def _chains(sess):
    plans = [sess._executor.main_plan] + [e.main_plan for e in (sess._specialized._executors.values()
                                                                 if sess._specialized else ()) if e is not None]
    return [s for p in plans for s in p.steps if s.node.op_type == "WasmChain"]


def _session(data, optimize=False, chains="1"):
    so = onnxide.SessionOptions()
    if not optimize:
        so.graph_optimization_level = onnxide.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxide.InferenceSession(data, so, providers=[(WASM, {"chains": chains}), "CPUExecutionProvider"])


def _check(data, feeds, optimize=False, chained=True):
    sess = _session(data, optimize)
    got = sess.run(None, feeds)
    assert bool(_chains(sess)) == chained
    want = onnxide.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    return sess, got


def _mlp():
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["m0"]), helper.make_node("Add", ["m0", "b0"], ["a0"]),
             helper.make_node("Relu", ["a0"], ["r0"]), helper.make_node("MatMul", ["r0", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]), helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "w2", "b2"], ["y"], transB=1)]
    inits = [("w0", _w(64, 256)), ("b0", _w(256)), ("w1", _w(256, 256)), ("b1", _w(256)), ("w2", _w(10, 256)),
             ("b2", _w(10))]
    return nodes, inits


@pytest.mark.parametrize("optimize", [False, True])
def test_mlp_is_one_chain(optimize):
    nodes, inits = _mlp()
    x = _w(4, 64)
    sess, got = _check(_model(nodes, {"x": [4, 64]}, ["y"], inits), {"x": x}, optimize)
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["WasmChain"]
    again = sess.run(None, {"x": x})  # (the arena is reused: earlier outputs are the caller's, unchanged)
    np.testing.assert_array_equal(got[0], again[0])


def test_small_cnn():
    """Conv + BatchNorm + Relu, a Winograd-sized conv, a depthwise conv with a residual (FusedConv's Z once
    optimized), pools, Flatten and a Gemm: all one chain."""
    bn = [("s", _w(16) + 1), ("bb", _w(16)), ("m", _w(16)), ("v", np.abs(_w(16)) + 0.5)]
    nodes = [helper.make_node("Conv", ["x", "w0", "c0"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["r", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["d"], group=16, pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["d", "r1"], ["res"]), helper.make_node("HardSwish", ["res"], ["h"]),
             helper.make_node("MaxPool", ["h"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["p"], ["ap"], kernel_shape=[2, 2], pads=[0, 0, 1, 1],
                              count_include_pad=1),
             helper.make_node("GlobalAveragePool", ["ap"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    inits = [("w0", _w(16, 3, 3, 3)), ("c0", _w(16)), ("w1", _w(16, 16, 3, 3)), ("wd", _w(16, 1, 3, 3))] + bn + [
        ("wf", _w(10, 16)), ("bf", _w(10))]
    data = _model(nodes, {"x": [1, 3, 20, 20]}, ["y"], inits)
    x = _w(1, 3, 20, 20, scale=1.0)
    for optimize in (False, True):
        sess, _ = _check(data, {"x": x}, optimize)
        assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["WasmChain"]


def _block(heads=2, d=16, s=6):
    """One transformer encoder block written out (no fused ops): attention by MatMul / Softmax over heads, a
    residual, LayerNorm, a GELU MLP (Erf form), another LayerNorm."""
    h = d // heads
    n = helper.make_node
    nodes = [n("MatMul", ["x", "wq"], ["q0"]), n("MatMul", ["x", "wk"], ["k0"]), n("MatMul", ["x", "wv"], ["v0"])]
    for name in ("q", "k", "v"):
        nodes += [n("Reshape", [f"{name}0", "heads"], [f"{name}1"]),
                  n("Transpose", [f"{name}1"], [f"{name}2"], perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3])]
    nodes += [n("MatMul", ["q2", "k2"], ["sc"]), n("Mul", ["sc", "scale"], ["scs"]),
              n("Softmax", ["scs"], ["pr"], axis=-1), n("MatMul", ["pr", "v2"], ["ctx"]),
              n("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]), n("Reshape", ["ct", "merge"], ["cm"]),
              n("MatMul", ["cm", "wo"], ["o"]), n("Add", ["o", "x"], ["r0"]),
              n("LayerNormalization", ["r0", "g0", "be0"], ["l0"], axis=-1, epsilon=1e-5),
              n("MatMul", ["l0", "w1"], ["u"]), n("Add", ["u", "bi1"], ["ub"]),
              n("Div", ["ub", "sqrt2"], ["ud"]), n("Erf", ["ud"], ["ue"]), n("Add", ["ue", "one"], ["u1"]),
              n("Mul", ["ub", "u1"], ["um"]), n("Mul", ["um", "half"], ["gelu"]),
              n("MatMul", ["gelu", "w2"], ["dn"]), n("Add", ["dn", "l0"], ["r1"]),
              n("LayerNormalization", ["r1", "g1", "be1"], ["y"], axis=-1, epsilon=1e-5)]
    scalar = lambda v: np.array(v, np.float32)  # noqa: E731
    inits = [("wq", _w(d, d)), ("wk", _w(d, d)), ("wv", _w(d, d)), ("wo", _w(d, d)), _i64("heads", [1, s, heads, h]),
             _i64("merge", [1, s, d]), ("scale", scalar(1 / np.sqrt(h))), ("g0", _w(d) + 1), ("be0", _w(d)),
             ("w1", _w(d, 4 * d)), ("bi1", _w(4 * d)), ("sqrt2", scalar(np.sqrt(2))), ("one", scalar(1)),
             ("half", scalar(0.5)), ("w2", _w(4 * d, d)), ("g1", _w(d) + 1), ("be1", _w(d))]
    return _model(nodes, {"x": [1, s, d]}, ["y"], inits)


@pytest.mark.parametrize("optimize", [False, True])
def test_transformer_block(optimize):
    sess, _ = _check(_block(), {"x": _w(1, 6, 16, scale=1.0)}, optimize)
    chained = _chains(sess)[0].kernel.steps
    assert len(chained) >= 10 and {s.node.op_type for s in chained} >= {"MatMul", "Softmax", "LayerNormalization"} \
        if not optimize else len(chained) >= 4


def test_symbolic_dims_chain_once_shapes_recur_and_other_shapes_fall_back():
    """A batch dim left symbolic: the first run plans for any shape (no chain), a shape seen again gets a
    specialized plan with a chain; a new batch size is right too."""
    nodes, inits = _mlp()
    data = _model(nodes, {"x": ["n", 64]}, ["y"], inits)
    sess = onnxide.InferenceSession(data, providers=[WASM, "CPUExecutionProvider"])
    cpu = onnxide.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = _w(3, 64)
    first = sess.run(None, {"x": x})[0]
    assert not _chains(sess)
    for _ in range(2):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
    assert _chains(sess)
    np.testing.assert_allclose(first, cpu.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
    for n in (1, 5, 5, 5, 3):
        xn = _w(n, 64)
        np.testing.assert_allclose(sess.run(None, {"x": xn})[0], cpu.run(None, {"x": xn})[0], rtol=1e-4, atol=1e-5)


def test_inputs_of_another_shape_run_the_steps():
    """A rank-0 declared input takes a shape-[1] feed (as onnxruntime): not the shape the chain was lowered for, so
    its steps run one by one."""
    w = _w(4, 3)
    nodes = [helper.make_node("Expand", ["x", "sh"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"])]
    sess = _session(_model(nodes, {"x": []}, ["y"], [_i64("sh", [2, 4]), ("w", w)]))
    assert _chains(sess)
    for x in (np.array(0.3, np.float32), np.array([0.3], np.float32)):
        m = np.full((2, 4), 0.3, np.float32) @ w
        e = np.exp(m - m.max(-1, keepdims=True))
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_values_read_after_the_chain_and_middle_outputs():
    x = _w(2, 32)
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["m0"]), helper.make_node("Relu", ["m0"], ["r0"]),
             helper.make_node("MatMul", ["r0", "w1"], ["y"]), helper.make_node("Cos", ["r0"], ["cos"])]
    sess, _ = _check(_model(nodes, {"x": [2, 32]}, ["y", "cos", "m0"], [("w0", _w(32, 16)), ("w1", _w(16, 8))]),
                     {"x": x})
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["WasmChain", "Cos"]


def test_chains_off_by_provider_option():
    nodes, inits = _mlp()
    data = _model(nodes, {"x": [4, 64]}, ["y"], inits)
    x = _w(4, 64)
    on, off = _session(data), _session(data, chains="0")
    assert _chains(on) and not _chains(off)
    np.testing.assert_allclose(on.run(None, {"x": x})[0], off.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


FORMS = {  # (nodes after Relu(x) -> "r", ending in "t"; initializers; x shape); a Softmax follows
    "gemm transA C row": ([helper.make_node("Gemm", ["r", "w", "c"], ["t"], transA=1, alpha=0.5, beta=2.0)],
                          [("w", _w(5, 7)), ("c", _w(6, 1))], (5, 6)),
    "gemm dynamic B": ([helper.make_node("Gemm", ["r", "r2", "c"], ["t"], transB=1),
                        helper.make_node("Relu", ["x"], ["r2"])], [("c", _w(1, 5))], (5, 6)),
    "matmul batched": ([helper.make_node("Transpose", ["r"], ["rt"], perm=[0, 2, 1]),
                        helper.make_node("MatMul", ["r", "rt"], ["t"])], [], (3, 4, 5)),
    "matmul shared batch B": ([helper.make_node("MatMul", ["r", "w"], ["t"])], [("w", _w(1, 5, 6))], (3, 4, 5)),
    "binary broadcasts": ([helper.make_node("Sub", ["r", "c"], ["s"]), helper.make_node("Max", ["s", "c2"], ["u"]),
                           helper.make_node("PRelu", ["u", "sl"], ["t"])],
                          [("c", _w(1, 4, 1)), ("c2", _w(5)), ("sl", _w(4, 1))], (3, 4, 5)),
    "clip and leaky": ([helper.make_node("Clip", ["r", "lo", "hi"], ["c"]),
                        helper.make_node("LeakyRelu", ["c"], ["t"], alpha=0.3)],
                       [("lo", np.array(0.1, np.float32)), ("hi", np.array(0.4, np.float32))], (3, 8)),
    "instance norm": ([helper.make_node("InstanceNormalization", ["r", "g", "b"], ["t"], epsilon=1e-3)],
                      [("g", _w(3) + 1), ("b", _w(3))], (2, 3, 4, 5)),
    "layer norm axis": ([helper.make_node("LayerNormalization", ["r", "g"], ["t"], axis=-2)], [("g", _w(1, 5) + 1)],
                        (2, 4, 5)),
    "global max pool": ([helper.make_node("GlobalMaxPool", ["r"], ["g"]),
                         helper.make_node("Flatten", ["g"], ["t"])], [], (2, 3, 4, 5)),
    "resize": ([helper.make_node("Resize", ["r", "", "sc"], ["t"], mode="nearest")],
               [("sc", np.array([1, 1, 2, 3], np.float32))], (1, 2, 3, 4)),
    "copies": ([helper.make_node("Slice", ["r", "st", "en", "ax"], ["sl"]),
                helper.make_node("Pad", ["sl", "pads", "pv"], ["pd"]),
                helper.make_node("Concat", ["pd", "pd"], ["cc"], axis=1),
                helper.make_node("Expand", ["cc", "sh"], ["t"])],
               [_i64("st", [1, 0]), _i64("en", [3, -1]), _i64("ax", [1, 2]), _i64("pads", [0, 1, 0, 2, 0, 0]),
                ("pv", np.array(0.7, np.float32)), _i64("sh", [2, 1, 1, 1])], (1, 4, 5)),
    "pow 2 and sqrt": ([helper.make_node("Pow", ["r", "two"], ["sq"]), helper.make_node("Sqrt", ["sq"], ["t"])],
                       [("two", np.array(2, np.float32))], (3, 7)),
    "gather a scalar index": ([helper.make_node("Gather", ["r", "i"], ["g"], axis=1),
                               helper.make_node("Relu", ["g"], ["t"])], [_i64("i", -2)], (2, 3, 5)),
    "pad reflect, edge, wrap": ([helper.make_node("Pad", ["r", "p1"], ["a"], mode="reflect"),
                                 helper.make_node("Pad", ["a", "p2"], ["b"], mode="edge"),
                                 helper.make_node("Pad", ["b", "p3"], ["t"], mode="wrap")],
                                [_i64("p1", [0, 2, 1, 3]), _i64("p2", [1, 0, 0, 6]), _i64("p3", [0, 4, 2, 1])], (2, 4)),
    "reduce mean trailing axes": ([helper.make_node("ReduceMean", ["r", "ax"], ["m"], keepdims=0),
                                   helper.make_node("Unsqueeze", ["m", "ax1"], ["t"])],
                                  [_i64("ax", [2, -1]), _i64("ax1", [1])], (2, 3, 4, 5)),
    "log softmax opset 11 axis 1": ([helper.make_node("LogSoftmax", ["r"], ["t"], axis=1)], [], (2, 3, 4)),
    "reduce mean to a scalar": ([helper.make_node("ReduceMean", ["r"], ["m"], keepdims=0),
                                 helper.make_node("Sub", ["r", "m"], ["t"])], [], (3, 5)),
}


@pytest.mark.parametrize("case", sorted(FORMS))
def test_lowering_forms(case):
    nodes, inits, shape = FORMS[case]
    opset = 11 if "opset 11" in case else 18
    nodes = [helper.make_node("Relu", ["x"], ["r"])] + nodes + [helper.make_node("Softmax", ["t"], ["y"])]
    sess, _ = _check(_model(nodes, {"x": list(shape)}, ["y"], inits, opset=opset), {"x": _w(*shape, scale=1.0)})
    assert [s.node.op_type for s in sess._executor.main_plan.steps] == ["WasmChain"]


@pytest.mark.parametrize("bias_shape", [None, (1, 1, 5, 7), (2, 4, 5, 7)])
def test_multi_head_attention(bias_shape):
    inputs = {"x": [2, 5, 32], "k": [2, 7, 32], "v": [2, 7, 24]}
    names = ["r", "k", "v", "", ""]
    if bias_shape:
        inputs["ab"] = list(bias_shape)
        names.append("ab")
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("MultiHeadAttention", names, ["t"], domain="com.microsoft", num_heads=4),
             helper.make_node("Softmax", ["t"], ["y"])]
    _check(_model(nodes, inputs, ["y"]), {k: _w(*s, scale=1.0) for k, s in inputs.items()})


@pytest.mark.parametrize("op,bias,attrs", [("BiasGelu", True, {}), ("FastGelu", True, {}), ("Gelu", False, {}),
                                           ("QuickGelu", False, {}), ("QuickGelu", False, {"alpha": 1.0})])
def test_contrib_gelu(op, bias, attrs):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["r"]),
             helper.make_node(op, ["r"] + (["b"] if bias else []), ["t"], domain="com.microsoft", **attrs),
             helper.make_node("Softmax", ["t"], ["y"])]
    inits = [("w", _w(16, 16))] + ([("b", _w(16))] if bias else [])
    _check(_model(nodes, {"x": [3, 16]}, ["y"], inits), {"x": _w(3, 16, scale=2.0)})


def test_large_inputs_read_in_place():
    """An input over 64 KiB is not staged (Pyodide reads it where it is; natively it is copied behind the arena)."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Softmax", ["m"], ["y"])]
    _check(_model(nodes, {"x": [64, 512]}, ["y"], [("w", _w(512, 8))]), {"x": _w(64, 512)})


def _pinned_blocks(backend):
    gc.collect()
    with backend._lock:
        backend._reclaim()
    return len(backend._pinned)


def test_dropped_sessions_free_their_pinned_constants():
    backend = wasm_ep.wasm_runtime.load()[0]
    nodes, inits = _mlp()
    data = _model(nodes, {"x": [4, 64]}, ["y"], inits)
    before = _pinned_blocks(backend)
    sess = _session(data)
    sess.run(None, {"x": _w(4, 64)})
    assert _pinned_blocks(backend) > before
    del sess
    assert _pinned_blocks(backend) == before


def test_sizes_past_int32_are_left_to_the_kernels():
    """A declared dim of 2**31 (seed 19's mutant 69285): ox_binary's int32 plan cannot hold it, so the chain declines
    (it raised a raw OverflowError at session creation) and the run reports the feed's shape as the CPU EP does."""
    big = [2, 2 ** 31, 3, 8]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "r"], ["s"]),
             helper.make_node("Add", ["s", "b"], ["y"])]
    data = _model(nodes, {"x": big}, ["y"], [("b", _w(8))])
    feeds = {"x": _w(2, 4, 3, 8)}
    for ep in (WASM, "CPUExecutionProvider"):
        with pytest.raises(onnxide.InvalidArgument, match="index: 1 Got: 4 Expected: 2147483648"):
            onnxide.InferenceSession(data, providers=[ep]).run(None, feeds)


@pytest.mark.parametrize("zero_point,bias,per_column", [(False, False, False), (True, True, True),
                                                        (True, False, True), (False, True, False)])
def test_dynamic_quantize_matmul_in_a_chain(monkeypatch, zero_point, bias, per_column):
    """com.microsoft DynamicQuantizeMatMul lowered into a chain with its neighbours: the numpy kernels' bits (its
    quantization and int8 GEMM are exact, Add and Relu too); a NaN in x reruns the chain with the steps' own
    kernels, as the per-node kernel hands NaN to the numpy one."""
    from onnxide.plan import chains
    k, n = 48, 40
    inits = [("B", rng.integers(-128, 128, (k, n)).astype(np.int8)),
             ("bs", (rng.random(n if per_column else 1) * 0.01).astype(np.float32)),
             ("bz", rng.integers(-5, 5, n).astype(np.int8)), ("bias", _w(n)), ("c", _w(n))]
    ins = ["x", "B", "bs", "bz" if zero_point else "", "bias" if bias else ""]
    while not ins[-1]:
        ins.pop()
    model = _model([helper.make_node("DynamicQuantizeMatMul", ins, ["y"], domain="com.microsoft"),
                    helper.make_node("Add", ["y", "c"], ["z"]), helper.make_node("Relu", ["z"], ["out"])],
                   {"x": [2, 7, k]}, ["out"], inits)
    x = rng.standard_normal((2, 7, k)).astype(np.float32)
    cpu = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"])
    sess = onnxide.InferenceSession(model, providers=[WASM, "CPUExecutionProvider"])
    [step] = sess._executor.main_plan.steps
    assert step.node.op_type == "WasmChain" and step.kernel.steps[0].node.op_type == "DynamicQuantizeMatMul"
    for _ in range(2):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0])
    stepwise = []
    real = chains.Chain.stepwise
    monkeypatch.setattr(chains.Chain, "stepwise", lambda self, inputs: stepwise.append(1) or real(self, inputs))
    x[0, 0, 0] = np.nan
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0])
    assert stepwise


@pytest.mark.parametrize("zero_point,per_column", [(False, False), (True, True)])
def test_dynamic_quantize_matmul_readers_of_one_x_quantize_it_once(zero_point, per_column):
    """Three DynamicQuantizeMatMul of one x (attention's Q, K, V projections) and their sum in one chain: one "dq"
    instruction quantizes x, each GEMM is a "qgemm" reading it; the numpy kernels' bits."""
    from onnxide.eps.wasm_chain import OPS
    k, n = 40, 24
    nodes, inits = dq_matmul_readers(rng, _w, k, n, zero_point, per_column)
    nodes += [helper.make_node("Add", ["y0", "y1"], ["s"]), helper.make_node("Add", ["s", "y2"], ["out"])]
    model = _model(nodes, {"x": [2, 7, k]}, ["out"], inits)
    x = rng.standard_normal((2, 7, k)).astype(np.float32) * 3
    cpu = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"])
    sess = onnxide.InferenceSession(model, providers=[WASM, "CPUExecutionProvider"])
    for _ in range(2):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], cpu.run(None, {"x": x})[0])
    [step] = sess._executor.main_plan.steps
    names = {code: name for name, code in OPS.items()}
    progs = [p for p in step.kernel.programs.values() if p is not None]
    assert progs and all(sorted(names[int(op)] for op in p.code[:p.n, 0]) == ["binary"] * 2 + ["dq"] + ["qgemm"] * 3
                         for p in progs)


@pytest.mark.parametrize("with_bias,with_state", [(True, True), (False, False)])
def test_lstm_in_a_chain(with_bias, with_state):
    """The plain forward LSTM lowered into a chain between a MatMul and a Relu (input projection on the packed GEMM,
    ox_lstm's recurrence), Y_h and Y_c read after the chain: the CPU EP's results."""
    t, batch, i, h = 5, 2, 12, 6
    inits = [("m", _w(10, i)), ("W", _w(1, 4 * h, i)), ("R", _w(1, 4 * h, h)), ("B", _w(1, 8 * h))]
    states = ["h0", "c0"] if with_state else []
    lstm_in = ["p", "W", "R", "B" if with_bias else "", ""] + states
    while not lstm_in[-1]:
        lstm_in.pop()
    model = _model([helper.make_node("MatMul", ["x", "m"], ["p"]),
                    helper.make_node("LSTM", lstm_in, ["Y", "Yh", "Yc"], hidden_size=h),
                    helper.make_node("Relu", ["Y"], ["out"])],
                   {"x": [t, batch, 10], **{k: [1, batch, h] for k in states}}, ["out", "Yh", "Yc"], inits)
    feeds = {"x": _w(t, batch, 10, scale=1.0), **{k: _w(1, batch, h, scale=1.0) for k in states}}
    want = onnxide.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    sess = onnxide.InferenceSession(model, providers=[WASM, "CPUExecutionProvider"])
    [step] = sess._executor.main_plan.steps
    assert step.node.op_type == "WasmChain" and [s.node.op_type for s in step.kernel.steps] == ["MatMul", "LSTM",
                                                                                                   "Relu"]
    for _ in range(2):
        for got, w in zip(sess.run(None, feeds), want):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
