"""The onnxruntime-compatible Python API: introspection, feeds checking, errors, saving models ORT can load."""
import asyncio
import concurrent.futures

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort


def _model(opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 0.25], np.float32), "b")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]),
                           helper.make_node("Add", ["h", "b"], ["y"])], "g", [x], [y], [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="test")


def test_ort_style_script_runs_unchanged():
    m = _model()
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    (i,) = sess.get_inputs()
    assert (i.name, i.type, i.shape) == ("x", "tensor(float)", ["batch", 4])
    (o,) = sess.get_outputs()
    assert (o.name, o.type, o.shape) == ("y", "tensor(float)", ["batch", 3])
    x = np.random.default_rng(0).random((2, 4), dtype=np.float32)
    (got,) = sess.run(None, {"x": x})
    ref = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert sess.run(["y"], {"x": x})[0].shape == (2, 3)
    assert sess.get_modelmeta().producer_name == "test"
    assert "CPUExecutionProvider" in ort.get_available_providers()
    assert ort.get_device() == "CPU"


def test_load_from_path_and_file_object(tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save(_model(), str(p))
    x = np.ones((1, 4), np.float32)
    a = ort.InferenceSession(str(p)).run(None, {"x": x})[0]
    with open(p, "rb") as f:
        b = ort.InferenceSession(f).run(None, {"x": x})[0]
    np.testing.assert_array_equal(a, b)


def test_saved_model_loads_in_onnxruntime_with_equal_outputs(tmp_path):
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    m = _model()
    ort.InferenceSession(m.SerializeToString(), so)
    onnx.checker.check_model(onnx.load(so.optimized_model_filepath))
    x = np.random.default_rng(1).random((3, 4), dtype=np.float32)
    a = onnxruntime.InferenceSession(so.optimized_model_filepath).run(None, {"x": x})[0]
    b = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("feed, exc, text", [
    ({"x": np.ones((2, 4), np.float64)}, ort.InvalidArgument, "Unexpected input data type"),
    ({"x": np.ones((2, 4, 1), np.float32)}, ort.InvalidArgument, "Invalid rank for input: x"),
    ({"x": np.ones((2, 5), np.float32)}, ort.InvalidArgument, "invalid dimensions for input: x"),
    ({}, ValueError, "Required inputs (['x']) are missing"),  # a ValueError, as onnxruntime's (an onnxide error too)
    ({"x": np.ones((2, 4), np.float32), "z": np.ones(1)}, ort.InvalidArgument, "Invalid input name: z"),
])
def test_wrong_feeds_give_one_line_errors(feed, exc, text):
    sess = ort.InferenceSession(_model().SerializeToString())
    with pytest.raises(exc) as e:
        sess.run(None, feed)
    assert text in str(e.value) and "\n" not in str(e.value)


def test_unknown_output_name():
    sess = ort.InferenceSession(_model().SerializeToString())
    with pytest.raises(ort.InvalidArgument, match="Invalid output name: nope"):
        sess.run(["nope"], {"x": np.ones((1, 4), np.float32)})


def test_bad_models_give_one_line_errors(tmp_path):
    data = _model().SerializeToString()
    cases = [(data[: len(data) // 2], ort.InvalidProtobuf), (bytes(np.random.default_rng(3).integers(
        0, 256, 500, dtype=np.uint8)), ort.InvalidProtobuf), (b"", ort.InvalidProtobuf)]
    m = _model()
    del m.graph.initializer[0]
    cases.append((m.SerializeToString(), ort.InvalidGraph))
    m = _model()
    m.graph.node[0].op_type = "NoSuchOp"
    cases.append((m.SerializeToString(), ort.InvalidGraph))  # (onnxruntime: "No Op registered for NoSuchOp ...")
    for bad, exc in cases:
        with pytest.raises(exc) as e:
            ort.InferenceSession(bad)
        assert "\n" not in str(e.value) and str(e.value)
    with pytest.raises(ort.NoSuchFile):
        ort.InferenceSession(str(tmp_path / "missing.onnx"))


def test_every_truncation_of_a_model_fails_cleanly():
    data = _model().SerializeToString()
    refused = 0
    for n in range(0, len(data), 7):
        try:
            ort.InferenceSession(data[:n])
        except ort.errors.OnnxideError as e:  # any other exception fails the test
            assert str(e) and "\n" not in str(e)
            refused += 1
    assert refused >= len(range(0, len(data), 7)) // 2  # most prefixes are not a loadable model


def test_session_options_names():
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.intra_op_num_threads = 2
    so.add_session_config_entry("session.x", "1")
    assert so.get_session_config_entry("session.x") == "1"
    assert ort.GraphOptimizationLevel.ORT_ENABLE_ALL == 99
    ort.InferenceSession(_model().SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((1, 4), np.float32)}, ort.RunOptions())


def test_free_dimension_overrides_fix_input_dims():
    m = _model()
    x = np.random.default_rng(1).random((2, 4), dtype=np.float32)
    ref = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    for how in ("name", "denotation"):
        model = _model()
        if how == "denotation":
            model.graph.input[0].type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
        so = ort.SessionOptions()
        getattr(so, f"add_free_dimension_override_by_{how}")("batch" if how == "name" else "DATA_BATCH", 2)
        sess = ort.InferenceSession(model.SerializeToString(), so)
        assert sess.get_inputs()[0].shape == [2, 4]
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref, rtol=1e-6)
        with pytest.raises(ort.InvalidArgument, match="index: 0 Got: 3 Expected: 2"):
            sess.run(None, {"x": np.zeros((3, 4), np.float32)})


def test_cpu_mem_arena_keeps_freed_blocks_for_the_next_run():
    """With the arena (the default) a freed multi-MB block is reused without page faults (Linux / glibc)."""
    resource = pytest.importorskip("resource")
    from onnxide.runtime import memory
    ort.InferenceSession(_model().SerializeToString())  # enable_cpu_mem_arena defaults to True
    if not memory.keep_freed_memory():
        pytest.skip("not glibc: the arena policy does not apply here")

    def run_like():  # three 16 MB activations alive at once, then freed (glibc's default trims them away)
        blocks = [np.ones(4 << 20, np.float32) for _ in range(3)]
        del blocks

    for _ in range(2):
        run_like()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        run_like()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 100  # ~5000 without the policy


def _shape_if_model():
    """y = squeeze(x, 0) * 2 when x's batch dim is 1, else x * 2 flattened: an If on a symbolic dim (silero VAD's
    pattern)."""
    then_g = helper.make_graph([helper.make_node("Squeeze", ["x", "zero"], ["sq"])], "t", [],
                               [helper.make_tensor_value_info("sq", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Reshape", ["x", "flat"], ["fl"])], "e", [],
                               [helper.make_tensor_value_info("fl", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["shp"]), helper.make_node("Gather", ["shp", "zero"], ["d0"]),
             helper.make_node("Equal", ["d0", "one"], ["is1"]),
             helper.make_node("If", ["is1"], ["picked"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Add", ["picked", "picked"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([0], np.int64), "zero"),
                           numpy_helper.from_array(np.array([1], np.int64), "one"),
                           numpy_helper.from_array(np.array([-1], np.int64), "flat")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_recurring_input_shapes_get_a_specialized_executor():
    m = _shape_if_model()
    sess = ort.InferenceSession(m.SerializeToString())
    ref = onnxruntime.InferenceSession(m.SerializeToString())
    rng = np.random.default_rng(3)
    for batch in (1, 1, 1, 2, 2, 2, 1):
        x = rng.standard_normal((batch, 3)).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-6)
    executors = sess._specialized._executors
    assert len(executors) == 2 and all(e is not None for e in executors.values())  # one per batch size, both seen twice
    for key, ex in executors.items():
        ops = [n.op_type for n in ex.model.graph.nodes]
        assert "If" not in ops and "Shape" not in ops, (key, ops)  # the shape test folded, the branch inlined
    assert [n.op_type for n in sess._model.graph.nodes] == ["Shape", "Gather", "Equal", "If", "Add"]  # general
    assert sess.get_inputs()[0].shape == ["batch", 3]
    key, ex = next(iter(executors.items()))  # a specialized executor that fails hands its shapes back for good

    def broken(*_):
        raise ort.RuntimeException("boom")
    ex.run = broken
    x = rng.standard_normal(key[0][1]).astype(np.float32)  # (the key: (name, shape, value) per input)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-6)
    assert executors[key] is None
    key, ex = next((k, e) for k, e in executors.items() if e is not None)  # the same through run_async

    async def broken_async(*_):
        raise ort.RuntimeException("boom")
    ex.run_async = broken_async
    x = rng.standard_normal(key[0][1]).astype(np.float32)  # (the key: (name, shape, value) per input)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a thread of its own: pytest may run a loop here
        got = pool.submit(asyncio.run, sess.run_async(None, {"x": x})).result()[0]
    np.testing.assert_allclose(got, ref.run(None, {"x": x})[0], rtol=1e-6)
    assert executors[key] is None
    no_if = ort.InferenceSession(_model().SerializeToString(), providers=["CPUExecutionProvider"])
    assert no_if._specialized is None  # nothing to fold: no second optimization
    if "NativeCPUExecutionProvider" in ort.get_available_providers():  # (whose chains need every shape fixed)
        assert ort.InferenceSession(_model().SerializeToString())._specialized is not None


def test_a_scalar_input_deciding_an_if_is_specialized_by_value():
    """An If on a scalar int input (silero VAD's sample rate): each recurring value gets an executor whose model
    takes it as a constant, so the branch is inlined; other values, and values alternating, give onnxruntime's
    results."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "t", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "three"], ["e"])], "e", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                       helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(16000, np.int64), "rate"),
                           numpy_helper.from_array(np.array(2, np.float32), "two"),
                           numpy_helper.from_array(np.array(3, np.float32), "three")])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    sess, ref = ort.InferenceSession(data), onnxruntime.InferenceSession(data)
    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    for rate in (16000, 16000, 8000, 8000, 16000, 8000, 44100):
        feeds = {"x": x, "sr": np.array(rate, np.int64)}
        np.testing.assert_array_equal(sess.run(None, feeds)[0], ref.run(None, feeds)[0])
    executors = sess._specialized._executors
    assert sorted(value for key in executors for name, _, value in key if name == "sr") == [8000, 16000]
    for ex in executors.values():
        assert [n.op_type for n in ex.model.graph.nodes] == ["Mul"], [n.op_type for n in ex.model.graph.nodes]
    assert [n.op_type for n in sess._model.graph.nodes] == ["Equal", "If"]  # the general model keeps its If


def test_inferred_output_shapes_match_what_runs_produce():
    """Pad / Slice (edge clamps included) / LSTM shapes inferred from static inputs equal the computed ones (shape
    specialization folds on them)."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], mode="reflect"),
             helper.make_node("Slice", ["x", "s1", "e1", "a1", "st1"], ["rev"]),     # start below -d, step -1
             helper.make_node("Slice", ["x", "s2", "e2", "a2"], ["mid"]),
             helper.make_node("LSTM", ["seq", "W", "R"], ["Y", "Yh", "Yc"], hidden_size=5)]
    inits = [i64("pads", [0, 2, 0, 1]), i64("s1", [-10]), i64("e1", [-20]), i64("a1", [1]), i64("st1", [-1]),
             i64("s2", [1, -3]), i64("e2", [100, -1]), i64("a2", [0, 1]),
             numpy_helper.from_array(np.ones((1, 20, 3), np.float32), "W"),
             numpy_helper.from_array(np.ones((1, 20, 5), np.float32), "R")]
    outs = ["padded", "rev", "mid", "Y", "Yh", "Yc"]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6]),
                                       helper.make_tensor_value_info("seq", TensorProto.FLOAT, [4, 2, 3])],
                          [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    sess = ort.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString())
    got = sess.run(None, {"x": np.ones((3, 6), np.float32), "seq": np.ones((4, 2, 3), np.float32)})
    assert [o.shape for o in sess.get_outputs()] == [list(v.shape) for v in got]


def test_io_binding_and_ort_values():
    sess = ort.InferenceSession(_model().SerializeToString())
    x = np.random.default_rng(2).random((2, 4), dtype=np.float32)
    expected = sess.run(None, {"x": x})[0]
    b = sess.io_binding()
    b.bind_cpu_input("x", x)
    b.bind_output("y")
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], expected)
    out = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    b.bind_ortvalue_output("y", out)
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(out.numpy(), expected)
    (v,) = sess.run_with_ort_values(["y"], {"x": ort.OrtValue.ortvalue_from_numpy(x)})
    assert v.shape() == [2, 3] and v.data_type() == "tensor(float)"
    np.testing.assert_array_equal(v.numpy(), expected)


def test_local_functions_are_inlined_with_attribute_references():
    body = [helper.make_node("Constant", [], ["k"], value_float=0.0),
            helper.make_node("LeakyRelu", ["a"], ["r"], alpha=0.0),
            helper.make_node("Mul", ["r", "s"], ["out"])]
    body[1].attribute[0].ref_attr_name = "slope"
    fn = helper.make_function("local", "ScaledLeaky", ["a", "s"], ["out"], body,
                              [helper.make_opsetid("", 17)], attributes=["slope"])
    nodes = [helper.make_node("ScaledLeaky", ["x", "two"], ["y"], domain="local", slope=0.3)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])],
                          [numpy_helper.from_array(np.float32(2), "two")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                          functions=[fn])
    x = np.linspace(-2, 2, 5).astype(np.float32)
    got = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    ref = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_overridable_initializers_can_be_fed():
    m = _model()
    m.graph.input.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]))
    sess = ort.InferenceSession(m.SerializeToString())
    assert [i.name for i in sess.get_inputs()] == ["x"]
    assert [(i.name, i.type, i.shape) for i in sess.get_overridable_initializers()] == [("b", "tensor(float)", [3])]
    x = np.zeros((1, 4), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], [[0.5, -0.5, 0.25]])
    np.testing.assert_array_equal(sess.run(None, {"x": x, "b": np.ones(3, np.float32)})[0], [[1, 1, 1]])


def test_run_async_with_callback_like_onnxruntime():
    sess = ort.InferenceSession(_model().SerializeToString())
    seen = []
    sess.run_async(None, {"x": np.ones((1, 4), np.float32)}, lambda res, data, err: seen.append((res, data, err)), 7)
    (res, data, err), = seen
    assert data == 7 and err == "" and res[0].shape == (1, 3)


def test_corrupted_models_fail_with_onnxide_errors_only():
    from onnxide.demo import default_model_bytes

    rng = np.random.default_rng(0)
    for data in (default_model_bytes(), _model().SerializeToString()):
        for _ in range(150):
            d = bytearray(data)
            for _ in range(int(rng.integers(1, 6))):
                d[int(rng.integers(0, len(d)))] = int(rng.integers(0, 256))
            try:
                sess = ort.InferenceSession(bytes(d))
            except ort.errors.OnnxideError as e:
                assert str(e) and "\n" not in str(e)
                continue
            feeds = {}
            for a in sess.get_inputs():
                if a.type != "tensor(float)" or a.shape is None:
                    feeds = None
                    break
                feeds[a.name] = np.ones([d if isinstance(d, int) else 1 for d in a.shape], np.float32)
            if feeds is not None:
                try:
                    sess.run(None, feeds)
                except ort.errors.OnnxideError as e:
                    assert str(e) and "\n" not in str(e)


def test_output_shapes_are_merged_with_inference_as_onnxruntime_does():
    """An output declared without a shape, or with unknown dims, reads as inference finds it; a declared name stays."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", None, 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Shape", ["x"], ["z"]),
                           helper.make_node("Relu", ["x"], ["w"])], "g", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("z", TensorProto.INT64, [None]),
                           helper.make_tensor_value_info("w", TensorProto.FLOAT, ["m", "k", None])])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    want = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).get_outputs()
    got = ort.InferenceSession(data).get_outputs()
    assert [(a.name, a.type, a.shape) for a in got] == [(a.name, a.type, a.shape) for a in want]


def _folding_model(n=64):
    """y = x @ W1 @ (W2 + W3) with a symbolic batch: W1 is read as it is (shared by every executor of the session),
    W2 + W3 folds into a new array (each executor's own)."""
    rng = np.random.default_rng(8)
    w1, w2, w3 = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(3))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["w2", "w3"], ["w23"]),
             helper.make_node("MatMul", ["h", "w23"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, name) for w, name in ((w1, "w1"), (w2, "w2"), (w3, "w3"))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(), w2.nbytes


@pytest.mark.skipif("NativeCPUExecutionProvider" not in ort.get_available_providers(),
                    reason="specialized for the native EP's chains (native CPU kernels not built)")
@pytest.mark.parametrize("room", [0, -1])  # the folded transpose just fits / just does not
def test_a_specialized_executor_is_bounded_by_its_own_constants(monkeypatch, room):
    """What a specialized executor adds is its folded constants, not the weights it shares with the general one
    (views of the model's bytes, or the loader's aligned copies of them): it is kept while those fit MAX_OWN_BYTES, else dropped, and no other shapes are
    tried; the results are onnxruntime's either way."""
    from onnxide.runtime import specialize
    data, folded = _folding_model()
    sess, ref = ort.InferenceSession(data), onnxruntime.InferenceSession(data)
    own = None
    for batch in (3, 3, 3, 5, 5):
        if batch == 5 and own is None:
            ex = next(iter(sess._specialized._executors.values()))
            own = specialize.own_constant_bytes(ex, sess._executor)
            assert own == folded  # (W1, W2, W3: views of the model's bytes or copies shared with the general one)
            monkeypatch.setattr(specialize, "MAX_OWN_BYTES", own + room)
            sess = ort.InferenceSession(data)
            for _ in range(2):
                sess.run(None, {"x": np.ones((3, 64), np.float32)})
        x = np.random.default_rng(batch).standard_normal((batch, 64)).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    kept = [e is not None for e in sess._specialized._executors.values()]
    assert kept == ([True, True] if room == 0 else [False])
