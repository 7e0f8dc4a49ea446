"""Regression tests for what the fuzzing campaign (tests/fuzz/) and issue 19's probes found: each invalid model is
refused with an onnxide error on every EP (the native EP's depthwise conv once segfaulted or read outside its
buffers), each valid corner case runs there as on the CPU EP."""
import os

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide
from fuzz.harness import INTERNAL
from onnxide.errors import OnnxideError

vi = helper.make_tensor_value_info
EPS = [p for p in ("CPUExecutionProvider", "NativeCPUExecutionProvider", "WasmExecutionProvider")
       if p in onnxide.get_available_providers()]


def _model(node, x_shape, inits=(), opset=17, outputs=1):
    g = helper.make_graph([node], "g", [vi("x", T.FLOAT, list(x_shape))],
                          [helper.ValueInfoProto(name=o) for o in node.output[:outputs]],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _session(data, ep, threads=2):
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    return onnxide.InferenceSession(data, so, providers=[ep])


def _refused(data, x, ep, threads=2):
    """True when the model is refused with an onnxide error at creation or run (never a crash or an output)."""
    try:
        _session(data, ep, threads).run(None, {"x": x})
    except OnnxideError as e:
        assert not INTERNAL.search(str(e)), str(e)  # onnxide's own check, not a wrapped Python exception
        return True
    return False


DW = np.random.default_rng(0).standard_normal((1, 32, 24, 24)).astype(np.float32)
BAD_CONVS = {  # issue 19: the native EP's depthwise conv segfaulted or returned heap contents on these
    "kernel_shape 200x200 vs W 1x1, pads 100": (dict(group=32, kernel_shape=[200, 200], pads=[100] * 4), (32, 1, 1, 1)),
    "negative dilation": (dict(group=32, dilations=[-1, 1], pads=[1] * 4), (32, 1, 3, 3)),
    "zero dilation": (dict(group=32, dilations=[0, 0]), (32, 1, 3, 3)),
    "kernel_shape [0, 0]": (dict(group=32, kernel_shape=[0, 0]), (32, 1, 3, 3)),
    "kernel_shape [-1, 3]": (dict(group=32, kernel_shape=[-1, 3]), (32, 1, 3, 3)),
    "strides [0, 1] (was ZeroDivisionError)": (dict(group=32, strides=[0, 1]), (32, 1, 3, 3)),
    "negative pads": (dict(group=32, pads=[-2, 0, 0, 0]), (32, 1, 3, 3)),
    "group not dividing channels": (dict(group=5), (32, 1, 3, 3)),
}
BAD_POOLS = {
    "kernel_shape [0, 0]": dict(kernel_shape=[0, 0]),
    "kernel_shape [-1, 3]": dict(kernel_shape=[-1, 3]),
    "zero dilations": dict(kernel_shape=[3, 3], dilations=[0, 1]),
    "negative dilations": dict(kernel_shape=[3, 3], dilations=[-1, 1], pads=[1, 1, 1, 1]),
    "strides [0, 1]": dict(kernel_shape=[3, 3], strides=[0, 1]),
    "kernel larger than the padded input": dict(kernel_shape=[30, 30]),
    "negative pads": dict(kernel_shape=[3, 3], pads=[-1, 0, 0, 0]),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("case", sorted(BAD_CONVS))
def test_invalid_depthwise_conv_is_refused_on_every_ep(case, ep, threads):
    attrs, w_shape = BAD_CONVS[case]
    w = np.ones(w_shape, np.float32)
    data = _model(helper.make_node("Conv", ["x", "w"], ["y"], **attrs), DW.shape, [("w", w)])
    assert _refused(data, DW, ep, threads)


@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("case", sorted(BAD_POOLS))
def test_invalid_max_pool_is_refused_on_every_ep(case, ep):
    data = _model(helper.make_node("MaxPool", ["x"], ["y"], **BAD_POOLS[case]), DW.shape, opset=12)
    assert _refused(data, DW, ep)


@pytest.mark.parametrize("attr,value", [("dilations", 7), ("strides", [1.5, 1.0]), ("group", [1, 2]),
                                        ("kernel_shape", "x")])
def test_an_attribute_of_the_wrong_kind_is_refused_at_load(attr, value):
    node = helper.make_node("Conv", ["x", "w"], ["y"], **{attr: value})
    data = _model(node, DW.shape, [("w", np.ones((32, 32, 3, 3)))])
    for ep in EPS:
        with pytest.raises(onnxide.InvalidGraph, match=f"mismatched attribute type '{attr}'"):
            _session(data, ep)


@pytest.mark.parametrize("ep", EPS)
def test_a_huge_stride_over_a_single_window_runs_as_stride_one(ep):
    """strides 2^62 with one output position per axis: numpy built a view too big to exist, the native EP asked for
    2.75 TiB of scratch; onnxruntime runs it."""
    x = np.random.default_rng(1).standard_normal((1, 16, 20, 20)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((32, 16, 3, 3)).astype(np.float32)
    got = {}
    for strides in ([2**62, 2**62], [20, 20]):
        node = helper.make_node("Conv", ["x", "w"], ["y"], strides=strides, pads=[1, 1, 1, 1])
        got[strides[0]] = _session(_model(node, x.shape, [("w", w)]), ep).run(None, {"x": x})[0]
    assert got[2**62].shape == (1, 32, 1, 1)
    np.testing.assert_allclose(got[2**62], got[20], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("declared,want", [(["a", 3], (0, 2, 3)), ([2, 3], (0, 2, 3)), (None, (0, 2, 3))])
def test_a_loop_without_iterations_gives_scan_outputs_of_the_declared_rank(declared, want):
    """Was (0,): the rank is the body output's (its declared type, a symbolic dim taking the size inference finds,
    as onnxruntime merges them; an unknown dim is 0). The shapes are onnxruntime's."""
    s = vi("s", T.FLOAT, declared) if declared else helper.ValueInfoProto(name="s")
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Relu", ["x"], ["s"])],
                             "body", [vi("i", T.INT64, []), vi("c", T.BOOL, [])], [vi("c2", T.BOOL, []), s])
    g = helper.make_graph([helper.make_node("Loop", ["n", ""], ["y"], body=body)], "g",
                          [vi("x", T.FLOAT, [2, 3]), vi("n", T.INT64, [])], [vi("y", T.FLOAT, None)])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    for ep in EPS:
        y = _session(data, ep).run(None, {"x": np.ones((2, 3), np.float32), "n": np.array(0, np.int64)})[0]
        assert y.shape == want


def _graph(nodes, inputs, outputs, opset=22, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


@pytest.mark.parametrize("op", ["Softsign", "Selu", "Abs", "Relu"])
def test_a_string_input_to_a_numeric_op_is_refused_at_load(op):
    """Was TypeError from numpy inside the kernel at run: refused at load naming the op and input, as onnxruntime."""
    data = _graph([helper.make_node(op, ["x"], ["y"])], [vi("x", T.STRING, [2])], [vi("y", T.STRING, [2])])
    for ep in EPS:
        with pytest.raises(onnxide.InvalidGraph, match=rf"tensor\(string\).*\(x\) of operator \({op}\)"):
            _session(data, ep)


def test_string_inputs_still_run_where_the_spec_takes_them():
    data = _graph([helper.make_node("Identity", ["x"], ["t"]), helper.make_node("Equal", ["t", "x"], ["y"])],
                  [vi("x", T.STRING, [2])], [vi("y", T.BOOL, [2])], opset=19)
    for ep in EPS:
        assert _session(data, ep).run(None, {"x": np.array(["a", "b"], object)})[0].tolist() == [True, True]


@pytest.mark.parametrize("op,to", [("Cast", 0), ("Cast", 34), ("Cast", 1 << 62)])
def test_an_unknown_element_type_attribute_is_refused_at_load(op, to):
    """Was KeyError 'unknown ONNX element type' from the kernel at run."""
    data = _graph([helper.make_node(op, ["x"], ["y"], to=to)], [vi("x", T.FLOAT, [2])],
                  [helper.ValueInfoProto(name="y")])
    for ep in EPS:
        with pytest.raises(onnxide.Fail, match="attribute 'to' does not specify a valid element type"):
            _session(data, ep)


def test_gather_elements_indices_wider_than_data_are_refused():
    """Was IndexError from numpy: indices dims beyond data's (off the gather axis) read outside it."""
    data = _graph([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=0)],
                  [vi("x", T.FLOAT, [2, 2]), vi("i", T.INT64, [2, 3])], [vi("y", T.FLOAT, [2, 3])])
    for ep in EPS:
        with pytest.raises(onnxide.InvalidArgument, match="GatherElements.*exceeds data shape"):
            _session(data, ep).run(None, {"x": np.ones((2, 2), np.float32), "i": np.zeros((2, 3), np.int64)})


def test_concat_from_sequence_stacks_only_tensors_of_one_shape():
    """Was numpy's ValueError 'all input arrays must have the same shape'."""
    data = _graph([helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                   helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1)],
                  [vi("a", T.FLOAT, [2]), vi("b", T.FLOAT, [3])], [helper.ValueInfoProto(name="y")])
    for ep in EPS:
        with pytest.raises(onnxide.InvalidArgument, match="new_axis=1 needs tensors of one shape"):
            _session(data, ep).run(None, {"a": np.ones(2, np.float32), "b": np.ones(3, np.float32)})


def test_grid_sample_with_nan_coordinates_samples_nothing_there():
    """Was IndexError (a NaN coordinate cast to index -2^63): NaN positions give 0, the others their value."""
    data = _graph([helper.make_node("GridSample", ["x", "g"], ["y"], mode="cubic")],
                  [vi("x", T.FLOAT, [1, 1, 3, 2]), vi("g", T.FLOAT, [1, 1, 2, 2])], [vi("y", T.FLOAT, [1, 1, 1, 2])])
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 3, 2)
    g = np.array([[[[np.nan, 0.0], [0.0, 0.0]]]], np.float32)
    for ep in EPS:
        y = _session(data, ep).run(None, {"x": x, "g": g})[0]
        assert y[0, 0, 0, 0] == 0 and np.isfinite(y).all()


def test_attention_with_a_negative_scale_scales_the_scores():
    """Was NaN everywhere on the CPU and native EPs (sqrt(scale) applied to Q and K); onnxruntime scales the scores."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    data = _graph([helper.make_node("Attention", ["q", "k", "v"], ["y"], scale=-0.5)],
                  [vi(n, T.FLOAT, [1, 2, 3, 4]) for n in "qkv"], [vi("y", T.FLOAT, [1, 2, 3, 4])], opset=23)
    s = -0.5 * q @ np.swapaxes(k, -1, -2)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v
    for ep in EPS:
        np.testing.assert_allclose(_session(data, ep).run(None, {"q": q, "k": k, "v": v})[0], want, rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.parametrize("op", ["Gemm", "MatMul"])
def test_an_infinite_alpha_gives_infinities_on_every_ep(op):
    """The WASM EP's GEMM gave NaN for alpha=inf (inf * 0 in its partial sums): it leaves such nodes to the CPU EP."""
    node = helper.make_node("Gemm", ["x", "w"], ["y"], alpha=float("inf")) if op == "Gemm" else \
        helper.make_node("FusedMatMul", ["x", "w"], ["y"], domain="com.microsoft", alpha=float("inf"))
    x = np.random.default_rng(4).standard_normal((8, 8)).astype(np.float32)
    w = np.eye(8, dtype=np.float32)
    g = helper.make_graph([node], "g", [vi("x", T.FLOAT, [8, 8])], [vi("y", T.FLOAT, [8, 8])],
                          [numpy_helper.from_array(w, "w")])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    for ep in EPS:
        y = _session(data.SerializeToString(), ep).run(None, {"x": x})[0]
        assert np.array_equal(y, np.where(x > 0, np.inf, -np.inf)), ep


@pytest.mark.parametrize("op,dtype,opset", [("Neg", T.BOOL, 22), ("CumProd", T.COMPLEX64, 26),
                                            ("Relu", T.INT8, 14)])
def test_an_input_type_no_opset_of_the_op_takes_is_refused_at_load(op, dtype, opset):
    """Was a numpy TypeError at run (Neg of bool; Relu int8 is valid from opset 14 and runs)."""
    ins = ["x", "a"] if op == "CumProd" else ["x"]
    inputs = [vi("x", dtype, [3])] + ([vi("a", T.INT32, [])] if op == "CumProd" else [])
    data = _graph([helper.make_node(op, ins, ["y"])], inputs, [vi("y", dtype, [3])], opset=opset)
    for ep in EPS:
        if dtype == T.INT8:
            assert _session(data, ep).run(None, {"x": np.array([-1, 0, 2], np.int8)})[0].tolist() == [0, 0, 2]
            continue
        with pytest.raises(onnxide.InvalidGraph, match=rf"of operator \({op}\)"):
            _session(data, ep)


def test_the_schema_type_table_is_current():
    import subprocess
    import sys

    tool = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "gen_schema_types.py")
    assert subprocess.run([sys.executable, tool, "--check"]).returncode == 0, "run tools/gen_schema_types.py"


def test_sigmoid_of_a_scalar():
    """Was TypeError: a 0-d input made numpy return a scalar the kernel then wrote in place."""
    data = _graph([helper.make_node("Sigmoid", ["x"], ["y"])], [vi("x", T.FLOAT, [])], [vi("y", T.FLOAT, [])])
    for ep in EPS:
        y = _session(data, ep).run(None, {"x": np.array(0.0, np.float32)})[0]
        assert y.shape == () and y == 0.5


def _attention_refused(feeds, match, extra_inputs=()):
    names = ["q", "k", "v"] + list(extra_inputs)
    data = _graph([helper.make_node("Attention", names, ["y"])], [vi(n, T.FLOAT, None) for n in names],
                  [helper.ValueInfoProto(name="y")], opset=23)
    for ep in EPS:
        with pytest.raises(onnxide.InvalidArgument, match=match):
            _session(data, ep).run(None, feeds)


def test_attention_shapes_that_do_not_fit_are_refused():
    """Were numpy broadcast / concatenate ValueErrors: V's heads, attn_mask and past_key shapes are checked."""
    z = np.zeros
    f = np.float32
    _attention_refused({"q": z((1, 2, 2, 8), f), "k": z((1, 2, 2, 8), f), "v": z((1, 3, 2, 8), f)}, "disagree")
    _attention_refused({"q": z((1, 2, 2, 8), f), "k": z((1, 2, 2, 8), f), "v": z((1, 2, 2, 8), f),
                        "m": z((3, 2), f)}, "attn_mask .* does not broadcast", ["m"])
    _attention_refused({"q": z((1, 2, 2, 8), f), "k": z((1, 2, 2, 8), f), "v": z((1, 2, 2, 8), f), "m": z((1, 2), f),
                        "pk": z((2, 2, 3, 8), f), "pv": z((1, 2, 3, 8), f)}, "past_key .* does not fit",
                      ["m", "pk", "pv"])


@pytest.mark.parametrize("case", ["sce weight", "deform offset", "qlinearmatmul zero point"])
def test_input_shapes_that_do_not_fit_are_refused(case):
    """Were IndexError / ValueError from numpy inside the kernels."""
    f = np.float32
    if case == "sce weight":
        node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y"])
        feeds = {"x": np.zeros((3, 5), f), "t": np.zeros(3, np.int64), "w": np.array(1.0, f)}
        types = {"t": T.INT64}
        match = "weight shape"
    elif case == "deform offset":
        node = helper.make_node("DeformConv", ["x", "w", "o"], ["y"])
        feeds = {"x": np.zeros((1, 1, 3, 3), f), "w": np.zeros((1, 1, 2, 2), f), "o": np.array(0.0, f)}
        types = {}
        match = "offset shape"
    else:
        node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
        i8 = np.int8
        feeds = {"a": np.zeros((2, 4), i8), "as": np.ones(1, f), "az": np.zeros(1, i8), "b": np.zeros((4, 3), i8),
                 "bs": np.ones(1, f), "bz": np.zeros(1, i8), "ys": np.ones(1, f), "yz": np.zeros((4, 3), i8)}
        types = {k: T.INT8 for k in ("a", "az", "b", "bz", "yz")}
        match = "result zero point must be a scalar or 1D tensor of size 1"  # (onnxruntime's Fail)
    data = _graph([node], [vi(k, types.get(k, T.FLOAT), None) for k in feeds], [helper.ValueInfoProto(name="y")])
    for ep in EPS:
        with pytest.raises(onnxide.Fail if case.startswith("qlinear") else onnxide.InvalidArgument, match=match):
            _session(data, ep).run(None, feeds)


def test_linear_attention_gates_of_the_wrong_shape_are_refused():
    """Was IndexError (a 0-d beta) / a reshape ValueError (beta with another batch)."""
    names = ["q", "k", "v", "", "d", "b"]
    data = _graph([helper.make_node("LinearAttention", names, ["y", "state"], q_num_heads=4, kv_num_heads=4)],
                  [vi(n, T.FLOAT, None) for n in names if n], [helper.ValueInfoProto(name="y")], opset=27)
    x = np.zeros((2, 4, 32), np.float32)
    for ep in EPS:
        with pytest.raises(onnxide.InvalidArgument, match="beta shape"):
            _session(data, ep).run(None, {"q": x, "k": x, "v": x, "d": np.zeros((2, 4, 4), np.float32),
                                          "b": np.array(1.0, np.float32)})


@pytest.mark.parametrize("case", ["slice axes beyond rank", "split a scalar", "qlinearmatmul batch dims"])
def test_more_shapes_that_do_not_fit_are_refused(case):
    """Found by the seed-19 campaign: IndexError / ValueError from numpy inside Slice, Split and QLinearMatMul."""
    f, i8 = np.float32, np.int8
    if case == "slice axes beyond rank":
        node = helper.make_node("Slice", ["x", "s", "e"], ["y"])
        feeds = {"x": np.zeros((10, 5), f), "s": np.zeros(3, np.int64), "e": np.ones(3, np.int64)}
        match = "beyond the input's rank"
    elif case == "split a scalar":
        node = helper.make_node("Split", ["x", "s"], ["y", "z"])
        feeds = {"x": np.array(1.0, f), "s": np.ones(2, np.int64)}
        match = "cannot split a scalar"
    else:
        node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
        feeds = {"a": np.zeros((2, 2, 4), i8), "as": np.ones(1, f), "az": np.zeros(1, i8),
                 "b": np.zeros((4, 4, 3), i8), "bs": np.ones(1, f), "bz": np.zeros(1, i8), "ys": np.ones(1, f),
                 "yz": np.zeros(1, i8)}
        match = "cannot be multiplied"
    types = {k: {np.dtype(f): T.FLOAT, np.dtype(i8): T.INT8, np.dtype(np.int64): T.INT64}[v.dtype]
             for k, v in feeds.items()}
    data = _graph([node], [vi(k, types[k], None) for k in feeds],
                  [helper.ValueInfoProto(name=o) for o in node.output], opset=18)
    for ep in EPS:
        with pytest.raises(onnxide.InvalidArgument, match=match):
            _session(data, ep).run(None, feeds)


def _varint(n):
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _field(num, payload):
    """A length-delimited protobuf field (onnx's helpers parse what they build, so they cannot nest this deep)."""
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def test_messages_nested_deeper_than_protobufs_limit_are_refused():
    """A mutant nesting If bodies 60 deep took seconds per level of inference (past the campaign's 30 s); protobuf
    (onnxruntime, onnx) refuses messages nested deeper than 100, and so does onnxide now (here a graph input's type,
    a sequence 60 deep: two messages a level)."""
    t = _field(1, b"\x08\x01")  # TypeProto.tensor_type {elem_type: FLOAT}
    for _ in range(60):
        t = _field(4, _field(1, t))  # TypeProto.sequence_type {elem_type: t}
    node = _field(1, b"x") + _field(2, b"y") + _field(4, b"Identity")
    graph = _field(1, node) + _field(2, b"g") + _field(11, _field(1, b"x") + _field(2, t)) + _field(12, _field(1, b"y"))
    data = b"\x08\x08" + _field(7, graph) + _field(8, b"\x10\x11")  # ir_version 8, graph, opset_import {version 17}
    with pytest.raises(onnxide.InvalidProtobuf, match="nested deeper than protobuf's limit"):
        onnxide.InferenceSession(data)


def test_a_sequence_map_whose_body_has_no_outputs_fails_cleanly():
    """Was a raw IndexError out of the executor (the kernel gave an empty tuple for the node's one output)."""
    body = helper.make_graph([helper.make_node("Identity", ["t"], ["u"])], "body", [vi("t", T.FLOAT, [2])], [])
    data = _graph([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0),
                   helper.make_node("SequenceMap", ["s"], ["y"], body=body)],
                  [vi("x", T.FLOAT, [2, 2])], [helper.ValueInfoProto(name="y")], opset=18)
    for ep in EPS:
        with pytest.raises(OnnxideError, match="SequenceMap"):
            _session(data, ep).run(None, {"x": np.ones((2, 2), np.float32)})


def test_a_graph_output_without_a_name_is_refused_at_load():
    """Was a raw KeyError '' from the planner (a GRU mutant whose omitted first output was also a graph output)."""
    data = _graph([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [2])],
                  [vi("y", T.FLOAT, [2]), vi("", T.FLOAT, [2])])
    with pytest.raises(onnxide.Fail, match="output without a name"):
        onnxide.InferenceSession(data)


# ----------------------------------------------------------------------------------------------------------------
# the seed-19 campaign's remaining internals, and models onnxruntime's checker refuses that onnxide ran

def _refuses(data, feeds, error, match, at_load=False):
    """Every EP refuses the model with `error` matching `match` (at session creation where `at_load`)."""
    for ep in EPS:
        with pytest.raises(error, match=match):
            sess = _session(data, ep)
            assert not at_load, f"{ep} loaded the model"
            sess.run(None, feeds)


def _typed(name, arr):
    return vi(name, helper.np_dtype_to_tensor_dtype(arr.dtype) if arr.dtype != object else T.STRING, None)


def _one_node(node, feeds, opset=22, domain=None, inits=()):
    """A model of one node whose inputs are `feeds` (any rank), outputs untyped."""
    model = helper.make_model(helper.make_graph([node], "g", [_typed(k, v) for k, v in feeds.items()],
                                                [helper.ValueInfoProto(name=o) for o in node.output if o],
                                                list(inits)),
                              opset_imports=[helper.make_opsetid("", opset)] +
                              ([helper.make_opsetid(domain[0], domain[1])] if domain else []))
    return model.SerializeToString()


_f = np.float32
RUNTIME_SHAPES = {  # op: (node, feeds, opset, domain, match) — were wrapped IndexError / ValueError / TypeError
    "ArgMin of a scalar": (helper.make_node("ArgMin", ["x"], ["y"]), {"x": np.array(1.0, _f)}, 13, None,
                           "out of range for a scalar"),
    "CumProd of a scalar": (helper.make_node("CumProd", ["x", "a"], ["y"]),
                            {"x": np.array(1.0, _f), "a": np.array(0, np.int64)}, 26, None, "on a scalar"),
    "Squeeze of a scalar": (helper.make_node("Squeeze", ["x", "a"], ["y"]),
                            {"x": np.array(1.0, _f), "a": np.array([0], np.int64)}, 13, None, "for a scalar"),
    "Gemm-1 of a scalar": (helper.make_node("Gemm", ["a", "b", "c"], ["y"]),
                           {"a": np.ones((2, 3), _f), "b": np.array(1.0, _f), "c": np.ones((2, 2), _f)}, 6, None,
                           "must be 2-D"),
    "GridSample of a scalar": (helper.make_node("GridSample", ["x", "g"], ["y"]),
                               {"x": np.array(1.0, _f), "g": np.zeros((1, 2, 2, 2), _f)}, 20, None, "rank 3 or more"),
    "MatMul batch dims": (helper.make_node("MatMul", ["a", "b"], ["y"]),
                          {"a": np.ones((2, 2, 3, 4), _f), "b": np.ones((3, 2, 4, 3), _f)}, 13, None,
                          "cannot be multiplied"),
    "InstanceNormalization scalar B": (helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"]),
                                       {"x": np.ones((1, 2, 3), _f), "s": np.ones(2, _f), "b": np.array(1.0, _f)}, 6,
                                       None, "invalid input B"),
    "Attention nonpad_kv_seqlen": (helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"]),
                                   {"q": np.ones((2, 3, 4, 8), _f), "k": np.ones((2, 3, 4, 8), _f),
                                    "v": np.ones((2, 3, 4, 8), _f), "n": np.full(5, 4, np.int64)}, 24, None,
                                   "one length per batch"),
    "ConvInteger x_zero_point": (helper.make_node("ConvInteger", ["x", "w", "z"], ["y"]),
                                 {"x": np.ones((1, 1, 3, 3), np.uint8), "w": np.ones((1, 1, 2, 2), np.uint8),
                                  "z": np.ones(4, np.uint8)}, 10, None, "x_zero_point"),
    "Resize of an empty dim": (helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest"),
                               {"x": np.ones((1, 1, 2, 0), _f), "s": np.array([1, 1, 4, 4], np.int64)}, 13, None,
                               "nothing to scale"),
    "SoftmaxCrossEntropyLoss without classes": (helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"]),
                                                {"x": np.ones((3, 0), _f), "t": np.zeros(3, np.int64)}, 13, None,
                                                "no classes"),
    "Where of two types": (helper.make_node("Where", ["c", "a", "b"], ["y"]),
                           {"c": np.array([True]), "a": np.ones(1, _f), "b": np.array(["s"], object)}, 16, None,
                           r"bound to different types \(tensor\(float\) and tensor\(string\)"),  # (at load now)
    "Scan-9 of a scalar": None,  # (built below: a body)
    "Momentum of a string state": (helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["x2", "v2"],
                                                    domain="ai.onnx.preview.training", alpha=0.9, beta=0.9,
                                                    mode="standard", norm_coefficient=0.0),
                                   {"r": np.array(0.1, _f), "t": np.array(1, np.int64), "x": np.ones(2, _f),
                                    "g": np.ones(2, _f), "v": np.array(["a", "b"], object)}, 17,
                                   ("ai.onnx.preview.training", 1), "float tensors of one shape"),
    "Adam of unequal shapes": (helper.make_node("Adam", ["r", "t", "x", "g", "v", "h"], ["x2", "v2", "h2"],
                                                domain="ai.onnx.preview.training"),
                               {"r": np.array(0.1, _f), "t": np.array(1, np.int64), "x": np.ones(2, _f),
                                "g": np.ones(37, _f), "v": np.ones(2, _f), "h": np.ones(2, _f)}, 17,
                               ("ai.onnx.preview.training", 1), "of one shape"),
    "FlexAttention batch": (helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview"),
                            {"q": np.ones((2, 4, 8, 16), _f), "k": np.ones((3, 4, 6, 16), _f),
                             "v": np.ones((3, 4, 6, 16), _f)}, 22, ("ai.onnx.preview", 1), "incompatible"),
    "CausalConvWithState bias": (helper.make_node("CausalConvWithState", ["x", "w", "b"], ["y", "state"]),
                                 {"x": np.ones((1, 4, 5), _f), "w": np.ones((4, 1, 3), _f), "b": np.ones((4, 2), _f)},
                                 28, None, "bias shape"),
}


@pytest.mark.parametrize("case", sorted(k for k, v in RUNTIME_SHAPES.items() if v))
def test_shapes_the_seed_19_campaign_found_are_refused(case):
    node, feeds, opset, domain, match = RUNTIME_SHAPES[case]
    _refuses(_one_node(node, feeds, opset, domain), feeds, OnnxideError, match)
    for ep in EPS:  # onnxide's own check, not a wrapped Python exception
        try:
            _session(_one_node(node, feeds, opset, domain), ep).run(None, feeds)
        except OnnxideError as e:
            assert not INTERNAL.search(str(e)), str(e)


def test_scans_over_a_scalar_or_without_a_batch_are_refused():
    body = helper.make_graph([helper.make_node("Add", ["s", "x"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"])],
                             "b", [vi("s", T.FLOAT, None), vi("x", T.FLOAT, None)],
                             [vi("s2", T.FLOAT, None), vi("o", T.FLOAT, None)])
    feeds = {"s": np.zeros(1, _f), "x": np.array(1.0, _f)}
    _refuses(_one_node(helper.make_node("Scan", ["s", "x"], ["s3", "y"], body=body, num_scan_inputs=1), feeds, 11),
             feeds, onnxide.InvalidArgument, "is a scalar")
    feeds = {"s": np.zeros(1, _f), "x": np.ones(3, _f)}
    _refuses(_one_node(helper.make_node("Scan", ["", "s", "x"], ["s3", "y"], body=body, num_scan_inputs=1), feeds, 8),
             feeds, onnxide.InvalidArgument, r"\[batch, sequence")


@pytest.mark.parametrize("case", ["tree ensemble leaves", "tfidf ngram_counts", "label encoder keys"])
def test_ml_attributes_that_do_not_fit_are_refused(case):
    """Were 'array is not broadcastable' / 'cannot reshape' / 'invalid literal for int()' ValueErrors."""
    x = {"x": np.ones((1, 2), _f)}
    if case == "tree ensemble leaves":
        node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", n_targets=1, tree_roots=[0],
                                nodes_featureids=[0], nodes_modes=numpy_helper.from_array(np.zeros(1, np.uint8)),
                                nodes_splits=numpy_helper.from_array(np.ones(1, _f)), nodes_truenodeids=[0],
                                nodes_trueleafs=[1], nodes_falsenodeids=[1], nodes_falseleafs=[1],
                                leaf_targetids=[0, 0, 0], leaf_weights=numpy_helper.from_array(np.ones(2, _f)))
        error, match, domain = onnxide.InvalidArgument, "differ in length", ("ai.onnx.ml", 5)
    elif case == "tfidf ngram_counts":
        x = {"x": np.array([2, 3, 5], np.int64)}
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], max_gram_length=2, max_skip_count=0,
                                min_gram_length=2, mode="TF", ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3],
                                pool_int64s=[2, 3, 5, 4, 5, 6, 7])
        error, match, domain = onnxide.Fail, "whole n-grams", None
    else:
        x = {"x": np.array([1, 2], np.int64)}
        node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                                values_int64s=[1, 2])
        error, match, domain = onnxide.Fail, "keys' type", ("ai.onnx.ml", 2)
    _refuses(_one_node(node, x, 21, domain), x, error, match)


def test_tfidf_of_strings_against_an_int_pool_counts_nothing():
    """Was 'invalid literal for int()': onnxruntime counts no n-gram (zeros), and so does onnxide."""
    x = {"x": np.array(["a", "b", "a"], object)}
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], max_gram_length=1, max_skip_count=0, min_gram_length=1,
                            mode="TF", ngram_counts=[0], ngram_indexes=[0, 1], pool_int64s=[2, 3])
    for ep in EPS:
        y, = _session(_one_node(node, x, 9), ep).run(None, x)
        np.testing.assert_array_equal(y, np.zeros(2, _f))


def test_rotary_embedding_caches_and_positions_that_do_not_fit_are_refused():
    """Were numpy broadcast / index errors: the caches' ranks and positions are checked as onnxruntime does."""
    node = helper.make_node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"])
    base = {"x": np.ones((2, 3, 4, 8), _f), "c": np.ones((50, 4), _f), "s": np.ones((50, 4), _f),
            "p": np.zeros((2, 4), np.int64)}
    for change, match in [({"p": np.zeros((2, 38), np.int64)}, "position_ids shape"),
                          ({"s": np.ones((50, 50, 4), _f)}, "cos_cache .* and sin_cache"),
                          ({"p": np.full((2, 4), 50, np.int64)}, r"must be in \[0, 50\)")]:
        feeds = {**base, **change}
        _refuses(_one_node(node, feeds, 23), feeds, onnxide.InvalidArgument, match)


def test_load_time_graph_errors_the_campaign_found():
    """A Shape node without outputs (an IndexError in constant folding), an If branch returning an outer value
    directly and a SequenceMap body reading its own node's output (KeyErrors in the executor), Shape of a sequence
    in a body (AttributeError): refused at load as onnxruntime refuses them."""
    x = vi("x", T.FLOAT, [2])
    with pytest.raises(onnxide.InvalidGraph, match="output size 0"):
        onnxide.InferenceSession(_graph([helper.make_node("Shape", ["x"], [])], [x], [x]))
    then = helper.make_graph([], "then", [], [vi("x", T.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["n"])], "else", [], [vi("n", T.FLOAT, [2])])
    with pytest.raises(onnxide.Fail, match=r"Subgraph output \(x\) is an outer scope value"):
        onnxide.InferenceSession(_graph([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                                        [x, vi("c", T.BOOL, [])], [vi("y", T.FLOAT, [2])]))
    body = helper.make_graph([helper.make_node("Add", ["y", "i"], ["o"])], "b", [vi("i", T.FLOAT, [2])],
                             [vi("o", T.FLOAT, [2])])
    seq = helper.make_tensor_sequence_value_info("s", T.FLOAT, [2])
    with pytest.raises(onnxide.Fail, match="not acyclic"):
        onnxide.InferenceSession(_graph([helper.make_node("SequenceMap", ["s"], ["y"], body=body)], [seq],
                                        [helper.make_tensor_sequence_value_info("y", T.FLOAT, [2])]))
    body = helper.make_graph([helper.make_node("Shape", ["s"], ["o"])], "b", [vi("i", T.FLOAT, [2]),
                                                                             vi("j", T.FLOAT, [2])],
                             [vi("o", T.INT64, [1])])  # (one body input per node input: else that is refused first)
    with pytest.raises(onnxide.InvalidGraph, match=r"Type 'seq\(tensor\(float\)\)' of input parameter \(s\) of "
                                                   r"operator \(Shape\)"):
        onnxide.InferenceSession(_graph([helper.make_node("SequenceMap", ["s", "x"], ["y"], body=body)], [seq, x],
                                        [helper.make_tensor_sequence_value_info("y", T.INT64, [1])]))


def test_a_map_input_to_a_tensor_op_is_refused_at_load():
    """Was onnxruntime's Python-layer RuntimeError at run ('a map input must be given as a dict'); onnxruntime itself
    refuses the model at load."""
    m = helper.make_map_type_proto(T.INT64, helper.make_tensor_type_proto(T.FLOAT, [2]))
    data = _graph([helper.make_node("Asin", ["x"], ["y"])], [helper.make_value_info("x", m)],
                  [helper.ValueInfoProto(name="y")])
    with pytest.raises(onnxide.InvalidGraph, match=r"Type 'map\(int64,tensor\(float\)\)' of input parameter \(x\)"):
        onnxide.InferenceSession(data)


def test_declared_output_types_must_match_what_the_node_gives():
    """onnxruntime's load check (its messages): a graph output, value_info or body output declared of another
    element type than its node gives fails; elem_type 0 where a value is used is an invalid data type; a Constant
    (an initializer to onnxruntime) and a missing type are not checked."""
    x = vi("x", T.FLOAT, [2])
    relu = helper.make_node("Relu", ["x"], ["y"])
    with pytest.raises(onnxide.Fail, match=r"Type \(tensor\(int64\)\) of output arg \(y\) of node \(\) does not "
                                           r"match expected type \(tensor\(float\)\)"):
        onnxide.InferenceSession(_graph([relu], [x], [vi("y", T.INT64, [2])]))
    with pytest.raises(onnxide.Fail, match=r"Type \(tensor\(float\)\) of output arg \(y\).*\(tensor\(int32\)\)"):
        onnxide.InferenceSession(_graph([helper.make_node("Cast", ["x"], ["y"], to=T.INT32)], [x],
                                        [vi("y", T.FLOAT, [2])]))
    with pytest.raises(onnxide.Fail, match=r"output arg \(y\).*expected type \(tensor\(float\)\)"):  # value_info
        g = helper.make_graph([relu, helper.make_node("Neg", ["y"], ["z"])], "g", [x], [vi("z", T.FLOAT, [2])],
                              value_info=[vi("y", T.INT64, [2])])
        onnxide.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with pytest.raises(onnxide.Fail, match=r"Type \(tensor\(float\)\) of output arg \(y\).*\(seq\(tensor\(float\)\)\)"):
        onnxide.InferenceSession(_graph([helper.make_node("SequenceConstruct", ["x"], ["y"])], [x],
                                        [vi("y", T.FLOAT, None)]))
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", T.INT64, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
    with pytest.raises(onnxide.Fail, match=r"output arg \(t\)"):
        onnxide.InferenceSession(_graph([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                                        [x, vi("c", T.BOOL, [])], [vi("y", T.FLOAT, None)]))
    for decl in (vi("y", 0, [2]), vi("y", 0, None)):
        with pytest.raises(onnxide.InvalidArgument, match="Invalid tensor data type 0"):
            onnxide.InferenceSession(_graph([relu], [x], [decl]))
    const = helper.make_node("Constant", [], ["y"], value=helper.make_tensor("v", T.INT64, [1], [3]))
    untyped = helper.ValueInfoProto(name="y")
    for data in (_graph([const], [x], [vi("y", T.FLOAT, None)]), _graph([relu], [x], [untyped])):
        for ep in EPS:
            assert _session(data, ep).run(None, {"x": np.ones(2, _f)})[0].shape in ((1,), (2,))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_of_a_scalar_is_refused(op):
    """onnxruntime: a shape inference error at load (a scalar's rank known), its kernel's Fail at run (unknown)."""
    for opset in (11, 13):
        data = _graph([helper.make_node(op, ["x"], ["y"])], [vi("x", T.FLOAT, [])], [vi("y", T.FLOAT, None)], opset)
        _refuses(data, {}, onnxide.Fail, "Input rank must be >= 1", at_load=True)
        data = _graph([helper.make_node(op, ["x"], ["y"])], [vi("x", T.FLOAT, None)], [vi("y", T.FLOAT, None)], opset)
        _refuses(data, {"x": np.array(1.0, _f)}, onnxide.Fail, "rank must be >= 1")


def test_batch_normalization_parameters_must_be_vectors():
    """A rank-2 var: onnxruntime's shape inference refuses it from opset 14, its kernel (InvalidArgument) before and
    where the rank is not known at load."""
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    inits = [numpy_helper.from_array(np.ones(3, _f), n) for n in "sbm"]
    x = np.ones((2, 3, 4, 4), _f)
    var = numpy_helper.from_array(np.ones((3, 1), _f), "v")
    _refuses(_graph([bn], [vi("x", T.FLOAT, x.shape)], [vi("y", T.FLOAT, None)], 15, inits + [var]), {"x": x},
             onnxide.Fail, "Input 4 expected to have rank 1 but has rank 2", at_load=True)
    _refuses(_graph([bn], [vi("x", T.FLOAT, x.shape)], [vi("y", T.FLOAT, None)], 9, inits + [var]), {"x": x},
             onnxide.InvalidArgument, "invalid input var")
    _refuses(_graph([bn], [vi("x", T.FLOAT, x.shape), vi("v", T.FLOAT, None)], [vi("y", T.FLOAT, None)], 15, inits),
             {"x": x, "v": np.ones((1, 3), _f)}, onnxide.InvalidArgument, "invalid input var")


def test_float_mod_without_fmod_before_opset_28():
    """onnxruntime's kernel refuses fmod=0 on floats before opset 28; Mod-28 gives the floor remainder (sign of the
    divisor, as Python's %)."""
    feeds = {"a": np.array([5, -5, 7], _f), "b": np.array([3, 3, -2], _f)}
    inputs = [vi("a", T.FLOAT, [3]), vi("b", T.FLOAT, [3])]
    mod = helper.make_node("Mod", ["a", "b"], ["y"], fmod=0)
    _refuses(_graph([mod], inputs, [vi("y", T.FLOAT, None)], 17), feeds, onnxide.Fail, "fmod must be 1")
    for ep in EPS:
        y, = _session(_graph([mod], inputs, [vi("y", T.FLOAT, None)], 28), ep).run(None, feeds)
        np.testing.assert_array_equal(y, np.array([2, 1, -1], _f))


def test_conv_transpose_output_shape_must_fit_the_input():
    """onnxruntime refuses an output_shape more than stride - 1 past the natural output (no input reaches it)."""
    x = np.ones((1, 2, 5, 5), _f)
    w = numpy_helper.from_array(np.ones((2, 3, 3, 3), _f), "w")

    def model(size):
        return _graph([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_shape=[size, size])],
                      [vi("x", T.FLOAT, x.shape)], [vi("y", T.FLOAT, None)], 17, [w])

    _refuses(model(13), {"x": x}, onnxide.InvalidArgument, "inconsistent with input spatial dimensions")
    for ep in EPS:  # natural 11, and 12 = 11 + stride - 1
        assert _session(model(12), ep).run(None, {"x": x})[0].shape == (1, 3, 12, 12)


def test_inputs_of_one_type_parameter_must_agree():
    """onnxruntime fails a node whose inputs sharing a type parameter differ (Sub of float and uint8); onnxide ran it
    (numpy promoted the types)."""
    data = _graph([helper.make_node("Sub", ["a", "b"], ["y"])], [vi("a", T.FLOAT, [2]), vi("b", T.UINT8, [2])],
                  [helper.ValueInfoProto(name="y")], 14)
    with pytest.raises(onnxide.Fail, match=r"Type parameter \(T\) of Optype \(Sub\) bound to different types "
                                           r"\(tensor\(float\) and tensor\(uint8\) in node"):
        onnxide.InferenceSession(data)
    data = _graph([helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=0)],  # (a variadic input: every one)
                  [vi("a", T.FLOAT, [2]), vi("b", T.FLOAT, [2]), vi("c", T.DOUBLE, [2])],
                  [helper.ValueInfoProto(name="y")], 13)
    with pytest.raises(onnxide.Fail, match=r"\(T\) of Optype \(Concat\)"):
        onnxide.InferenceSession(data)


def test_an_opset_newer_than_any_released_is_refused():
    """A mutant stamped ai.onnx opset 2^63-1 ran as the newest; onnxruntime refuses opsets past its release (ai.onnx
    28, ai.onnx.ml 5, com.microsoft 1), as onnxide now does."""
    def model(domain, version):
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x", T.FLOAT, [2])],
                              [vi("y", T.FLOAT, [2])])
        ops = [helper.make_opsetid(domain, version)] + ([helper.make_opsetid("", 17)] if domain else [])
        return helper.make_model(g, opset_imports=ops).SerializeToString()

    for domain, version in (("", 29), ("", (1 << 63) - 1), ("ai.onnx.ml", 6), ("com.microsoft", 2)):
        with pytest.raises(onnxide.Fail, match=f"Opset {version} of domain .* is newer than the newest released"):
            onnxide.InferenceSession(model(domain, version))
    assert onnxide.InferenceSession(model("", 28)).run(None, {"x": np.ones(2, _f)})[0].shape == (2,)


def test_a_run_of_a_model_without_outputs_is_refused():
    """onnxruntime refuses a run that requests no output (a model without graph outputs: 372 seed-19 mutants);
    onnxide returned an empty list."""
    data = _graph([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [2])], [])
    for ep in EPS:
        with pytest.raises(onnxide.InvalidArgument, match="At least one output should be requested"):
            _session(data, ep).run(None, {"x": np.ones(2, _f)})


def test_a_dropout_ratio_outside_0_1_is_refused_in_inference_too():
    """onnxruntime checks the ratio input whether or not it trains; onnxide skipped it in inference."""
    data = _graph([helper.make_node("Dropout", ["x", "r"], ["y"])], [vi("x", T.FLOAT, [2]), vi("r", T.FLOAT, [])],
                  [helper.ValueInfoProto(name="y")], 13)
    _refuses(data, {"x": np.ones(2, _f), "r": np.array(-0.65, _f)}, onnxide.Fail,
             r"ratio must be in the range \[0, 1\)")


@pytest.mark.parametrize("op,dtype,refused_at,runs_at", [("Add", T.BFLOAT16, 7, None), ("Add", T.INT8, 13, 14),
                                                         ("Relu", T.INT32, 13, 14), ("Concat", T.INT8, 3, 4)])
def test_an_input_type_the_models_opset_of_the_op_does_not_take_is_refused(op, dtype, refused_at, runs_at):
    """133 seed-19 mutants fed a type a later version of the op takes (bfloat16 into Add-7, int8 into Add-13):
    onnxide's table was per op, any opset; onnxruntime's type check reads the schema of the model's opset."""
    names = ["a", "b"] if op != "Relu" else ["a"]
    attrs = {"axis": 0} if op == "Concat" else {}

    def model(opset):
        return _graph([helper.make_node(op, names, ["y"], **attrs)], [vi(n, dtype, [2]) for n in names],
                      [vi("y", dtype, None)], opset)

    name = {T.BFLOAT16: "bfloat16", T.INT8: "int8", T.INT32: "int32"}[dtype]
    for ep in EPS:
        with pytest.raises(onnxide.InvalidGraph, match=rf"Type Error: Type 'tensor\({name}\)' of input parameter "
                                                       rf"\(a\) of operator \({op}\) in node"):
            _session(model(refused_at), ep)
        if runs_at is not None:
            feeds = {n: np.array([-1, 2], np.int8 if dtype == T.INT8 else np.int32) for n in names}
            y = _session(model(runs_at), ep).run(None, feeds)[0]
            assert y.tolist() == {"Add": [-2, 4], "Relu": [0, 2], "Concat": [-1, 2, -1, 2]}[op], ep


def test_integer_div_and_mod_by_zero_fail():
    """onnxide gave 0 where onnxruntime fails ('Integer division by zero' / 'Integer modulo by zero'), for any zero in
    the divisor, an empty output too; other divisors truncate (Div) and take the divisor's sign (Mod) as there."""
    for op, word in (("Div", "division"), ("Mod", "modulo")):
        for dtype, np_type in ((T.INT32, np.int32), (T.INT64, np.int64), (T.UINT8, np.uint8)):
            data = _graph([helper.make_node(op, ["a", "b"], ["y"])], [vi("a", dtype, None), vi("b", dtype, None)],
                          [vi("y", dtype, None)], 14)
            for a, b in (([5, 6, 7], [2, 0, 3]), ([], [0]), ([5, 6], 0)):
                _refuses(data, {"a": np.array(a, np_type), "b": np.array(b, np_type)}, onnxide.Fail,
                         rf"running {op} node\. Name:'' Status Message: Integer {word} by zero")
        data = _graph([helper.make_node(op, ["a", "b"], ["y"])], [vi("a", T.INT32, [3]), vi("b", T.INT32, [3])],
                      [vi("y", T.INT32, None)], 14)
        feeds = {"a": np.array([5, -7, 7], np.int32), "b": np.array([2, 2, -3], np.int32)}
        for ep in EPS:  # (onnxruntime 1.32: Div [2, -3, -2], Mod [1, 1, -2])
            assert _session(data, ep).run(None, feeds)[0].tolist() == {"Div": [2, -3, -2], "Mod": [1, 1, -2]}[op]


def test_conv_transpose_output_shape_listing_n_and_c():
    """onnxruntime's shape inference refuses an output_shape that is not one entry per spatial dim where X and W have
    shapes and the kernel is known; its kernel takes (N, C, *spatial) where X's rank is not known at load."""
    x = np.ones((1, 2, 3, 3), _f)
    w = np.ones((2, 3, 3, 3), _f)

    def model(output_shape, x_shape, w_shape=w.shape, **attrs):
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=output_shape, **attrs)
        return _graph([node], [vi("x", T.FLOAT, x_shape), vi("w", T.FLOAT, w_shape)], [vi("y", T.FLOAT, None)], 17)

    feeds = {"x": x, "w": w}
    for osh, x_shape in (([1, 3, 5, 5], x.shape), ([1, 3, 5, 5], ["n", "c", "h", "w"]), ([3, 5, 5], x.shape)):
        _refuses(model(osh, x_shape), feeds, onnxide.Fail,
                 r"Node \(\) Op \(ConvTranspose\) \[ShapeInferenceError\] Attribute output_shape has incorrect size",
                 at_load=True)
    _refuses(model([1, 3, 5, 5], x.shape, [2, 3, "k", "k"], kernel_shape=[3, 3]), feeds, onnxide.Fail,
             "output_shape has incorrect size", at_load=True)
    _refuses(model([3, 5, 5], None), feeds, onnxide.InvalidArgument,
             r"output_shape attribute has 3 elements, expected 2 or 4\.")
    for ep in EPS:  # X's rank unknown, or W's kernel dims symbolic: onnxruntime runs them (1, 3, 5, 5)
        for data in (model([1, 3, 5, 5], None), model([1, 3, 5, 5], x.shape, [2, 3, "k", "k"]), model([5, 5], x.shape)):
            assert _session(data, ep).run(None, feeds)[0].shape == (1, 3, 5, 5), ep


def test_an_if_whose_constant_cond_is_not_bool_is_refused_before_folding():
    """A mutant retyped an If's constant cond (float16, int8, int4, ...): onnxide's optimizer folded the If away before
    the type check saw it and ran the model; onnxruntime checks the model's own nodes first."""
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "b", [], [vi("z", T.FLOAT, [2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    cond = numpy_helper.from_array(np.array(1, np.int8), "c")
    data = _graph([node], [vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, None)], 17, [cond])
    _refuses(data, {"x": np.ones(2, _f)}, onnxide.InvalidGraph,
             r"Type 'tensor\(int8\)' of input parameter \(c\) of operator \(If\)", at_load=True)


@pytest.mark.parametrize("ep", EPS)
def test_model_without_an_ai_onnx_opset_import_is_refused(ep):
    """mut:19:25106: a Softmax model importing only another domain. onnx's checker refuses it ("No opset import for
    domain ''"); onnxide read it as opset 1 (Softmax over the flattened trailing dims) while onnxruntime reads it as
    its newest opset, so both ran with different answers."""
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=1)], "g", [vi("x", T.FLOAT, [3, 4, 5])],
                          [vi("y", T.FLOAT, [3, 4, 5])])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("zzz", 13)]).SerializeToString()
    with pytest.raises(onnxide.capi.onnxruntime_pybind11_state.InvalidGraph, match="No opset import for domain ''"):
        _session(data, ep)


def test_a_sparse_tensor_graph_input_into_an_onnx_op_is_refused():
    """12 seed-19 mutants declared a graph input sparse_tensor; onnxide ran them as dense, onnxruntime's type check
    refuses them (no ONNX / ONNX-ML op takes a sparse tensor)."""
    x = helper.make_value_info("x", helper.make_sparse_tensor_type_proto(T.FLOAT, [2]))
    data = _graph([helper.make_node("Relu", ["x"], ["y"])], [x], [vi("y", T.FLOAT, None)], 17)
    _refuses(data, {"x": np.ones(2, _f)}, onnxide.InvalidGraph,
             r"Type 'sparse_tensor\(float\)' of input parameter \(x\) of operator \(Relu\) in node", at_load=True)


def test_an_ir_version_past_onnxruntimes_is_refused():
    """3 of the seed-19 chunk 0's mutants stamped IR versions up to 2^31; onnxruntime 1.32 loads up to 14."""
    data = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x", T.FLOAT, [2])],
                                               [vi("y", T.FLOAT, [2])]), opset_imports=[helper.make_opsetid("", 17)])
    for version in (15, 1 << 31):
        data.ir_version = version
        with pytest.raises(onnxide.Fail, match=f"Unsupported model IR version: {version}, max supported IR version: 14"):
            onnxide.InferenceSession(data.SerializeToString())
    data.ir_version = 14
    assert onnxide.InferenceSession(data.SerializeToString()).run(None, {"x": np.ones(2, _f)})[0].shape == (2,)
