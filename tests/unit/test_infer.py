"""Type and shape inference (ir/infer.py running the rules registered next to each op's kernel): for a
representative set of ops — multi-output, sequence, optional and control-flow ones included — the element types and
shapes a session describes for undeclared outputs are those running the model produces (and, for element types,
those onnx's own shape inference gives); unknown stays unknown; every ai.onnx / com.microsoft op has one rule."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide as ort
from onnxide.ops import registry
from onnxide.partition.spec import graph_types

rng = np.random.default_rng(0)
F32 = np.float32


def _x(*shape, dtype=F32):
    return rng.standard_normal(shape).astype(dtype)


def _const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def _model(nodes, feeds, inits=(), opset=18, outputs=None, ms=False):
    """A model of `nodes` with typed inputs for `feeds` and every node output (or `outputs`) as an untyped graph
    output, so inference alone describes them."""
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    names = outputs or [o for n in nodes for o in n.output if o]
    g = helper.make_graph(nodes, "g", inputs, [onnx.ValueInfoProto(name=o) for o in names], list(inits))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    return helper.make_model(g, opset_imports=opsets, ir_version=8)


def _node(op, ins, outs, domain="", **attrs):
    return helper.make_node(op, ins, outs, domain=domain, **attrs)


def _type_string(value):
    """ORT's type string of a run's value: tensor(T), seq(tensor(T)) (an empty sequence: unknown element)."""
    if isinstance(value, list):
        return f"seq({_type_string(value[0])})" if value else None
    code = helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype)
    return f"tensor({TensorProto.DataType.Name(code).lower()})"


def _session(model):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the rules, not the passes
    return ort.InferenceSession(model.SerializeToString(), so)


def _onnx_elem_types(model):
    """name -> element type code of the graph outputs onnx's shape inference types as tensors."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    return {k: t.tensor_type.elem_type for k, t in types.items()
            if t.HasField("tensor_type") and t.tensor_type.elem_type}


def check(model, feeds, complete=True):
    """Every described output has the run's type and (where described) dims; `complete`: every dim described."""
    sess = _session(model)
    outs = sess.run(None, feeds)
    onnx_types = _onnx_elem_types(model)
    for arg, value in zip(sess.get_outputs(), outs):
        want = _type_string(value)
        if want is not None:
            assert arg.type == want, (arg.name, arg.type, want)
        if isinstance(value, list):
            continue
        value = np.asarray(value)
        if arg.name in onnx_types:
            assert arg.type == f"tensor({TensorProto.DataType.Name(onnx_types[arg.name]).lower()})", arg.name
        if complete:
            assert arg.shape == list(value.shape), (arg.name, arg.shape, value.shape)
        elif arg.shape:  # [] is an unknown rank (or a scalar), as onnxruntime reports it
            assert len(arg.shape) == value.ndim, (arg.name, arg.shape, value.shape)
            assert all(d is None or d == v for d, v in zip(arg.shape, value.shape)), (arg.name, arg.shape,
                                                                                      value.shape)
    return sess


# --- elementwise, comparisons, casts ---------------------------------------------------------------------------

def test_unary_binary_and_comparisons():
    nodes = [_node("Relu", ["x"], ["r"]), _node("Sigmoid", ["r"], ["s"]), _node("Add", ["s", "b"], ["a"]),
             _node("Pow", ["a", "e"], ["p"]), _node("Equal", ["p", "b"], ["eq"]),
             _node("Where", ["eq", "x", "p"], ["w"]), _node("IsNaN", ["w"], ["nan"]), _node("Not", ["nan"], ["ok"]),
             _node("Max", ["x", "b", "a"], ["m"])]
    feeds = {"x": _x(2, 3), "b": _x(3), "e": np.array(2, np.int64)}
    check(_model(nodes, feeds), feeds)


def test_casts_keep_dims_and_take_the_target_type():
    nodes = [_node("Cast", ["x"], ["i"], to=TensorProto.INT64), _node("CastLike", ["x", "h"], ["l"]),
             _node("Cast", ["l"], ["d"], to=TensorProto.DOUBLE)]
    feeds = {"x": _x(2, 3), "h": _x(1, dtype=np.float16)}
    check(_model(nodes, feeds), feeds)


def test_cast_1_names_its_target_type():
    node = _node("Cast", ["x"], ["y"], to="INT32")
    feeds = {"x": _x(4)}
    sess = _session(_model([node], feeds, opset=1))
    out = sess.run(None, feeds)[0]
    assert sess.get_outputs()[0].type == _type_string(out) == "tensor(int32)"


# --- matmuls and windows ---------------------------------------------------------------------------------------

def test_matmul_gemm_and_conv_pool():
    nodes = [_node("MatMul", ["x", "w"], ["mm"]), _node("MatMul", ["x3", "w"], ["bmm"]),
             _node("Gemm", ["x", "wt"], ["g"], transB=1), _node("Conv", ["img", "k"], ["c"], pads=[1, 1, 1, 1]),
             _node("MaxPool", ["c"], ["mp", "idx"], kernel_shape=[2, 2], strides=[2, 2]),
             _node("GlobalAveragePool", ["c"], ["gap"]), _node("Einsum", ["x", "w"], ["es"], equation="ij,jk->ik")]
    feeds = {"x": _x(2, 3), "x3": _x(5, 2, 3), "w": _x(3, 4), "wt": _x(4, 3), "img": _x(1, 2, 6, 6),
             "k": _x(3, 2, 3, 3)}
    check(_model(nodes, feeds), feeds, complete=False)
    sess = _session(_model(nodes[:5], feeds))
    assert [o.shape for o in sess.get_outputs()] == [[2, 4], [5, 2, 4], [2, 4], [1, 3, 6, 6], [1, 3, 3, 3],
                                                     [1, 3, 3, 3]][:len(sess.get_outputs())]


def test_fused_matmul_transposes_before_multiplying():
    node = _node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft", transB=1)
    feeds = {"a": _x(2, 3), "b": _x(5, 3)}
    check(_model([node], feeds, ms=True), feeds)


def test_gemm_type_without_shapes():
    node = _node("Gemm", ["x", "w"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                        helper.make_tensor_value_info("w", TensorProto.FLOAT, None)],
                          [onnx.ValueInfoProto(name="y")])
    sess = _session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8))
    assert (sess.get_outputs()[0].type, sess.get_outputs()[0].shape) == ("tensor(float)", [None, None])


# --- shape manipulation ----------------------------------------------------------------------------------------

def test_shape_ops_with_constant_parameters():
    inits = [_const("shape", np.array([0, -1], np.int64)), _const("axes", np.array([1], np.int64)),
             _const("split", np.array([1, 2], np.int64)), _const("idx", np.array([[0, 2]], np.int64)),
             _const("starts", np.array([0, 1], np.int64)), _const("ends", np.array([2, 4], np.int64)),
             _const("pads", np.array([0, 1, 0, 2], np.int64)), _const("reps", np.array([1, 2, 2], np.int64))]
    nodes = [_node("Reshape", ["x", "shape"], ["rs"]), _node("Transpose", ["x"], ["tr"], perm=[2, 0, 1]),
             _node("Concat", ["x", "x"], ["cc"], axis=1), _node("Split", ["x", "split"], ["s0", "s1"], axis=2),
             _node("Unsqueeze", ["rs", "axes"], ["us"]), _node("Squeeze", ["us", "axes"], ["sq"]),
             _node("Flatten", ["x"], ["fl"], axis=2), _node("Gather", ["x", "idx"], ["ga"], axis=2),
             _node("Slice", ["rs", "starts", "ends"], ["sl"]), _node("Pad", ["rs", "pads"], ["pd"]),
             _node("Tile", ["x", "reps"], ["tl"]), _node("Identity", ["x"], ["id"]),
             _node("DepthToSpace", ["img"], ["d2s"], blocksize=2)]
    feeds = {"x": _x(2, 4, 3), "img": _x(1, 8, 2, 3)}
    check(_model(nodes, feeds, inits), feeds)


def test_shape_values_flow_into_constant_of_shape_expand_and_range():
    inits = [_const("zero", np.array(0, np.int64)), _const("one", np.array(1, np.int64))]
    nodes = [_node("Shape", ["x"], ["sh"]), _node("Shape", ["x"], ["last"], start=-1), _node("Size", ["x"], ["n"]),
             _node("ConstantOfShape", ["sh"], ["zeros"], value=numpy_helper.from_array(np.array([7], np.int32))),
             _node("Expand", ["b", "sh"], ["ex"]), _node("Squeeze", ["last"], ["k"]),
             _node("Range", ["zero", "k", "one"], ["rg"])]
    feeds = {"x": _x(2, 5), "b": _x(5)}
    check(_model(nodes, feeds, inits), feeds)


def test_reductions_arg_and_top_k():
    inits = [_const("axes", np.array([1], np.int64)), _const("k", np.array([2], np.int64))]
    nodes = [_node("ReduceSum", ["x", "axes"], ["rsum"], keepdims=0), _node("ReduceMean", ["x"], ["rmean"]),
             _node("ArgMax", ["x"], ["am"], axis=1, keepdims=0), _node("TopK", ["x", "k"], ["vals", "inds"]),
             _node("Softmax", ["x"], ["sm"]), _node("CumSum", ["x", "ax0"], ["cs"])]
    feeds = {"x": _x(3, 4)}
    check(_model(nodes, feeds, inits + [_const("ax0", np.array(0, np.int64))]), feeds)


def test_data_dependent_dims_stay_unknown():
    nodes = [_node("NonZero", ["x"], ["nz"]), _node("Unique", ["v"], ["u", "ui", "uinv", "uc"]),
             _node("Reshape", ["x", "target"], ["rs"]), _node("Squeeze", ["y1", "axes"], ["sq"]),
             _node("Compress", ["x", "cond"], ["cp"], axis=1)]
    feeds = {"x": _x(2, 3), "v": np.array([3, 1, 3, 2], np.int64), "target": np.array([3, 2], np.int64),
             "y1": _x(1, 3, 1), "axes": np.array([0], np.int64), "cond": np.array([True, False, True])}
    sess = check(_model(nodes, feeds), feeds, complete=False)
    shapes = {o.name: o.shape for o in sess.get_outputs()}
    assert shapes["nz"] == [2, None] and shapes["u"] == [None] and shapes["cp"] == [2, None]
    assert shapes["rs"] == [None, None]  # a shape input that is not a constant: its entries are unknown
    assert shapes["sq"] == []  # which axes go is not known (onnxruntime says [] for an unknown rank)


# --- multi-output normalisation, dropout, recurrent and quantization ops -------------------------------------

def test_multi_output_normalisations_and_dropout():
    nodes = [_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn", "rm", "rv"], training_mode=1),
             _node("LayerNormalization", ["x", "g"], ["ln", "mean", "inv"], axis=1),
             _node("Dropout", ["x", "ratio", "train"], ["dr", "mask"], seed=0)]
    feeds = {"x": _x(2, 3, 4), "s": _x(3), "b": _x(3), "m": _x(3), "v": np.abs(_x(3)), "g": _x(3, 4),
             "ratio": np.array(0.5, F32), "train": np.array(True)}
    check(_model(nodes, feeds, opset=15), feeds)


def test_recurrent_outputs():
    nodes = [_node("LSTM", ["x", "w", "r"], ["y", "yh", "yc"], hidden_size=5, direction="bidirectional"),
             _node("GRU", ["x", "wg", "rg"], ["gy", "gh"], hidden_size=5, layout=0)]
    feeds = {"x": _x(4, 2, 3), "w": _x(2, 20, 3), "r": _x(2, 20, 5), "wg": _x(1, 15, 3), "rg": _x(1, 15, 5)}
    check(_model(nodes, feeds, opset=14), feeds)


def test_quantization_types():
    inits = [_const("sc", np.array(0.1, F32)), _const("zp", np.array(3, np.int8))]
    nodes = [_node("QuantizeLinear", ["x", "sc", "zp"], ["q"]), _node("DequantizeLinear", ["q", "sc", "zp"], ["dq"]),
             _node("QuantizeLinear", ["x", "sc"], ["qu"]), _node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"])]
    feeds = {"x": _x(2, 3)}
    check(_model(nodes, feeds, inits, opset=19), feeds)


def test_contrib_ops():
    nodes = [_node("SkipLayerNormalization", ["x", "skip", "g", "b"], ["y", "mean", "inv", "sum"],
                   domain="com.microsoft"),
             _node("Gelu", ["y"], ["gelu"], domain="com.microsoft"),
             _node("FastGelu", ["x", "b"], ["fg"], domain="com.microsoft")]
    feeds = {"x": _x(2, 3, 4), "skip": _x(2, 3, 4), "g": _x(4), "b": _x(4)}
    check(_model(nodes, feeds, ms=True), feeds)


def test_constants_and_random_generators():
    nodes = [_node("Constant", [], ["ci"], value_ints=[1, 2, 3]), _node("Constant", [], ["cf"], value_float=1.5),
             _node("RandomNormal", [], ["rn"], shape=[2, 3], dtype=TensorProto.DOUBLE),
             _node("RandomUniformLike", ["x"], ["ru"]), _node("EyeLike", ["x"], ["eye"], dtype=TensorProto.INT32),
             _node("OneHot", ["ind", "depth", "vals"], ["oh"])]
    inits = [_const("depth", np.array(4, np.int64)), _const("vals", np.array([0, 9], np.int32))]
    feeds = {"x": _x(3, 3), "ind": np.array([1, 3], np.int64)}
    check(_model(nodes, feeds, inits), feeds)


# --- sequences, optionals, control flow ------------------------------------------------------------------------

def test_sequence_ops():
    nodes = [_node("SequenceConstruct", ["x", "x"], ["seq"]), _node("SequenceAt", ["seq", "zero"], ["at"]),
             _node("SequenceLength", ["seq"], ["len"]), _node("SequenceInsert", ["seq", "x"], ["ins"]),
             _node("SequenceErase", ["ins"], ["er"]), _node("ConcatFromSequence", ["er"], ["cat"], axis=0),
             _node("SplitToSequence", ["x"], ["parts"], axis=1, keepdims=0),
             _node("SequenceAt", ["parts", "zero"], ["part"]),
             _node("SequenceEmpty", [], ["empty"], dtype=TensorProto.INT64)]
    feeds = {"x": _x(2, 3)}
    sess = check(_model(nodes, feeds, [_const("zero", np.array(0, np.int64))]), feeds, complete=False)
    types = {o.name: o.type for o in sess.get_outputs()}
    assert types["seq"] == types["parts"] == types["er"] == "seq(tensor(float))"
    assert types["empty"] == "seq(tensor(int64))"
    shapes = {o.name: o.shape for o in sess.get_outputs()}
    assert shapes["at"] == [2, 3] and shapes["part"] == [2] and shapes["len"] == []


def test_optional_ops():
    nodes = [_node("Optional", ["x"], ["opt"]), _node("OptionalHasElement", ["opt"], ["has"]),
             _node("OptionalGetElement", ["opt"], ["got"])]
    feeds = {"x": _x(2)}
    check(_model(nodes, feeds, outputs=["has", "got"]), feeds)  # (a run hands an optional's tensor itself)
    assert _session(_model(nodes, feeds)).get_outputs()[0].type == "optional(tensor(float))"


def test_if_outputs_as_both_branches_have_them():
    then = helper.make_graph([_node("Relu", ["x"], ["t"])], "then", [], [onnx.ValueInfoProto(name="t")])
    other = helper.make_graph([_node("Neg", ["x"], ["e"])], "else", [], [onnx.ValueInfoProto(name="e")])
    node = _node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    feeds = {"c": np.array(True), "x": _x(2, 3)}
    check(_model([node], feeds), feeds)


def test_scan_body_inputs_get_their_types_from_the_node():
    """A function-expanded body declares no input types: the node's inputs type them, and the scan output."""
    body = helper.make_graph([_node("Add", ["s_in", "x_t"], ["s_out"]), _node("Cast", ["s_out"], ["y_t"], to=11)],
                             "body", [onnx.ValueInfoProto(name="s_in"), onnx.ValueInfoProto(name="x_t")],
                             [onnx.ValueInfoProto(name="s_out"), onnx.ValueInfoProto(name="y_t")])
    node = _node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)
    feeds = {"s0": _x(3), "xs": _x(4, 3)}
    sess = check(_model([node], feeds, opset=16), feeds, complete=False)
    assert [o.shape for o in sess.get_outputs()] == [[], [4, 3]]  # (a state's shape may change: not told)
    types = graph_types(sess._model.graph.nodes[0].attrs["body"])
    assert types["s_in"] == (TensorProto.FLOAT, [3]) and types["x_t"] == (TensorProto.FLOAT, [3])
    assert types["y_t"] == (TensorProto.DOUBLE, [3])


# --- the rules themselves --------------------------------------------------------------------------------------

def test_every_onnx_and_contrib_op_has_one_rule():
    for (domain, op_type), sinces in registry.registered_ops().items():
        if domain not in ("", registry.MS_DOMAIN):
            continue
        rules = {registry.lookup(domain, op_type, s).infer for s in sinces}
        assert len(rules) == 1, (op_type, "one rule for every version")
        rule = rules.pop()
        assert rule is not None, (domain, op_type)


@pytest.mark.parametrize("opset", [7, 13])
def test_dropout_mask_type_follows_the_opset(opset):
    node = _node("Dropout", ["x"], ["y", "mask"])
    feeds = {"x": _x(2, 2)}
    sess = check(_model([node], feeds, opset=opset), feeds)
    assert sess.get_outputs()[1].type == ("tensor(bool)" if opset >= 10 else "tensor(float)")


def test_declared_symbolic_dims_take_the_inferred_sizes():
    """A model's own value_info with symbolic dims (quantizers write ['batch', 'seq']) gets the sizes inference
    finds, as onnx's shape merge does: a session specialized to fixed input shapes must see every shape fixed
    (the int8 MiniLM's specialized plan kept its Shape / Gather / Concat arithmetic otherwise). A declared static dim
    and the element type stay as declared."""
    from onnxide import proto
    from onnxide.ir import load_model
    from onnxide.ir.infer import infer_shapes

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([_node("Relu", ["x"], ["h"]), _node("Neg", ["h"], ["y"])], "g", [x], [y],
                          value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, ["batch", None])])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8).SerializeToString()
    model = load_model(proto.parse(proto.ModelProto, data))
    infer_shapes(model)
    assert model.graph.value_info["h"].shape == [2, 3]
    assert not model.graph.value_info["h"].inferred  # (still the model's declaration, now complete)
