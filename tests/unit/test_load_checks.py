"""Load-time model checks match onnxruntime's: duplicate definitions, duplicate node / attribute names, untyped main
inputs, undefined element types and attribute type / value-field mismatches are refused with onnxruntime's error
class; graphs in any node order and bodies reusing an enclosing name load, as they do there."""
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper

import onnxide
from onnxide import errors

ort = pytest.importorskip("onnxruntime")
vi = helper.make_tensor_value_info
X, Y = vi("x", T.FLOAT, [2]), vi("y", T.FLOAT, [2])


def _model(nodes, inputs=(X,), outputs=(Y,), inits=(), value_info=()):
    g = helper.make_graph(nodes, "g", list(inputs), list(outputs), list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _if(then_nodes, then_out, else_name="e"):
    then_b = helper.make_graph(then_nodes, "then", [], [vi(then_out, T.FLOAT, [2])])
    else_b = helper.make_graph([helper.make_node("Neg", ["x"], [else_name])], "else", [], [vi(else_name, T.FLOAT, [2])])
    return helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b)


def _mismatched_branch():
    m = _model([_if([helper.make_node("Relu", ["x"], ["t"])], "t")], [X, vi("c", T.BOOL, [])])
    m.graph.node[0].attribute[0].type = helper.AttributeProto.FLOATS  # its `g` field set: the checker's mismatch
    return m


def _duplicate_attribute():
    n = helper.make_node("Flatten", ["x"], ["y"], axis=0)
    n.attribute.extend([helper.make_attribute("axis", 1)])
    return _model([n], outputs=[vi("y", T.FLOAT, None)])


CASES = {
    "two nodes define y": (_model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])]),
                           errors.Fail),
    "a node redefines an input": (_model([helper.make_node("Relu", ["x"], ["x"]),
                                          helper.make_node("Neg", ["x"], ["y"])]), errors.Fail),
    "a node redefines an initializer": (_model([helper.make_node("Relu", ["x"], ["c"]),
                                                helper.make_node("Add", ["x", "c"], ["y"])],
                                               inits=[helper.make_tensor("c", T.FLOAT, [2], [1, 2])]), errors.Fail),
    "one node's two outputs named alike": (_model([helper.make_node("Split", ["x"], ["y", "y"], num_outputs=2)],
                                                  outputs=[vi("y", T.FLOAT, None)]), errors.Fail),
    "an input listed twice": (_model([helper.make_node("Relu", ["x"], ["y"])], [X, X]), errors.Fail),
    "two nodes named alike": (_model([helper.make_node("Relu", ["x"], ["t"], name="n"),
                                      helper.make_node("Neg", ["t"], ["y"], name="n")]), errors.Fail),
    "two Constant nodes named alike": (_model([
        helper.make_node("Constant", [], ["c1"], name="k", value=helper.make_tensor("v", T.FLOAT, [2], [1, 2])),
        helper.make_node("Constant", [], ["c2"], name="k", value=helper.make_tensor("v", T.FLOAT, [2], [3, 4])),
        helper.make_node("Add", ["x", "c1"], ["t"]), helper.make_node("Add", ["t", "c2"], ["y"])]), None),
    "an untyped input": (_model([helper.make_node("Relu", ["x"], ["y"])], [helper.ValueInfoProto(name="x")]),
                         errors.Fail),
    "element type 77": (_model([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])],
                               value_info=[vi("t", 77, [2])]), errors.InvalidArgument),
    "a branch attribute typed FLOATS": (_mismatched_branch(), errors.InvalidGraph),
    "an attribute given twice": (_duplicate_attribute(), errors.InvalidGraph),
    "nodes out of order": (_model([helper.make_node("Neg", ["t"], ["y"]), helper.make_node("Relu", ["x"], ["t"])]),
                           None),
    "a branch output named as the If's": (_model([_if([helper.make_node("Relu", ["x"], ["y"])], "y")],
                                                 [X, vi("c", T.BOOL, [])]), None),
    "an initializer twice (the last counts)": (_model([helper.make_node("Add", ["x", "c"], ["y"])], inits=[
        helper.make_tensor("c", T.FLOAT, [2], [1, 2]), helper.make_tensor("c", T.FLOAT, [2], [3, 4])]), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_load_checks_agree_with_onnxruntime(name):
    model, refused_with = CASES[name]
    data = model.SerializeToString()
    try:
        ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        ort_loads = True
    except Exception:  # noqa: BLE001 - onnxruntime's refusal, of whatever class
        ort_loads = False
    assert ort_loads == (refused_with is None)
    if refused_with is None:
        sess = onnxide.InferenceSession(data, providers=["CPUExecutionProvider"])
        feeds = {i.name: np.ones(2, np.float32) if i.name == "x" else np.array(True) for i in sess.get_inputs()}
        sess.run(None, feeds)
    else:
        with pytest.raises(refused_with):
            onnxide.InferenceSession(data, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("op, error", [("QLinearMatMul", errors.Fail), ("BitmaskDropout", errors.NotImplemented)])
def test_com_microsoft_op_without_a_schema_is_unregistered_as_in_onnxruntime(op, error):
    """A com.microsoft op type onnxruntime has no schema for (the quantization tool's float 8 QLinearMatMul) is an
    unregistered op (Fail), one it has a schema for but onnxide no kernel is NotImplemented, as in onnxruntime."""
    m = _model([helper.make_node(op, ["x"], ["y"], domain="com.microsoft")])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    data = m.SerializeToString()
    expected = {errors.Fail: "is not a registered function/op", errors.NotImplemented: "implementation"}[error]
    with pytest.raises(error, match=expected):
        onnxide.InferenceSession(data, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=expected):
        ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def test_ort_contrib_names_are_current():
    import os
    import subprocess
    import sys
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "gen_ort_contrib_names.py")
    assert subprocess.run([sys.executable, tool, "--check"]).returncode == 0, "run tools/gen_ort_contrib_names.py"
