"""Models of seed 19's fuzzing chunks that onnxide ran and onnxruntime refuses where the spec or onnx's checker does too
(issue 19): each is refused on every EP here, as onnxruntime refuses it, and its valid neighbour still runs with
onnxruntime's outputs."""
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide
from fuzz.harness import INTERNAL
from onnxide.errors import OnnxideError

ort = pytest.importorskip("onnxruntime")
vi = helper.make_tensor_value_info
EPS = [p for p in ("CPUExecutionProvider", "NativeCPUExecutionProvider", "WasmExecutionProvider")
       if p in onnxide.get_available_providers()]
X3 = np.array([1.0, -2.0, 3.0], np.float32)


def _model(nodes, inputs, inits=(), opset=21, outputs=("y",), extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, [vi(o, T.FLOAT, None) for o in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(g, opset_imports=imports).SerializeToString()


def _branches(then_nodes, else_nodes):
    """An If on a constant true condition whose branches run these nodes (output t / e, read from x)."""
    then = helper.make_graph(then_nodes, "then", [], [vi("t", T.FLOAT, None)])
    other = helper.make_graph(else_nodes, "else", [], [vi("e", T.FLOAT, None)])
    return [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [("c", np.array(True))]


def _if_model(then_nodes, else_nodes):
    nodes, inits = _branches(then_nodes, else_nodes)
    return _model(nodes, [vi("x", T.FLOAT, [3])], inits)


def _tensor(dims, **fields):
    t = T()
    t.data_type, t.name = T.FLOAT, ""
    t.dims.extend(dims)
    for k, v in fields.items():
        getattr(t, k).extend(v)
    return t


def _slice(bad):
    ends = np.array([[2]] if bad else [2], np.int64)
    return _model([helper.make_node("Slice", ["x", "s", "e"], ["y"])], [vi("x", T.FLOAT, [3])],
                  [("s", np.array([0], np.int64)), ("e", ends)]), {"x": X3}


def _prelu(bad):
    slope = np.full((3,) if bad else (1, 3, 1), 0.5, np.float32)
    return _model([helper.make_node("PRelu", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [2, 3, 4])], [("s", slope)],
                  opset=16), {"x": np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)}


def _sum6(bad):
    return _model([helper.make_node("Sum", ["x", "z"], ["y"])], [vi("x", T.FLOAT, [3]), vi("z", T.FLOAT, [None])],
                  opset=6), {"x": X3, "z": np.ones(1 if bad else 3, np.float32)}


def _split(bad):
    return _model([helper.make_node("Split", ["x"], ["y", "b", "c", "d"], num_outputs=4)],
                  [vi("x", T.FLOAT, [None])], opset=18, outputs=("y", "b", "c", "d")), \
        {"x": np.arange(5 if bad else 4, dtype=np.float32)}


def _dropout(bad):
    nodes, inits = _branches([helper.make_node("Dropout", ["x", "r"], ["t"])], [helper.make_node("Neg", ["x"], ["e"])])
    return _model(nodes, [vi("x", T.FLOAT, [3]), vi("r", T.FLOAT, [])], inits), \
        {"x": X3, "r": np.array(-1.5 if bad else 0.25, np.float32)}


def _domain(bad):
    node = helper.make_node("Cos", ["x"], ["e"], domain="no.such.domain" if bad else "")
    return _if_model([helper.make_node("Cos", ["x"], ["t"])], [node]), {"x": X3}


def _unsorted_body(bad):
    late = [helper.make_node("Neg", ["u"], ["t"]), helper.make_node("Cos", ["x"], ["u"])]
    return _if_model(late if bad else late[::-1], [helper.make_node("Neg", ["x"], ["e"])]), {"x": X3}


def _tensor_attribute(bad):
    value = _tensor([1], float_data=[2.0], int64_data=[5]) if bad else _tensor([1], float_data=[2.0])
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["w"], value=value), helper.make_node("Add", ["x", "w"], ["y"])]
    return _model(nodes, [vi("x", T.FLOAT, [3])], [("s", np.array([3], np.int64))]), {"x": X3}


def _unnamed_output(bad):
    return _model([helper.make_node("Relu", ["x"], ["" if bad else "r"]), helper.make_node("Neg", ["x"], ["y"])],
                  [vi("x", T.FLOAT, [3])]), {"x": X3}


def _cast1(bad):
    node = helper.make_node("Cast", ["x"], ["y"])
    node.attribute.append(helper.make_attribute("to", 1 if bad else "FLOAT"))
    return _model([node], [vi("x", T.FLOAT, [3])], opset=5), {"x": X3}


def _deform_conv(bad):
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    offset = np.zeros((1, 8, 2 if bad else 4, 4), np.float32)
    return _model([helper.make_node("DeformConv", ["x", "w", "o"], ["y"], kernel_shape=[2, 2])],
                  [vi("x", T.FLOAT, [1, 1, 5, 5]), vi("o", T.FLOAT, list(offset.shape))],
                  [("w", np.ones((1, 1, 2, 2), np.float32))], opset=22), {"x": x, "o": offset}


def _qlinear_conv(bad):
    w_scale = np.array([[0.5]] if bad else [0.5], np.float32)
    inits = [("xs", np.array(0.1, np.float32)), ("xz", np.array(0, np.uint8)), ("w", np.full((1, 1, 1, 1), 2, np.uint8)),
             ("ws", w_scale), ("wz", np.array([0], np.uint8)), ("ys", np.array(0.2, np.float32)),
             ("yz", np.array(0, np.uint8))]
    g = helper.make_graph([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])], "g",
                          [vi("x", T.UINT8, [1, 1, 3, 3])], [vi("y", T.UINT8, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)]).SerializeToString()
    return model, {"x": np.arange(9, dtype=np.uint8).reshape(1, 1, 3, 3)}


def _string_normalizer(bad):
    g = helper.make_graph([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")], "g",
                          [vi("x", T.STRING, ["n", 2] if bad else [1, 2])], [vi("y", T.STRING, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)]).SerializeToString()
    return model, {"x": np.array([["a", "b"]], object)}


def _label_encoder(bad):
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                            values_int64s=[1, 2])
    g = helper.make_graph([node], "g", [vi("x", T.STRING, [2])], [vi("y", T.INT16 if bad else T.INT64, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 4)])
    return model.SerializeToString(), {"x": np.array(["a", "c"], object)}


def _rms_norm(bad):
    g = helper.make_graph([helper.make_node("RMSNormalization", ["x", "s"], ["y"])], "g",
                          [vi("x", T.FLOAT, [2, 3]), vi("s", T.DOUBLE if bad else T.FLOAT, [3])],
                          [vi("y", T.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]).SerializeToString()
    return model, {"x": np.ones((2, 3), np.float32), "s": np.ones(3, np.float64 if bad else np.float32)}


def _sequence_map(bad):
    body = helper.make_graph([helper.make_node("Identity", ["i"], ["o"])] +
                             ([helper.make_node("Neg", ["i"], ["o2"])] if bad else []), "b",
                             [vi("i", T.FLOAT, ["N"])], [vi("o", T.FLOAT, ["N"])] + ([vi("o2", T.FLOAT, ["N"])] * bad))
    seq = helper.make_tensor_sequence_value_info
    g = helper.make_graph([helper.make_node("SequenceMap", ["x"], ["y"], body=body)], "g",
                          [seq("x", T.FLOAT, ["N"])], [seq("y", T.FLOAT, ["N"])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    return model, {"x": [X3, X3]}


def _dft(bad):
    x = np.random.default_rng(1).random((1, 8, 2 if bad else 1), np.float32)
    return _model([helper.make_node("DFT", ["x"], ["y"], onesided=1)], [vi("x", T.FLOAT, list(x.shape))],
                  opset=20), {"x": x}


def _lppool(bad):
    x = np.random.default_rng(2).random((1, 1, 5, 5), np.float32)
    return _model([helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[3 if bad else 2, 1, 1, 1])],
                  [vi("x", T.FLOAT, [1, 1, 5, 5])], opset=18), {"x": x}


def _tfidf(bad):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1,
                            max_gram_length=2 if bad else 1, max_skip_count=0, ngram_counts=[0], ngram_indexes=[0, 1],
                            pool_int64s=[2, 3])
    g = helper.make_graph([node], "g", [vi("x", T.INT64, [4])], [vi("y", T.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]).SerializeToString()
    return model, {"x": np.array([1, 2, 3, 2], np.int64)}


def _loop_condition(bad):
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Add", ["v", "v"], ["vo"])],
                             "b", [vi("i", T.INT64, []), vi("c", T.BOOL, [1] if bad else []), vi("v", T.FLOAT, [3])],
                             [vi("co", T.BOOL, None), vi("vo", T.FLOAT, None)])
    return _model([helper.make_node("Loop", ["M", "C", "x"], ["y"], body=body)], [vi("x", T.FLOAT, [3])],
                  [("M", np.array(3, np.int64)), ("C", np.array(True))]), {"x": X3}


def _optional_feed(bad):
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(T.FLOAT, [3])))
    g = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["y"])], "g", [opt], [vi("y", T.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()
    return model, {"o": X3.reshape(1, 3) if bad else X3}


def _resize_sizes_and_scales(bad):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    inputs = ["x", "", "s", "z"] if bad else ["x", "", "", "z"]
    return _model([helper.make_node("Resize", inputs, ["y"], mode="nearest")], [vi("x", T.FLOAT, [1, 1, 4, 4])],
                  [("s", np.ones(4, np.float32)), ("z", np.array([1, 1, 2, 2], np.int64))], opset=19), {"x": x}


def _array_feature_extractor(bad):
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")
    g = helper.make_graph([node], "g", [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, None)],
                          [numpy_helper.from_array(np.array([], np.int64) if bad else np.array([2, 0], np.int64), "i")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 3)])
    return model.SerializeToString(), {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}


CASES = {  # name -> model builder (bad: the refused form; else its valid neighbour)
    "Slice ends of rank 2": _slice,
    "PRelu slope growing X (opset 16)": _prelu,
    "Sum-6 of different shapes": _sum6,
    "Split num_outputs leaving a negative last chunk": _split,
    "Dropout ratio out of [0, 1) in an If branch": _dropout,
    "a node of a domain not imported, in an untaken branch": _domain,
    "a body not topologically sorted": _unsorted_body,
    "ConstantOfShape value with two data fields": _tensor_attribute,
    "a required output left unnamed": _unnamed_output,
    "Cast-1 with an integer 'to'": _cast1,
    "DeformConv offset of other spatial dims than the output": _deform_conv,
    "QLinearConv w_scale of rank 2": _qlinear_conv,
    "StringNormalizer X of [n, C]": _string_normalizer,
    "LabelEncoder output declared int16 for int64 values": _label_encoder,
    "RMSNormalization Y declared as X's type, not the scale's": _rms_norm,
    "SequenceMap body with more outputs than the node": _sequence_map,
    "one-sided DFT of complex input": _dft,
    "LpPool pads not smaller than the kernel": _lppool,
    "TfIdfVectorizer max_gram_length past ngram_counts": _tfidf,
    "Loop body condition of another rank than the node's": _loop_condition,
    "optional tensor fed with another rank": _optional_feed,
    "Resize with sizes and scales": _resize_sizes_and_scales,
    "ArrayFeatureExtractor of no indices": _array_feature_extractor,
}


def _rms(x, s, eps=1e-5):
    return x / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + eps) * s


# valid neighbours onnxruntime 1.32 cannot run itself (its gaps), with the spec's result
REFERENCE = {"Cast-1 with an integer 'to'": lambda f: [f["x"]],
             "RMSNormalization Y declared as X's type, not the scale's": lambda f: [_rms(f["x"], f["s"])],
             "StringNormalizer X of [n, C]": lambda f: [np.array([["A", "B"]], object)]}  # (no en_US locale here)


def _ort(model, feeds):
    try:
        return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception as e:  # noqa: BLE001 (any onnxruntime refusal)
        return e


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("ep", EPS)
def test_refused_as_onnxruntime_refuses(name, ep):
    model, feeds = CASES[name](True)
    assert isinstance(_ort(model, feeds), Exception), "onnxruntime runs it: not a refusal to copy"
    with pytest.raises(OnnxideError) as err:
        onnxide.InferenceSession(model, providers=[ep]).run(None, feeds)
    assert not INTERNAL.search(str(err.value)), str(err.value)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("ep", EPS)
def test_valid_neighbour_runs_as_onnxruntime(name, ep):
    model, feeds = CASES[name](False)
    want = REFERENCE[name](feeds) if name in REFERENCE else _ort(model, feeds)
    assert not isinstance(want, Exception), want
    got = onnxide.InferenceSession(model, providers=[ep]).run(None, feeds)
    for g, w in zip(got, want):
        if isinstance(w, list):
            for a, b in zip(g, w):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        elif w.dtype == object:
            assert g.tolist() == w.tolist()
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ep", EPS)
def test_chain_sizes_past_the_interpreters_words_are_left_to_the_kernels(ep):
    """A declared dim of 2**40 (seed 19's mutants 58289, 72049, 85228): the chain's arena offsets and sizes do not fit
    the interpreter's int64 (native) / int32 (WASM) words, so the chain declines (it raised a raw OverflowError at
    session creation) and the run reports the feed's shape as the CPU EP does."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "r"], ["s"]),
             helper.make_node("Add", ["s", "r"], ["t"]), helper.make_node("Sigmoid", ["t"], ["y"])]
    data = _model(nodes, [vi("x", T.FLOAT, [2 ** 40, 2 ** 30, 8])])
    with pytest.raises(onnxide.InvalidArgument, match="Expected: 1099511627776"):
        onnxide.InferenceSession(data, providers=[ep]).run(None, {"x": np.ones((2, 4, 8), np.float32)})


def _window_of_one():
    g = helper.make_graph([helper.make_node("HannWindow", ["n"], ["y"], periodic=0)], "g", [vi("n", T.INT32, [])],
                          [vi("y", T.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(), \
        {"n": np.array(1, np.int32)}


def _split_empty_to_sequence():
    nodes = [helper.make_node("SplitToSequence", ["x", "s"], ["q"]), helper.make_node("SequenceLength", ["q"], ["y"])]
    g = helper.make_graph(nodes, "g", [vi("x", T.FLOAT, [None])], [vi("y", T.INT64, None)],
                          [numpy_helper.from_array(np.array(3, np.int64), "s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)]).SerializeToString(), \
        {"x": np.zeros(0, np.float32)}


@pytest.mark.parametrize("build", [_window_of_one, _split_empty_to_sequence], ids=lambda f: f.__name__)
@pytest.mark.parametrize("ep", EPS)
def test_outputs_onnxruntime_and_the_spec_give(build, ep):
    """Where seed 19's outputs differed and onnxruntime agreed with onnx's reference: a symmetric window of size 1 is
    0 / 0 (NaN; onnxide gave 1), an empty axis splits into no chunks (onnxide gave one empty chunk)."""
    model, feeds = build()
    want = _ort(model, feeds)
    got = onnxide.InferenceSession(model, providers=[ep]).run(None, feeds)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("ep", EPS)
def test_reshape_target_known_only_at_run_time_is_checked(ep):
    """Seed 19's mutant 10359: a Reshape target built from another tensor's shape (Shape → Gather → Concat) of an entry
    inference does not know was rewritten as a constant with -1, so a reshape to a wrong size succeeded; the node keeps
    its target now (the -1 form only guides the attention fusion) and fails as onnxruntime's."""
    nodes = [helper.make_node("Shape", ["q"], ["qs"], start=0, end=1), helper.make_node("Shape", ["x"], ["xs"], start=1),
             helper.make_node("Concat", ["qs", "xs"], ["t"], axis=0), helper.make_node("Reshape", ["x", "t"], ["y"])]
    model = _model(nodes, [vi("x", T.FLOAT, [None, 4]), vi("q", T.FLOAT, [None, 2])])
    feeds = {"x": np.ones((2, 4), np.float32), "q": np.ones((1, 2), np.float32)}
    assert isinstance(_ort(model, feeds), Exception)
    with pytest.raises(OnnxideError, match="cannot reshape"):
        onnxide.InferenceSession(model, providers=[ep]).run(None, feeds)
    feeds["q"] = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(onnxide.InferenceSession(model, providers=[ep]).run(None, feeds)[0], feeds["x"])


@pytest.mark.parametrize("ep", EPS + [p for p in ("WebGpuExecutionProvider",) if p in onnxide.get_available_providers()])
def test_prelu_slope_is_checked_before_any_eps_kernel(ep):
    """The PRelu slope rule is a step input guard (ops.validate.INPUT_RELATIONS), so an EP with its own PRelu kernel
    (WebGPU) refuses a slope that grows X as the CPU EP does."""
    model, feeds = _prelu(True)
    with pytest.raises(onnxide.Fail, match="not unidirectionally broadcastable"):
        onnxide.InferenceSession(model, providers=[ep]).run(None, feeds)
