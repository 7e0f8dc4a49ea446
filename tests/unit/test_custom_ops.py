"""Python custom ops (onnxide.extensions): @onnx_op with register_custom_ops_library(get_library_path()) and per-session
register_custom_op, attributes, shape functions, placement on the CPU EP behind other EPs, and every error path —
results compared with numpy computed here, messages with onnxruntime's."""
import asyncio
import concurrent.futures

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as TP, helper

import onnxide as ort
from onnxide.errors import EPFail, Fail, InvalidArgument, InvalidGraph, NotImplemented as OrtNotImplemented, \
    RuntimeException
from onnxide.extensions import CustomOp, PyCustomOpDef as D, get_library_path, onnx_op
from onnxide.ops import custom

CONTRIB = "ai.onnx.contrib"
PROVIDERS = [None, ["CPUExecutionProvider"]]  # the default list (the native EP first, natively) and numpy alone


@pytest.fixture(autouse=True)
def _declared():
    """Each test's @onnx_op declarations are forgotten afterwards."""
    saved = dict(custom.DECLARED)
    yield
    custom.DECLARED.clear()
    custom.DECLARED.update(saved)


def _model(nodes, inputs, outputs, domains=(CONTRIB,)):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) if isinstance(o, tuple) else
                           helper.make_empty_tensor_value_info(o) for o in outputs])
    ops = [helper.make_opsetid("", 17)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(g, opset_imports=ops).SerializeToString()


def _library():
    so = ort.SessionOptions()
    so.register_custom_ops_library(get_library_path())
    return so


def _scaled_model(alpha=2.5):
    """x -> Relu -> ai.onnx.contrib:ScaledTanh(alpha) -> Add(x): ONNX ops on both sides of the custom one."""
    return _model([helper.make_node("Relu", ["x"], ["r"]),
                   helper.make_node("ScaledTanh", ["r"], ["t"], domain=CONTRIB, name="st", alpha=alpha),
                   helper.make_node("Add", ["t", "x"], ["y"])],
                  [("x", TP.FLOAT, ["n", 4])], [("y", TP.FLOAT, ["n", 4])])


def _declare_scaled_tanh():
    @onnx_op(op_type="ScaledTanh", inputs=[D.dt_float], outputs=[D.dt_float], attrs={"alpha": D.dt_float})
    def scaled_tanh(x, alpha=1.0):
        return np.tanh(x) * np.float32(alpha)
    return scaled_tanh


@pytest.mark.parametrize("providers", PROVIDERS)
def test_library_flow_runs_the_decorated_op(providers):
    op = _declare_scaled_tanh()
    assert isinstance(op, CustomOp) and op.domain == CONTRIB
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    sess = ort.InferenceSession(_scaled_model(2.5), _library(), providers=providers)
    (y,) = sess.run(None, {"x": x})
    want = np.tanh(np.maximum(x, 0)) * 2.5 + x
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    assert y.dtype == np.float32
    # the attribute's default where the node has none
    (y1,) = ort.InferenceSession(_model([helper.make_node("ScaledTanh", ["x"], ["y"], domain=CONTRIB)],
                                        [("x", TP.FLOAT, [2])], [("y", TP.FLOAT, [2])]),
                                 _library(), providers=providers).run(None, {"x": x[0, :2]})
    np.testing.assert_allclose(y1, np.tanh(x[0, :2]), rtol=1e-6)


def test_custom_node_goes_to_the_cpu_ep_behind_the_native_one():
    _declare_scaled_tanh()
    so = _library()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = ort.InferenceSession(_scaled_model(), so)
    placed = {sub.get_nodes()[0].op_type: sub.ep_name for sub in sess.get_provider_graph_assignment_info()}
    assert placed["ScaledTanh"] == "CPUExecutionProvider"
    assert sess.get_providers()[-1] == "CPUExecutionProvider"


def test_custom_node_goes_to_the_cpu_ep_behind_a_device_ep():
    """A device EP that would claim the domain (the mock claims com.microsoft nodes) leaves a custom op to the CPU EP:
    the values cross to the host and back, and the result is the function's."""
    from device.mock_device import MOCK, install
    install()

    @onnx_op(op_type="CubePlusOne", domain="com.microsoft", inputs=[D.dt_float], outputs=[D.dt_float])
    def cube_plus_one(x):
        assert type(x) is np.ndarray  # a host array, not a device handle
        return x ** 3 + np.float32(1)

    m = _model([helper.make_node("Relu", ["x"], ["r"]),
                helper.make_node("CubePlusOne", ["r"], ["c"], domain="com.microsoft"),
                helper.make_node("Neg", ["c"], ["y"])], [("x", TP.FLOAT, [5])], [("y", TP.FLOAT, [5])],
               domains=("com.microsoft",))
    so = _library()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = ort.InferenceSession(m, so, providers=[MOCK])
    placed = {sub.get_nodes()[0].op_type: sub.ep_name for sub in sess.get_provider_graph_assignment_info()}
    assert placed == {"Relu": MOCK, "CubePlusOne": "CPUExecutionProvider", "Neg": MOCK}
    x = np.array([-2, -0.5, 0, 0.5, 2], np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], -(np.maximum(x, 0) ** 3 + 1), rtol=1e-6)


@pytest.mark.parametrize("providers", PROVIDERS)
def test_per_session_registration_shape_fn_and_several_outputs(providers):
    """register_custom_op: for these options only (another session does not know the op); two outputs of different
    types whose shapes the shape function gives (get_outputs shows them)."""

    def split_pairs(x, *, axis=0):
        lo = np.minimum(x[0::2], x[1::2])
        return lo, np.argmax(np.stack([x[0::2], x[1::2]]), axis=0).astype(np.int64)

    def pairs_shape(x, axis=0):
        return [[x[0] // 2] + x[1:], [x[0] // 2] + x[1:]]

    so = ort.SessionOptions()
    op = so.register_custom_op(split_pairs, op_type="SplitPairs", domain="my.ops", inputs=[D.dt_float],
                               outputs=[D.dt_float, D.dt_int64], attrs={"axis": D.dt_int64}, shape_fn=pairs_shape)
    assert op.name == "my.ops:SplitPairs"
    m = _model([helper.make_node("SplitPairs", ["x"], ["lo", "which"], domain="my.ops", axis=0)],
               [("x", TP.FLOAT, [6, 3])], ["lo", "which"], domains=("my.ops",))  # (outputs typed by inference)
    sess = ort.InferenceSession(m, so, providers=providers)
    assert [(o.name, o.type, o.shape) for o in sess.get_outputs()] == \
        [("lo", "tensor(float)", [3, 3]), ("which", "tensor(int64)", [3, 3])]
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    lo, which = sess.run(None, {"x": x})
    pairs = x.reshape(3, 2, 3)
    np.testing.assert_array_equal(lo, pairs.min(axis=1))
    np.testing.assert_array_equal(which, (pairs[:, 1] > pairs[:, 0]).astype(np.int64))
    with pytest.raises(Fail, match=r"Fatal error: my\.ops:SplitPairs\(-1\) is not a registered function/op"):
        ort.InferenceSession(m, providers=providers)


def test_list_and_string_attributes_and_string_tensors():
    @onnx_op(op_type="Tag", inputs=[D.dt_string, D.dt_int64], outputs=[D.dt_string],
             attrs={"prefix": D.dt_string, "weights": [D.dt_int64]})
    def tag(words, counts, prefix="", weights=()):
        w = np.asarray(weights, np.int64)
        return np.array([f"{prefix}{s}:{int(c * w.sum())}" for s, c in zip(words, counts)])  # (a str array)

    m = _model([helper.make_node("Tag", ["s", "c"], ["y"], domain=CONTRIB, prefix="#", weights=[1, 2, 3])],
               [("s", TP.STRING, [2]), ("c", TP.INT64, [2])], [("y", TP.STRING, [2])])
    (y,) = ort.InferenceSession(m, _library()).run(None, {"s": np.array(["a", "bc"], object),
                                                           "c": np.array([1, 4], np.int64)})
    assert y.dtype == object and y.tolist() == ["#a:6", "#bc:24"]


def test_custom_op_inside_a_loop_body_and_not_folded():
    """A node in an If branch resolves to the session's op too; a node of constant inputs runs at run time (a user's
    function is never folded at load)."""
    calls = []

    @onnx_op(op_type="Twice")
    def twice(x):
        calls.append(x.shape)
        return x * np.float32(2)

    then_g = helper.make_graph([helper.make_node("Twice", ["x"], ["t"], domain=CONTRIB)], "then", [],
                               [helper.make_tensor_value_info("t", TP.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TP.FLOAT, [3])])
    c = helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", TP.FLOAT, [2], [1.5, -1]))
    m = _model([helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g), c,
                helper.make_node("Twice", ["k"], ["z"], domain=CONTRIB)],
               [("cond", TP.BOOL, []), ("x", TP.FLOAT, [3])], [("y", TP.FLOAT, [3]), ("z", TP.FLOAT, [2])])
    sess = ort.InferenceSession(m, _library())
    assert calls == []
    x = np.array([1, -2, 3], np.float32)
    y, z = sess.run(None, {"cond": np.array(True), "x": x})
    np.testing.assert_array_equal(y, [2, -4, 6])
    np.testing.assert_array_equal(z, [3, -2])
    y, _ = sess.run(None, {"cond": np.array(False), "x": x})
    np.testing.assert_array_equal(y, [-1, 2, -3])
    assert sorted(calls) == [(2,), (2,), (3,)]


def test_async_kernel_runs_with_run_async_and_sync_run_says_so():
    async def later(x):
        await asyncio.sleep(0)
        return x + np.float32(1)

    so = ort.SessionOptions()
    so.register_custom_op(later, op_type="Later")
    m = _model([helper.make_node("Later", ["x"], ["y"], domain=CONTRIB, name="l")],
               [("x", TP.FLOAT, [2])], [("y", TP.FLOAT, [2])])
    sess = ort.InferenceSession(m, so)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # its own thread: an earlier test may leave a loop running
        (y,) = pool.submit(asyncio.run, sess.run_async(None, {"x": np.array([1, 2], np.float32)})).result()
    np.testing.assert_array_equal(y, [2, 3])
    with pytest.raises(EPFail, match="Later node. Name:'l'.*must be awaited"):
        sess.run(None, {"x": np.array([1, 2], np.float32)})


# ------------------------------------------------------------------------------------------------------ errors

def _one(fn, inputs=(D.dt_float,), outputs=(D.dt_float,), shape_fn=None, x_shape=(2, 3), y_shape=None, **node_attrs):
    so = ort.SessionOptions()
    so.register_custom_op(fn, op_type="Bad", inputs=list(inputs), outputs=list(outputs), shape_fn=shape_fn)
    m = _model([helper.make_node("Bad", ["x"], ["y"], domain=CONTRIB, name="bad", **node_attrs)],
               [("x", TP.FLOAT, list(x_shape))], [("y", TP.FLOAT, y_shape)])
    return so, m


@pytest.mark.parametrize("providers", PROVIDERS)
@pytest.mark.parametrize("fn, y_shape, shape_fn, message", [
    (lambda x: x.astype(np.float64), None, None,
     r" output 0 \('y'\) is tensor\(double\), declared tensor\(float\)"),
    (lambda x: x.tolist(), None, None, r" output 0 \('y'\) is a list, not a numpy array"),
    (lambda x: 3.0, None, None, r" output 0 \('y'\) is a float, not a numpy array"),
    (lambda x: (x, x), None, None, r" returned 2 value\(s\), the node has 1 output\(s\)"),
    (lambda x: x.reshape(-1), [2, 3], None,
     r" output 0 \('y'\) has shape \[6\], expected \[2, 3\] \(declared in the model\)"),
    (lambda x: x[:1], ["n", 3], None, None),  # a symbolic dim takes any size: no error
    (lambda x: x[:, :2], None, lambda s: [s],
     r" output 0 \('y'\) has shape \[2, 2\], expected \[2, 3\] \(from its shape_fn\)"),
    (lambda x: x, None, lambda s: s, r": shape_fn must return a list with one shape"),
])
def test_bad_outputs_name_the_node_and_the_op(providers, fn, y_shape, shape_fn, message):
    so, m = _one(fn, shape_fn=shape_fn, y_shape=y_shape)
    sess = ort.InferenceSession(m, so, providers=providers)
    x = np.ones((2, 3), np.float32)
    if message is None:
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x[:1])
        return
    with pytest.raises(RuntimeException, match=r"^Non-zero status code returned while running Bad node\. Name:'bad' "
                                               r"Status Message: custom op ai\.onnx\.contrib:Bad" + message):
        sess.run(None, {"x": x})


def test_a_failing_function_is_a_runtime_exception_naming_the_node():
    def boom(x):
        raise ValueError("no negatives please")
    so, m = _one(boom)
    with pytest.raises(RuntimeException, match=r"running Bad node\. Name:'bad' .*ValueError: no negatives please"):
        ort.InferenceSession(m, so).run(None, {"x": np.ones((2, 3), np.float32)})


def test_unregistered_custom_op_fails_at_load_like_onnxruntime():
    m = _model([helper.make_node("Nowhere", ["x"], ["y"], domain=CONTRIB)], [("x", TP.FLOAT, [2])],
               [("y", TP.FLOAT, [2])])
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail) as theirs:
        onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"])
    for providers in PROVIDERS:
        with pytest.raises(Fail) as ours:
            ort.InferenceSession(m, providers=providers)
        assert str(ours.value) == "Fatal error: ai.onnx.contrib:Nowhere(-1) is not a registered function/op"
        assert str(ours.value) in str(theirs.value)
    _declare_scaled_tanh()  # declared but the library is not registered: still unknown to the session
    with pytest.raises(Fail, match="ai.onnx.contrib:ScaledTanh"):
        ort.InferenceSession(_scaled_model())


@pytest.mark.parametrize("node_attrs, inputs, message", [
    ({"alpha": 2}, [D.dt_float], r"mismatched attribute type 'alpha' of custom op ai\.onnx\.contrib:Bad: "
                                 r"expected FLOAT"),
    ({"beta": 1.0}, [D.dt_float], r"declares no attribute\(s\) \['beta'\]"),
    ({}, [D.dt_float, D.dt_float], r"takes 2 input\(s\), the node has 1"),
    ({}, [D.dt_int64], r"Type 'tensor\(float\)' of input parameter \(x\) of operator \(Bad\) in node \(bad\) is "
                       r"invalid: custom op ai\.onnx\.contrib:Bad takes tensor\(int64\)"),
])
def test_nodes_that_do_not_fit_the_declaration_fail_at_load(node_attrs, inputs, message):
    so = ort.SessionOptions()
    so.register_custom_op(lambda x, alpha=1.0: x, op_type="Bad", inputs=inputs, attrs={"alpha": D.dt_float})
    m = _model([helper.make_node("Bad", ["x"], ["y"], domain=CONTRIB, name="bad", **node_attrs)],
               [("x", TP.FLOAT, [2])], [("y", TP.FLOAT, [2])])
    with pytest.raises(InvalidGraph, match=message):
        ort.InferenceSession(m, so)


def test_required_attribute_and_declared_output_type_checked_at_load():
    so = ort.SessionOptions()
    so.register_custom_op(lambda x, *, k: x, op_type="NeedsK", attrs={"k": D.dt_int64})
    m = _model([helper.make_node("NeedsK", ["x"], ["y"], domain=CONTRIB, name="nk")], [("x", TP.FLOAT, [2])],
               [("y", TP.FLOAT, [2])])
    with pytest.raises(InvalidGraph, match=r"NeedsK node\. Name:'nk': custom op ai\.onnx\.contrib:NeedsK needs "
                                           r"attribute\(s\) \['k'\]"):
        ort.InferenceSession(m, so)
    so = ort.SessionOptions()
    so.register_custom_op(lambda x: x, op_type="F")
    m = _model([helper.make_node("F", ["x"], ["y"], domain=CONTRIB, name="f")], [("x", TP.FLOAT, [2])],
               [("y", TP.DOUBLE, [2])])
    with pytest.raises(Fail, match=r"^Type Error: Type \(tensor\(double\)\) of output arg \(y\) of node \(f\) does "
                                   r"not match expected type \(tensor\(float\)\)\.$"):  # (onnxruntime's words)
        ort.InferenceSession(m, so)


def test_bad_declarations_and_registrations():
    with pytest.raises(InvalidArgument, match="ONNX domains"):
        onnx_op(op_type="Relu", domain="")(lambda x: x)
    with pytest.raises(InvalidArgument, match="onnxide implements this op itself"):
        onnx_op(op_type="Gelu", domain="com.microsoft")(lambda x: x)
    with pytest.raises(InvalidArgument, match="is not an element type"):
        onnx_op(op_type="T", inputs=["float"])(lambda x: x)
    with pytest.raises(InvalidArgument, match="attribute type"):
        onnx_op(op_type="T", attrs={"a": D.dt_double})(lambda x, a=0: x)
    with pytest.raises(InvalidArgument, match=r"no keyword parameter for attribute\(s\) \['a'\]"):
        onnx_op(op_type="T", attrs={"a": D.dt_int64})(lambda x: x)
    so = ort.SessionOptions()
    so.register_custom_op(lambda x: x, op_type="T")
    with pytest.raises(InvalidArgument, match="another custom op ai.onnx.contrib:T"):
        so.register_custom_op(lambda x: -x, op_type="T")
    with pytest.raises(OrtNotImplemented, match="compiled onnxruntime code"):
        so.register_custom_ops_library("/usr/lib/libcustom_op_library.so")


def test_explicit_registration_comes_before_the_library_and_options_are_copied():
    _declare_scaled_tanh()
    so = _library()
    so.register_custom_op(lambda x, alpha=1.0: x * np.float32(-alpha), op_type="ScaledTanh",
                          attrs={"alpha": D.dt_float})
    x = np.array([[0.5, 1, 2, 3]], np.float32)
    (y,) = ort.InferenceSession(_scaled_model(2.0), so).run(None, {"x": x})
    np.testing.assert_allclose(y, -2 * x + x, rtol=1e-6)
    so2 = ort.SessionOptions()
    sess = ort.InferenceSession(_model([helper.make_node("Twice2", ["x"], ["y"], domain=CONTRIB)],
                                       [("x", TP.FLOAT, [1, 4])], [("y", TP.FLOAT, [1, 4])]),
                                (so2.register_custom_op(lambda x: x * np.float32(2), op_type="Twice2"), so2)[1])
    so2._custom_ops.clear()  # later changes to the options do not reach the session
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], 2 * x)
