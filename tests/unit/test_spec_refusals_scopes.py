"""Models the ONNX spec or onnx's checker rejects that onnxide ran until the seed-19 campaign's chunk 50,000 found
them (issue 19): bodies (their inputs, SSA across scopes, initializer names, a name), declared output types (maps,
sparse tensors), window attribute sizes, Resize's sizes, shape and scalar inputs of another rank, static dims that
cannot broadcast, a missing IR version. Each is refused on every EP here, with onnxruntime refusing the same model as
the oracle (its class; onnxide quotes its message)."""
import numpy as np
import onnx
import onnxide
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from test_spec_refusals import EPS, _model, _refused, vi

F = np.float32


def _if(then_nodes, then_out, else_inputs=()):
    """An If on input c whose then branch runs `then_nodes` (giving `then_out`) and whose else branch negates x."""
    then = helper.make_graph(then_nodes, "then", [], [vi(then_out, T.FLOAT, [3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", list(else_inputs),
                              [vi("e", T.FLOAT, [3])])
    return helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)


IO = [vi("x", T.FLOAT, [3]), vi("c", T.BOOL, [])]
FEEDS = {"x": np.ones(3, F), "c": np.array(True)}


def test_a_body_redefining_an_outer_value_is_refused():
    """onnx's SSA rule across scopes (onnxruntime checks it on each node with a body): a branch's node output named
    as a value its enclosing graph defined before the If."""
    data = _model([helper.make_node("Relu", ["x"], ["t"]), _if([helper.make_node("Neg", ["x"], ["t"]),
                                                                helper.make_node("Abs", ["t"], ["o"])], "o"),
                   helper.make_node("Add", ["y", "t"], ["z"])], IO, [vi("z", T.FLOAT, [3])])
    _refused(data, FEEDS, "InvalidGraph", r"single static assignment \(SSA\) form, however 't' has been used")


def test_bodies_may_hide_later_outer_names_and_use_their_own_inputs():
    """What onnxruntime and onnx's checker accept: a branch defining a name its enclosing graph defines only after
    the If (the scope is what comes before), and a Scan body input named as an outer value."""
    data = _model([_if([helper.make_node("Neg", ["x"], ["t"]), helper.make_node("Abs", ["t"], ["o"])], "o"),
                   helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Add", ["y", "t"], ["z"])], IO,
                  [vi("z", T.FLOAT, [3])])
    want = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, FEEDS)[0]
    body = helper.make_graph([helper.make_node("Add", ["t", "e"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"])],
                             "b", [vi("t", T.FLOAT, [1]), vi("e", T.FLOAT, [1])],
                             [vi("s2", T.FLOAT, [1]), vi("o", T.FLOAT, [1])])
    scan = _model([helper.make_node("Relu", ["s0"], ["t"]), helper.make_node("Scan", ["t", "xs"], ["sf", "os"],
                                                                           num_scan_inputs=1, body=body)],
                  [vi("s0", T.FLOAT, [1]), vi("xs", T.FLOAT, [3, 1])], [vi("sf", T.FLOAT, [1])])
    feeds = {"s0": np.ones(1, F), "xs": np.arange(3, dtype=F).reshape(3, 1)}
    scan_want = onnxruntime.InferenceSession(scan, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for ep in EPS:
        np.testing.assert_array_equal(onnxide.InferenceSession(data, providers=[ep]).run(None, FEEDS)[0], want)
        np.testing.assert_array_equal(onnxide.InferenceSession(scan, providers=[ep]).run(None, feeds)[0], scan_want)


def test_an_if_branch_with_inputs_is_refused():
    _refused(_model([_if([helper.make_node("Abs", ["x"], ["o"])], "o", [vi("extra", T.FLOAT, [3])])], IO,
                    [vi("y", T.FLOAT, [3])]), FEEDS, "Fail",
             "Size mismatch validating subgraph inputs. Got 0 inputs but subgraph has 1 inputs")


def _loop(iter_type, iter_dims):
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Add", ["s", "s"], ["s2"])],
                             "b", [vi("i", iter_type, iter_dims), vi("c", T.BOOL, []), vi("s", T.FLOAT, [2])],
                             [vi("c2", T.BOOL, []), vi("s2", T.FLOAT, [2])])
    return _model([helper.make_node("Loop", ["M", "", "s0"], ["sf"], body=body)],
                  [vi("M", T.INT64, []), vi("s0", T.FLOAT, [2])], [vi("sf", T.FLOAT, [2])])


LOOP_FEEDS = {"M": np.array(3), "s0": np.ones(2, F)}


def test_a_loop_body_declaring_its_iteration_number_float_is_refused():
    _refused(_loop(T.FLOAT16, []), LOOP_FEEDS, "Fail", r"Tensor element type mismatch\. 7 != 10")


def test_a_loop_body_declaring_its_iteration_number_of_rank_1_runs():
    """onnxruntime hands a Loop body no shapes (they may change per iteration): a rank-1 iteration number runs."""
    want = onnxruntime.InferenceSession(_loop(T.INT64, [1]), providers=["CPUExecutionProvider"]).run(None, LOOP_FEEDS)
    for ep in EPS:
        got = onnxide.InferenceSession(_loop(T.INT64, [1]), providers=[ep]).run(None, LOOP_FEEDS)
        np.testing.assert_array_equal(got[0], want[0])


def test_a_sequence_map_body_input_of_another_rank_is_refused():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["o"])], "body",
                             [vi("a", T.FLOAT, ["N"]), vi("b", T.FLOAT, ["N"])], [vi("o", T.FLOAT, ["N"])])
    data = _model([helper.make_node("SequenceMap", ["s", "x"], ["y"], body=body)],
                  [helper.make_tensor_sequence_value_info("s", T.FLOAT, ["N", "N"]), vi("x", T.FLOAT, ["N"])],
                  [helper.make_tensor_sequence_value_info("y", T.FLOAT, ["N"])])
    feeds = {"s": [np.ones((2, 2), F)], "x": np.ones(2, F)}
    _refused(data, feeds, "Fail", "Mismatch between number of inferred and declared dimensions. inferred=2 declared=1")


def test_declared_output_types_the_node_does_not_give_are_refused():
    """A graph output declared as a map where Cast gives a tensor; a Binarizer output declared double for a float X
    (Y is X's type parameter)."""
    out = helper.make_value_info("y", helper.make_map_type_proto(T.INT64, helper.make_tensor_type_proto(T.FLOAT, [])))
    _refused(_model([helper.make_node("Cast", ["x"], ["y"], to=T.DOUBLE)], [vi("x", T.FLOAT, [3])], [out]),
             {"x": np.ones(3, F)}, "Fail", r"Type \(map\(int64,tensor\(float\)\)\) of output arg \(y\)")
    binarizer = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml")
    _refused(_model([binarizer], [vi("x", T.FLOAT, [3])], [vi("y", T.DOUBLE, [3])], ml=3), {"x": np.ones(3, F)},
             "Fail", r"Type \(tensor\(double\)\) of output arg \(y\) of node \(\) does not match expected type "
                     r"\(tensor\(float\)\)")


@pytest.mark.parametrize("op, name, attrs, inputs", [
    ("MaxPool", "pads", {"kernel_shape": [2], "pads": []}, ["x"]),
    ("AveragePool", "strides", {"kernel_shape": [2], "strides": [1, 1]}, ["x"]),
    ("Conv", "dilations", {"dilations": []}, ["x", "w"]),
    ("Conv", "pads", {"pads": [0, 0, 0]}, ["x", "w"])])
def test_window_attributes_of_another_size_are_refused(op, name, attrs, inputs):
    """An empty list is a list given (onnx's getRepeatedAttribute): onnxide read `pads=[]` as the default."""
    x, w = np.ones((1, 1, 4), F), np.ones((1, 1, 2), F)
    node = helper.make_node(op, inputs, ["y"])
    node.attribute.extend(helper.make_attribute(k, v, attr_type=onnx.AttributeProto.INTS) for k, v in attrs.items())
    data = _model([node], [vi("x", T.FLOAT, [1, 1, 4])],
                  [vi("y", T.FLOAT, None)], inits=[numpy_helper.from_array(w, "w")] if "w" in inputs else ())
    _refused(data, {"x": x}, "Fail", rf"Op \({op}\) \[ShapeInferenceError\] Attribute {name} has incorrect size")


@pytest.mark.parametrize("sizes_dims, axes, message", [
    (None, None, r"Number of elements of input 'sizes' \(0\) must be same as rank of input 'X' \(4\)"),
    (["n"], [2, 3], r"Number of elements of input 'sizes' \(0\) does not match the number of axes \(2\)"),
    ([3], None, r"Number of elements of input 'sizes' \(3\) must be same as rank of input 'X' \(4\)"),
    ([0], None, r"Either `sizes` or `scales` must be provided")])
def test_resize_sizes_of_another_length_are_refused(sizes_dims, axes, message):
    """onnx's Resize inference counts a `sizes` graph input of no fixed length as 0 elements, so onnxruntime refuses
    it whatever is fed (the campaign's models declared the length -2 and -4)."""
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **({"axes": axes} if axes else {}))
    data = _model([node], [vi("x", T.FLOAT, [1, 1, 2, 2]), vi("sizes", T.INT64, sizes_dims)], [vi("y", T.FLOAT, None)],
                  opset=19)
    n = len(axes) if axes else 4
    sizes = np.zeros(0, np.int64) if sizes_dims == [0] else np.full(sizes_dims[0] if sizes_dims == [3] else n, 3)
    _refused(data, {"x": np.ones((1, 1, 2, 2), F), "sizes": sizes}, "Fail", message)


def test_duplicate_initializer_names_in_a_body_are_refused():
    """onnxruntime runs onnx's checker on each node with a body ('initializer name is not unique'); the main graph's
    duplicates it runs, keeping the last (test_load_checks)."""
    inits = [numpy_helper.from_array(np.ones(3, F), "w"), numpy_helper.from_array(np.full(3, 2, F), "w")]
    then = helper.make_graph([helper.make_node("Add", ["x", "w"], ["o"])], "then", [], [vi("o", T.FLOAT, [3])], inits)
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", T.FLOAT, [3])])
    data = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], IO,
                  [vi("y", T.FLOAT, [3])])
    _refused(data, FEEDS, "InvalidGraph", "w initializer name is not unique")


def test_a_dead_node_whose_static_dims_cannot_broadcast_is_refused():
    """onnx's broadcast inference runs on every node (chunk 0's dead Mul of [2, 3, 4, 3] by [5])."""
    data = _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Mul", ["x", "b"], ["dead"])],
                  [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [2, 3])],
                  inits=[numpy_helper.from_array(np.ones(5, F), "b")])
    _refused(data, {"x": np.ones((2, 3), F)}, "Fail", r"Op \(Mul\) \[ShapeInferenceError\] Incompatible dimensions")


def test_a_stale_value_info_does_not_count_as_dims_that_cannot_broadcast():
    """A declared value_info that disagrees with inference: onnxruntime merges leniently (the differing dims unknown)
    and runs the model; so does onnxide."""
    data = _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "b"], ["y"])],
                  [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [2, 3])],
                  inits=[numpy_helper.from_array(np.full(3, 2, F), "b")], value_info=[vi("r", T.FLOAT, [2, 5])])
    feeds = {"x": np.ones((2, 3), F)}
    want = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for ep in EPS:
        np.testing.assert_array_equal(onnxide.InferenceSession(data, providers=[ep]).run(None, feeds)[0], want)


def test_a_model_without_ir_version_is_refused():
    """onnxide's codec keeps no presence for ir_version: a model that lacks the field read as IR version 0."""
    m = onnx.load_from_string(_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [3])],
                                     [vi("y", T.FLOAT, [3])]))
    m.ClearField("ir_version")
    _refused(m.SerializeToString(), {"x": np.ones(3, F)}, "Fail", "Missing model IR version")



def test_a_body_without_a_name_is_refused():
    """onnx's checker on each node with a body (in onnxruntime): a graph's name is required."""
    then = helper.make_graph([helper.make_node("Abs", ["x"], ["o"])], "", [], [vi("o", T.FLOAT, [3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", T.FLOAT, [3])])
    data = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="the_if")], IO,
                  [vi("y", T.FLOAT, [3])])
    _refused(data, FEEDS, "InvalidGraph", r"\(\"the_if\", If, \"\", -1\) , Error Field 'name' of 'graph' is required")


@pytest.mark.parametrize("op, inputs, dims, message", [
    ("ConstantOfShape", ["s"], {"s": [1, 2]}, "shape input must be 1D tensor"),
    ("Expand", ["x", "s"], {"x": [1], "s": [1, 2]}, "'shape' input must be 1D tensor"),
    ("Dropout", ["x", "r"], {"x": [3], "r": [1]}, "Ratio of Dropout must be a scalar"),
    ("Dropout", ["x", "", "t"], {"x": [3], "t": [1]}, "training_mode of Dropout must be a scalar")])
def test_shape_and_scalar_inputs_of_another_rank_are_refused(op, inputs, dims, message):
    """onnx's shape inference (in onnxruntime) checks these inputs' ranks whatever is fed."""
    types = {"x": T.FLOAT, "s": T.INT64, "r": T.FLOAT, "t": T.BOOL}
    values = {"x": np.ones(dims.get("x", [1]), F), "s": np.array([[2, 3]], np.int64), "r": np.array([0.5], F),
              "t": np.array([False])}
    data = _model([helper.make_node(op, inputs, ["y"])], [vi(n, types[n], dims[n]) for n in inputs if n],
                  [vi("y", T.FLOAT, None)])
    _refused(data, {n: values[n] for n in inputs if n}, "Fail", message)


def test_an_output_declared_sparse_where_the_node_gives_a_tensor_is_refused():
    """A Cast's output declared as a sparse tensor (the CI fuzz sample's mutant 585 of seed 20261203, which reached a
    raw TypeError); a Constant's sparse_value output declared sparse still loads (onnxruntime's sparse tests)."""
    out = helper.make_sparse_tensor_value_info("y", T.FLOAT, [2])
    data = _model([helper.make_node("Cast", ["x"], ["y"], to=T.FLOAT)], [vi("x", T.DOUBLE, [2])], [out])
    _refused(data, {"x": np.ones(2)}, "Fail",
             r"Type \(sparse_tensor\(float\)\) of output arg \(y\) of node \(\) does not match expected type")
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([5.0], F), "v"),
                                       numpy_helper.from_array(np.array([1], np.int64), "i"), [2])
    const = _model([helper.make_node("Constant", [], ["y"], sparse_value=sparse)], [], [out])
    onnxruntime.InferenceSession(const, providers=["CPUExecutionProvider"])
    for ep in EPS:
        assert [o.name for o in onnxide.InferenceSession(const, providers=[ep]).get_outputs()] == ["y"]
