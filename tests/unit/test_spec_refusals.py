"""Models the ONNX spec or onnx's checker rejects that onnxide ran until the seed-19 campaign's chunk 0 rerun found
them (issue 19): each is refused on every EP here, and by onnxruntime with the same error class (the oracle: its
messages are the ones onnxide's quote)."""
import re

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxide

vi = helper.make_tensor_value_info
EPS = [p for p in ("CPUExecutionProvider", "NativeCPUExecutionProvider", "WasmExecutionProvider")
       if p in onnxide.get_available_providers()]
F = np.float32
X = np.ones((2, 3), F)


def _model(nodes, inputs, outputs, opset=21, inits=(), value_info=(), ml=None):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("ai.onnx.ml", ml)] if ml else [])
    return helper.make_model(g, opset_imports=opsets).SerializeToString()


def _typed(feeds, symbolic=False):
    """Graph inputs declaring each feed's type and rank (symbolic dims: the shape is then known only at run time)."""
    return [vi(k, helper.np_dtype_to_tensor_dtype(v.dtype), [f"d{i}" for i in range(v.ndim)] if symbolic else
               list(v.shape)) for k, v in feeds.items()]


def _refused(data, feeds, cls, match):
    """onnxruntime refuses the model with `cls` (at load or run), and so does onnxide on every EP, `match` in its
    message."""
    with pytest.raises(getattr(onnxruntime.capi.onnxruntime_pybind11_state, cls)):
        onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for ep in EPS:
        with pytest.raises(getattr(onnxide, cls), match=match):
            onnxide.InferenceSession(data, providers=[ep]).run(None, feeds)


Y = vi("y", T.FLOAT, None)
XV = vi("x", T.FLOAT, [2, 3])

SCHEMA = {  # name: (model, onnxide error class (onnxruntime's), what its message says)
    "unknown attribute": (_model([helper.make_node("Relu", ["x"], ["y"], foo=1)], [XV], [Y]),
                          "InvalidGraph", "Unrecognized attribute: foo for operator Relu"),
    "unknown attribute on If": (_model([helper.make_node(
        "If", ["c"], ["y"], strides=[1], then_branch=helper.make_graph(
            [helper.make_node("Relu", ["x"], ["t"])], "t", [], [vi("t", T.FLOAT, None)]),
        else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [], [vi("e", T.FLOAT, None)]))],
        [vi("c", T.BOOL, []), XV], [Y]), "InvalidGraph", "Unrecognized attribute: strides for operator If"),
    "too many outputs": (_model([helper.make_node("Relu", ["x"], ["y", "z"])], [XV], [Y]),
                         "InvalidGraph", r"schema\(::Relu:14\) has output size 2 not in range \[min=1, max=1\]"),
    "too many inputs": (_model([helper.make_node("Size", ["x", "x"], ["y"])], [XV], [vi("y", T.INT64, None)]),
                        "InvalidGraph", r"has input size 2 not in range \[min=1, max=1\]"),
    "BatchNormalization-9 of 2 outputs": (
        _model([helper.make_node("BatchNormalization", list("xsbmv"), ["y", "z"])],
               [vi(n, T.FLOAT, [1, 1, 2] if n == "x" else [1]) for n in "xsbmv"], [Y], opset=9),
        "InvalidGraph", "has output size 2 not in allowed output sizes"),
    "required attribute missing": (_model([helper.make_node("LRN", ["x"], ["y"])], [vi("x", T.FLOAT, [1, 2, 3])],
                                          [Y]), "InvalidGraph", "Required attribute 'size' is missing"),
    "a dead node of an unknown op": (_model([helper.make_node("Relu", ["x"], ["y"]),
                                             helper.make_node("NoSuchOp", ["x"], ["unused"])], [XV], [Y]),
                                     "InvalidGraph", "No Op registered for NoSuchOp with domain_version of 21"),
    "an If whose branches give 1 and 2 outputs": (_model([helper.make_node(
        "If", ["c"], ["y"], then_branch=helper.make_graph(
            [helper.make_node("Relu", ["x"], ["t"])], "t", [], [vi("t", T.FLOAT, None)]),
        else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["e"]), helper.make_node("Abs", ["x"], ["f"])],
                                      "e", [], [vi("e", T.FLOAT, None), vi("f", T.FLOAT, None)]))],
        [vi("c", T.BOOL, []), XV], [Y]), "Fail", "then_branch and else_branch produce different number of outputs"),
    "a Scan body of 3 outputs for 2": (_model([helper.make_node("Scan", ["s0", "xs"], ["sf", "os"], num_scan_inputs=1,
                                                                body=helper.make_graph(
        [helper.make_node("Add", ["s", "e"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"]),
         helper.make_node("Identity", ["s2"], ["p"])], "b", [vi("s", T.FLOAT, [1]), vi("e", T.FLOAT, [1])],
        [vi(n, T.FLOAT, [1]) for n in ("s2", "o", "p")]))], [vi("s0", T.FLOAT, [1]), vi("xs", T.FLOAT, [3, 1])],
        [vi("sf", T.FLOAT, None)]), "Fail", "returned type information for 3 outputs. Expected 2"),
    "a Concat axis past the rank, in a dead node": (
        _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Concat", ["x", "x"], ["u"], axis=22)],
               [XV], [Y]), "Fail", r"axis must be in \[-rank, rank-1\]"),
    "a Constant without a value, in a dead node": (
        _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Constant", [], ["u"])], [XV], [Y]),
        "Fail", "Constant node has no data attributes"),
    "LSTM hidden_size 0": (_model([helper.make_node("LSTM", ["x", "w", "r"], ["", "y"], hidden_size=0)],
                                  [vi("x", T.FLOAT, [1, 1, 2]), vi("w", T.FLOAT, [1, 0, 2]),
                                   vi("r", T.FLOAT, [1, 0, 0])], [Y]), "Fail", "'hidden_size' must be positive"),
    "LabelEncoder default_tensor of rank 0": (_model([helper.make_node(
        "LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["a", "b"],
        values_tensor=numpy_helper.from_array(np.array([1, 2], np.int16)),
        default_tensor=numpy_helper.from_array(np.array(42, np.int16)))], [vi("x", T.STRING, [2])],
        [vi("y", T.INT16, [2])], ml=4), "Fail", "'default_tensor' must be a singleton 1D tensor"),
    "ConvTranspose output_padding of 3 for 2 spatial dims": (_model([helper.make_node(
        "ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_padding=[1, 1, 1])],
        [vi("x", T.FLOAT, ["n", 2, "h", "w"]), vi("w", T.FLOAT, [2, 3, 3, 3])], [Y]),
        "Fail", "Attribute output_padding has incorrect size"),
    "two declarations of one graph output": (_model([helper.make_node("Relu", ["x"], ["y"])], [XV],
                                                    [vi("y", T.INT8, [2, 3]), vi("y", T.FLOAT, [2, 3])]),
                                             "Fail", r"Type \(tensor\(int8\)\) of output arg \(y\)"),
    "a value_info retyping a graph input": (_model([helper.make_node("Shrink", ["x"], ["y"])],
                                                   [vi("x", T.INT8, [5])], [vi("y", T.FLOAT, [5])], opset=9,
                                                   value_info=[vi("x", T.FLOAT, [5])]),
                                            "Fail", r"Type \(tensor\(float\)\) of output arg \(y\)"),
}


@pytest.mark.parametrize("case", sorted(SCHEMA))
def test_models_the_checker_refuses_are_refused_at_load(case):
    data, cls, match = SCHEMA[case]
    _refused(data, {}, cls, match)  # (refused at session creation: no feeds needed)


def test_an_attribute_without_a_type_is_refused():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.5)
    node.attribute[0].type = 0
    _refused(_model([node], [XV], [Y]), {}, "InvalidGraph", "type field and data field mismatch in attribute alpha")


def test_internal_attribute_names_pass_the_schema_check():
    """onnx's checker skips attribute names starting with `__` (internal symbols): not a schema error."""
    data = _model([helper.make_node("Relu", ["x"], ["y"], __fuzz=1)], [XV], [Y])
    onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    with pytest.raises(onnxide.NotImplemented, match="not supported by onnxide"):  # (its kernel takes no such name)
        onnxide.InferenceSession(data)


def _seq_map(elem_type):
    """SequenceMap of an Identity body over a sequence input whose element type is `elem_type` (a TypeProto)."""
    body = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "body", [vi("a", T.FLOAT, None)],
                             [vi("b", T.FLOAT, None)])
    s = helper.make_value_info("s", helper.make_sequence_type_proto(elem_type))
    return _model([helper.make_node("SequenceMap", ["s"], ["o"], body=body)], [s],
                  [helper.make_tensor_sequence_value_info("o", T.FLOAT, None)])


@pytest.mark.parametrize("elem, text", [
    (helper.make_tensor_type_proto(T.FLOAT8E4M3FNUZ, None), "seq(tensor(float8e4m3fnuz))"),
    (helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.FLOAT, None)), "seq(seq(tensor(float)))")])
def test_sequence_element_types_the_schema_does_not_take_are_refused(elem, text):
    """The type table's bit for sequences stands for any; the element type is checked against seq(tensor(T))."""
    _refused(_seq_map(elem), {}, "InvalidGraph", re.escape(f"Type Error: Type '{text}' of input parameter (s)"))


def test_a_sequence_of_a_type_the_schema_takes_loads():
    onnxide.InferenceSession(_seq_map(helper.make_tensor_type_proto(T.FLOAT, None)))


@pytest.mark.parametrize("dims, elem, match", [
    ([4, 4, 5], T.FLOAT, "Mismatch between number of inferred and declared dimensions. inferred=3 declared=2"),
    ([4, 6], T.FLOAT, "Both inferred and declared dimension have values but they differ. Inferred=6 Declared=5"),
    ([4, 5], T.UINT32, "Tensor element type mismatch. 12 != 1")])
def test_an_initializer_unlike_its_graph_input_declaration_is_refused(dims, elem, match):
    w = numpy_helper.from_array(np.ones(dims, helper.tensor_dtype_to_np_dtype(elem)), "w")
    data = _model([helper.make_node("Identity", ["w"], ["y"])], [vi("w", T.FLOAT, [4, 5])], [Y], inits=[w])
    _refused(data, {}, "Fail", match)


def test_a_sequence_declaring_no_element_type_is_refused():
    y = helper.ValueInfoProto(name="y")
    y.type.sequence_type.SetInParent()
    data = _model([helper.make_node("SequenceConstruct", ["x"], ["y"])], [XV], [y])
    _refused(data, {}, "InvalidArgument", "Unsupported type proto value case:0")


INPUTS = {  # name: (node, feeds, onnxide error class (onnxruntime's), what its message says)
    "ReduceSum axes of rank 2": (helper.make_node("ReduceSum", ["x", "a"], ["y"]),
                                 {"x": X, "a": np.array([[1]], np.int64)}, "Fail",
                                 "An axes tensor must be a vector tensor"),
    "Squeeze axes of rank 0": (helper.make_node("Squeeze", ["x", "a"], ["y"]),
                               {"x": np.ones((1, 3), F), "a": np.array(0, np.int64)}, "Fail",
                               "An axes tensor must be a vector tensor"),
    "Unsqueeze axes of rank 2": (helper.make_node("Unsqueeze", ["x", "a"], ["y"]),
                                 {"x": X, "a": np.array([[0]], np.int64)}, "Fail",
                                 "An axes tensor must be a scalar or a 1-D tensor"),
    "Pad axes of rank 2": (helper.make_node("Pad", ["x", "p", "", "a"], ["y"]),
                           {"x": X, "p": np.zeros(2, np.int64), "a": np.array([[0]], np.int64)}, "Fail",
                           "Axes tensor should be a 1D tensor"),
    "TopK K of rank 0": (helper.make_node("TopK", ["x", "k"], ["y", "i"]), {"x": X, "k": np.array(1, np.int64)},
                         "Fail", "k tensor should be a 1D tensor of size 1"),
    "CumSum axis of 2 values": (helper.make_node("CumSum", ["x", "a"], ["y"]),
                                {"x": X, "a": np.array([1, 1], np.int64)}, "InvalidArgument",
                                "Axis tensor must be a scalar .0-D. or 1-D tensor with exactly one element"),
    "QLinearMatMul y_scale of rank 2": (
        helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"]),
        {"a": np.zeros((2, 4), np.int8), "as": np.ones(1, F), "az": np.zeros(1, np.int8),
         "b": np.zeros((4, 3), np.int8), "bs": np.ones(1, F), "bz": np.zeros(1, np.int8), "ys": np.ones((1, 1), F),
         "yz": np.zeros(1, np.int8)}, "Fail", "result scale must be a scalar or 1D tensor of size 1"),
}


@pytest.mark.parametrize("symbolic", [False, True], ids=["shapes known at load", "shapes known at run"])
@pytest.mark.parametrize("case", sorted(INPUTS))
def test_input_shapes_the_spec_forbids_are_refused(case, symbolic):
    """Refused at load where the shape is declared, before the kernel of any EP where it is known only then."""
    node, feeds, cls, match = INPUTS[case]
    data = _model([node], _typed(feeds, symbolic), [helper.ValueInfoProto(name=o) for o in node.output])
    _refused(data, feeds, cls, match)


def test_a_numeric_feed_for_a_string_input_is_refused():
    data = _model([helper.make_node("StringConcat", ["a", "b"], ["y"])],
                  [vi("a", T.STRING, [2]), vi("b", T.STRING, [2])], [vi("y", T.STRING, [2])], opset=20)
    feeds = {"a": np.ones(2, F), "b": np.array(["x", "y"], object)}
    _refused(data, feeds, "InvalidArgument", r"Unexpected input data type. Actual: \(tensor\(float\)\) , expected: "
                                             r"\(tensor\(string\)\)")


@pytest.mark.parametrize("where", ["graph output", "value_info"])
def test_a_declared_rank_unlike_the_inferred_one_is_refused(where):
    """onnx's checker (full_check: strict shape inference) refuses it; onnxruntime runs it, warning that it falls
    back to a lenient merge (onnxide refuses a rank it would contradict; other dims that differ it leaves, as
    onnxruntime)."""
    import onnx

    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    declared = vi("t" if where == "value_info" else "y", T.FLOAT, [2, 3, 4])
    data = _model(nodes, [XV], [declared if where == "graph output" else vi("y", T.FLOAT, [2, 3])],
                  value_info=[declared] if where == "value_info" else [])
    with pytest.raises(onnx.shape_inference.InferenceError, match="differ in rank"):
        onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    for ep in EPS:
        with pytest.raises(onnxide.Fail, match=r"differ in rank: \(2\) vs \(3\)"):
            onnxide.InferenceSession(data, providers=[ep])


def test_attention_present_key_without_present_value_is_refused():
    q = vi("q", T.FLOAT, [1, 2, 3, 4])
    data = _model([helper.make_node("Attention", ["q", "q", "q"], ["y", "pk"])], [q], [Y], opset=25)
    _refused(data, {}, "Fail", "present_key and present_value must be requested together")


def test_a_constant_of_shape_value_of_rank_0_is_refused():
    data = _model([helper.make_node("ConstantOfShape", ["s"], ["y"],
                                    value=numpy_helper.from_array(np.array(1.0, F)))], [vi("s", T.INT64, [3])], [Y])
    _refused(data, {}, "Fail", "'value' must be a one-element 1-D tensor")


def test_a_negative_flatten_axis_before_opset_11_is_refused():
    data = _model([helper.make_node("Flatten", ["x"], ["y"], axis=-1)], [XV], [Y], opset=9)
    _refused(data, {}, "Fail", r"Invalid value\(-1\) for attribute 'axis'")
    onnxide.InferenceSession(_model([helper.make_node("Flatten", ["x"], ["y"], axis=-1)], [XV], [Y], opset=11))
