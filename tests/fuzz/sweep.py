"""The attribute sweep: per op, a valid node large enough that the native and WASM EPs run their own kernels, then
every attribute its kernel declares set to values the spec rejects or that stress it (by the attribute's kind: zero,
negative, huge, wrong length, wrong type), and inputs of inconsistent shapes — each with static and with symbolic
input dims (checks at session creation and at run time)."""
import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxide.ops import registry

INT_BAD = [-1, 0, 2, -2**31, 2**31, 2**62, 100]
FLOAT_BAD = [0.0, -1.0, float("nan"), float("inf"), 1e30]
STR_BAD = ["", "bogus", "NOTSET", "SAME_UPPER", "VALID"]
INTS_BAD = [[], [0], [-1], [0, 0], [-1, 3], [3, -1], [1, 1, 1], [2**31, 1], [100, 100], [1, 0], [2**62, 2**62],
            [3] * 8, [-2**63, 1]]
FLOATS_BAD = [[], [0.0], [-1.0, 2.0], [float("nan")] * 4, [1e30] * 4, [1.0] * 9]
# attributes whose default (None) says nothing of their kind
INTS_NAMED = {"kernel_shape", "strides", "dilations", "pads", "perm", "axes", "output_shape", "output_padding", "split",
              "shape", "starts", "ends", "steps", "sizes", "block_shape", "blocksize", "allowzero"}


def _i(name, shape, dtype="f", role="feed", value=None):
    return (name, tuple(shape), dtype, role, value)


def _init(name, value, dtype="i"):
    v = np.asarray(value)
    return (name, v.shape, dtype, "init", v)


X4 = (1, 16, 20, 20)
SPECS = [
    # (op, domain, opset, inputs, attrs, shape variants {input: [shapes]}, value variants {input: [values]}, outputs)
    ("Conv", "", 17, [_i("X", X4), _i("W", (32, 16, 3, 3), role="init"), _i("B", (32,), role="init")],
     dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
     {"W": [(32, 16, 5, 5), (32, 8, 3, 3), (32, 16, 3), (32, 16, 3, 3, 3), (0, 16, 3, 3), (32, 16, 0, 3)],
      "X": [(1, 8, 20, 20), (1, 16, 2, 2), (1, 16, 20), (1, 16, 0, 20)], "B": [(16,), (32, 32)]}, {}, 1),
    ("Conv", "", 17, [_i("X", (1, 32, 24, 24)), _i("W", (32, 1, 3, 3), role="init"), _i("B", (32,), role="init")],
     dict(group=32, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
     {"W": [(32, 1, 200, 200), (32, 1, 1, 1), (16, 1, 3, 3), (32, 2, 3, 3)]}, {}, 1),
    ("ConvTranspose", "", 17, [_i("X", (1, 16, 10, 10)), _i("W", (16, 8, 2, 2), role="init"),
                               _i("B", (8,), role="init")], dict(strides=[2, 2]),
     {"W": [(8, 8, 2, 2), (16, 8, 3, 3), (16, 8, 2)], "B": [(16,)]}, {}, 1),
    ("ConvTranspose", "", 17, [_i("X", (1, 16, 10, 10)), _i("W", (16, 1, 2, 2), role="init")],
     dict(strides=[2, 2], group=16), {"W": [(16, 1, 50, 50)]}, {}, 1),
    ("MaxPool", "", 12, [_i("X", X4)], dict(kernel_shape=[3, 3], strides=[2, 2]), {"X": [(1, 16, 2, 2), (16, 20)]},
     {}, 1),
    ("MaxPool", "", 12, [_i("X", X4)], dict(kernel_shape=[3, 3]), {}, {}, 2),
    ("AveragePool", "", 19, [_i("X", X4)], dict(kernel_shape=[3, 3], strides=[2, 2]), {"X": [(1, 16, 2, 2)]}, {}, 1),
    ("LpPool", "", 18, [_i("X", X4)], dict(kernel_shape=[3, 3]), {}, {}, 1),
    ("GlobalAveragePool", "", 1, [_i("X", X4)], {}, {"X": [(16,), (1, 16)]}, {}, 1),
    ("GlobalMaxPool", "", 1, [_i("X", X4)], {}, {"X": [(16,), (1, 16)]}, {}, 1),
    ("Gemm", "", 13, [_i("A", (64, 64)), _i("B", (64, 64), role="init"), _i("C", (64,), role="init")], {},
     {"B": [(32, 64), (64,)], "C": [(3,), (64, 2)], "A": [(64,), (2, 64, 64)]}, {}, 1),
    ("MatMul", "", 13, [_i("A", (64, 64)), _i("B", (64, 64), role="init")], {},
     {"B": [(32, 64), (64,), (2, 64, 64), ()], "A": [(64,), (3, 64, 32)]}, {}, 1),
    ("BatchNormalization", "", 15, [_i("X", X4)] + [_i(n, (16,), role="init") for n in ("s", "b", "m", "v")], {},
     {"s": [(8,)], "v": [(16, 1)], "X": [(1, 8, 20, 20), (16,)]}, {}, 1),
    ("InstanceNormalization", "", 6, [_i("X", X4), _i("s", (16,), role="init"), _i("b", (16,), role="init")], {},
     {"s": [(8,)], "X": [(16,)]}, {}, 1),
    ("LayerNormalization", "", 17, [_i("X", (2, 64, 64)), _i("s", (64,), role="init"), _i("b", (64,), role="init")],
     {}, {"s": [(32,), (64, 64), (2, 64, 64)], "b": [(3,)]}, {}, 1),
    ("LayerNormalization", "", 17, [_i("X", (2, 64, 64)), _i("s", (64,), role="init")], {}, {}, {}, 3),
    ("GroupNormalization", "", 21, [_i("X", X4), _i("s", (16,), role="init"), _i("b", (16,), role="init")],
     dict(num_groups=4), {"s": [(4,), (8,)]}, {}, 1),
    ("LRN", "", 13, [_i("X", X4)], dict(size=3), {}, {}, 1),
    ("Softmax", "", 13, [_i("X", (4, 64, 64))], {}, {"X": [()]}, {}, 1),
    ("LogSoftmax", "", 13, [_i("X", (4, 64, 64))], {}, {}, {}, 1),
    ("Hardmax", "", 13, [_i("X", (4, 64, 64))], {}, {}, {}, 1),
    ("MultiHeadAttention", "com.microsoft", 1, [_i("q", (1, 32, 64)), _i("k", (1, 32, 64)), _i("v", (1, 32, 64))],
     dict(num_heads=4), {"k": [(1, 32, 32), (2, 32, 64)], "v": [(1, 16, 64)], "q": [(32, 64)]}, {}, 1),
    ("Attention", "com.microsoft", 1, [_i("x", (1, 32, 64)), _i("w", (64, 192), role="init"),
                                       _i("b", (192,), role="init")], dict(num_heads=4),
     {"w": [(64, 64), (32, 192)], "b": [(64,)]}, {}, 1),
    ("Attention", "", 23, [_i("Q", (1, 4, 32, 16)), _i("K", (1, 4, 32, 16)), _i("V", (1, 4, 32, 16))], {},
     {"K": [(1, 4, 32, 8), (1, 3, 32, 16)], "V": [(1, 4, 16, 16)]}, {}, 1),
    ("SkipLayerNormalization", "com.microsoft", 1, [_i("x", (1, 32, 64)), _i("s", (1, 32, 64)),
                                                    _i("g", (64,), role="init"), _i("b", (64,), role="init")], {},
     {"s": [(1, 32, 32)], "g": [(32,)], "b": [(3,)]}, {}, 1),
    ("FusedConv", "com.microsoft", 1, [_i("X", X4), _i("W", (32, 16, 3, 3), role="init")],
     dict(activation="Relu", kernel_shape=[3, 3]), {"W": [(32, 16, 7, 7)]}, {}, 1),
    ("FusedGemm", "com.microsoft", 1, [_i("A", (64, 64)), _i("B", (64, 64), role="init")], dict(activation="Relu"),
     {"B": [(32, 64)]}, {}, 1),
    ("Resize", "", 13, [_i("X", (1, 16, 10, 10)), _i("roi", (0,), role="init"), _init("sc", [1, 1, 2, 2], "f")],
     dict(mode="nearest"), {}, {"sc": [[1, 1, 1e6, 1e6], [1, 1, 0, 0], [1, 1, -2, 2], [1, 1, 2], [1, 1, np.nan, 2],
                                       [1, 1, 1e-9, 1e-9]]}, 1),
    ("Resize", "", 13, [_i("X", (1, 16, 10, 10)), _i("roi", (0,), role="init"), _i("sc", (0,), role="init"),
                        _init("sz", [1, 16, 20, 20])], dict(mode="linear"),
     {}, {"sz": [[1, 16, 2**31, 2**31], [1, 16, 0, 20], [1, 16, -5, 20], [1, 16, 20]]}, 1),
    ("Pad", "", 18, [_i("X", (1, 16, 10, 10)), _init("p", [0, 0, 1, 1, 0, 0, 1, 1])], dict(mode="constant"), {},
     {"p": [[0, 0, 10**7, 10**7, 0, 0, 10**7, 10**7], [0, 0, -20, 0, 0, 0, 0, 0], [1, 1], [0, 0, 2**62, 0] * 2]}, 1),
    ("Tile", "", 13, [_i("X", (16, 16)), _init("r", [2, 2])], {}, {}, {"r": [[10**6, 10**6], [-1, 2], [2], [0, 3]]},
     1),
    ("Expand", "", 13, [_i("X", (16, 1)), _init("s", [16, 4])], {}, {},
     {"s": [[16, 10**9], [3, 3], [-1, 4], [2**31, 2**31, 16, 1]]}, 1),
    ("ConstantOfShape", "", 20, [_init("s", [4, 4])], {}, {}, {"s": [[10**6, 10**6], [-1, 4], [2**62], [0, 5]]}, 1),
    ("Range", "", 11, [_init("a", 0.0, "f"), _init("l", 10.0, "f"), _init("d", 1.0, "f")], {}, {},
     {"d": [0.0, -1.0, 1e-12, np.nan, [1.0, 2.0]], "l": [1e18, np.inf]}, 1),
    ("Concat", "", 13, [_i("X", (16, 16)), _i("Y", (16, 8))], dict(axis=1), {"Y": [(8, 8), (16,)]}, {}, 1),
    ("Slice", "", 13, [_i("X", (16, 16)), _init("st", [0]), _init("en", [8]), _init("ax", [0]), _init("sp", [1])],
     {}, {}, {"sp": [[0], [-1], [2**62]], "ax": [[5], [0, 0]], "st": [[2**63 - 1]], "en": [[-2**63]]}, 1),
    ("Gather", "", 13, [_i("X", (16, 16)), _init("i", [0, 3])], {}, {}, {"i": [[0, 20], [-17], [2**40]]}, 1),
    ("GatherElements", "", 13, [_i("X", (16, 16)), _init("i", np.zeros((16, 2), np.int64))], {}, {},
     {"i": [np.full((16, 2), 99)]}, 1),
    ("ScatterElements", "", 18, [_i("X", (16, 16)), _init("i", np.zeros((2, 16), np.int64)),
                                 _i("u", (2, 16), role="init")], {}, {}, {"i": [np.full((2, 16), -99)]}, 1),
    ("ScatterND", "", 18, [_i("X", (16, 16)), _init("i", [[0], [3]]), _i("u", (2, 16), role="init")], {}, {},
     {"i": [[[0], [16]], [[0, 0, 0]]]}, 1),
    ("GatherND", "", 13, [_i("X", (16, 16)), _init("i", [[0, 1], [3, 3]])], {}, {}, {"i": [[[0, 99]], [[0, 1, 2]]]},
     1),
    ("DepthToSpace", "", 13, [_i("X", (1, 16, 8, 8))], dict(blocksize=2), {"X": [(1, 15, 8, 8), (16, 8)]}, {}, 1),
    ("SpaceToDepth", "", 13, [_i("X", (1, 16, 8, 8))], dict(blocksize=2), {"X": [(1, 16, 7, 7)]}, {}, 1),
    ("Col2Im", "", 18, [_i("X", (1, 18, 16)), _init("is", [5, 5]), _init("bs", [3, 3])], {}, {},
     {"bs": [[0, 3], [9, 9], [3]], "is": [[-5, 5], [2, 2]]}, 1),
    ("GridSample", "", 16, [_i("X", (1, 4, 10, 10)), _i("G", (1, 6, 6, 2))], {}, {"G": [(1, 6, 6, 3), (2, 6, 6, 2)]},
     {}, 1),
    ("RoiAlign", "", 16, [_i("X", (1, 4, 10, 10)), _i("r", (2, 4), role="init"), _init("b", [0, 0])],
     dict(output_height=2, output_width=2), {"r": [(2, 3)]}, {"b": [[0, 5], [-1, 0]]}, 1),
    ("MaxRoiPool", "", 1, [_i("X", (1, 4, 10, 10)), _init("r", [[0, 0, 0, 4, 4]], "f")], dict(pooled_shape=[2, 2]),
     {}, {"r": [[[9, 0, 0, 4, 4]], [[0, 0, 0, 4]]]}, 1),
    ("Flatten", "", 13, [_i("X", X4)], {}, {}, {}, 1),
    ("Split", "", 13, [_i("X", (16, 16)), _init("s", [8, 8])], {}, {}, {"s": [[8, 9], [-1, 17], [16, 0]]}, 2),
    ("Transpose", "", 13, [_i("X", (2, 3, 4))], dict(perm=[2, 0, 1]), {}, {}, 1),
    ("Reshape", "", 14, [_i("X", (16, 16)), _init("s", [4, 64])], {}, {},
     {"s": [[7, 7], [-1, -1], [0, 0, 0], [-2, 128], [2**62, 0]]}, 1),
    ("Squeeze", "", 13, [_i("X", (1, 16, 1)), _init("a", [0])], {}, {}, {"a": [[1], [5], [0, 0]]}, 1),
    ("Unsqueeze", "", 13, [_i("X", (16, 16)), _init("a", [0])], {}, {}, {"a": [[5], [0, 0], [-9]]}, 1),
    ("CumSum", "", 14, [_i("X", (16, 16)), _init("a", 0)], {}, {}, {"a": [5, [0, 1]]}, 1),
    ("TopK", "", 11, [_i("X", (16, 16)), _init("k", [3])], {}, {}, {"k": [[-1], [17], [2**40], [1, 2]]}, 2),
    ("ReduceSum", "", 18, [_i("X", (16, 16)), _init("a", [1])], {}, {}, {"a": [[5], [0, 0], [-3]]}, 1),
    ("ReduceMean", "", 13, [_i("X", (16, 16))], dict(axes=[1]), {}, {}, 1),
    ("ArgMax", "", 13, [_i("X", (16, 16))], {}, {}, {}, 1),
    ("OneHot", "", 11, [_init("i", [0, 2, 5]), _init("d", 8), _init("v", [0.0, 1.0], "f")], {}, {},
     {"d": [0, -1, 2**40, [2, 3]], "v": [[1.0]]}, 1),
    ("Einsum", "", 12, [_i("A", (8, 8)), _i("B", (8, 8))], dict(equation="ij,jk->ik"), {"B": [(7, 8)]}, {}, 1),
    ("Trilu", "", 14, [_i("X", (16, 16)), _init("k", 0)], {}, {}, {"k": [2**62, -2**62, [1, 2]]}, 1),
    ("ReverseSequence", "", 10, [_i("X", (4, 3, 2)), _init("l", [1, 2, 3])], {}, {}, {"l": [[9, 9, 9], [1, 2]]}, 1),
    ("Unique", "", 11, [_i("X", (16, 16))], {}, {}, {}, 1),
    ("NonMaxSuppression", "", 11, [_i("b", (1, 6, 4)), _i("s", (1, 1, 6)), _init("m", [3])], {},
     {"s": [(1, 1, 5)]}, {"m": [[-1], [2**40]]}, 1),
    ("DFT", "", 20, [_i("X", (1, 16, 1)), _init("n", 16), _init("a", 1)], {}, {}, {"n": [0, -1, 2**40], "a": [5]}, 1),
    ("STFT", "", 17, [_i("X", (1, 64, 1)), _init("s", 8), _i("w", (16,), role="init")], {}, {}, {"s": [0, -1]}, 1),
    ("LSTM", "", 14, [_i("X", (5, 2, 8)), _i("W", (1, 64, 8), role="init"), _i("R", (1, 64, 16), role="init")],
     dict(hidden_size=16), {"W": [(1, 32, 8)], "R": [(1, 64, 8)]}, {}, 1),
    ("GRU", "", 14, [_i("X", (5, 2, 8)), _i("W", (1, 48, 8), role="init"), _i("R", (1, 48, 16), role="init")],
     dict(hidden_size=16), {"W": [(1, 16, 8)]}, {}, 1),
    ("RNN", "", 14, [_i("X", (5, 2, 8)), _i("W", (1, 16, 8), role="init"), _i("R", (1, 16, 16), role="init")],
     dict(hidden_size=16), {"R": [(2, 16, 16)]}, {}, 1),
    ("MaxUnpool", "", 11, [_i("X", (1, 4, 5, 5)), _init("i", np.zeros((1, 4, 5, 5), np.int64))],
     dict(kernel_shape=[2, 2], strides=[2, 2]), {}, {"i": [np.full((1, 4, 5, 5), 10**6)]}, 1),
    ("CenterCropPad", "", 18, [_i("X", (16, 16)), _init("s", [8, 8])], {}, {}, {"s": [[-1, 8], [2**40, 1]]}, 1),
    ("EyeLike", "", 9, [_i("X", (16, 16))], {}, {}, {}, 1),
    ("Compress", "", 11, [_i("X", (16, 16)), _init("c", [True, False], "b")], {}, {},
     {"c": [[True] * 40]}, 1),
    ("Mod", "", 13, [_init("A", [5, 7]), _init("B", [0, 2])], {}, {}, {}, 1),
    ("BitShift", "", 11, [_init("A", [5, 7], "u"), _init("B", [1, 64], "u")], dict(direction="LEFT"), {}, {}, 1),
    ("DequantizeLinear", "", 21, [_init("x", np.zeros((4, 4), np.uint8), "u8"), _init("s", [0.5] * 4, "f")],
     dict(axis=1), {}, {"s": [[0.5] * 3]}, 1),
    ("QuantizeLinear", "", 21, [_i("x", (4, 4)), _init("s", [0.5] * 4, "f")], dict(axis=1), {},
     {"s": [[0.5] * 3, [0.0] * 4]}, 1),
]


def _dtype(code):
    return {"f": np.float32, "i": np.int64, "b": np.bool_, "u": np.uint64, "u8": np.uint8}[code]


def _tp(code):
    return {"f": TensorProto.FLOAT, "i": TensorProto.INT64, "b": TensorProto.BOOL, "u": TensorProto.UINT64,
            "u8": TensorProto.UINT8}[code]


def _value(rng, shape, code):
    if math.prod(shape) > 1 << 22:
        return None
    if code == "f":
        return rng.standard_normal(shape).astype(np.float32)
    if code == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 3, shape).astype(_dtype(code))


def _model(op, domain, opset, inputs, attrs, n_out, dynamic, rng):
    nodes_in, graph_in, inits, feeds = [], [], [], {}
    for name, shape, code, role, value in inputs:
        nodes_in.append(name)
        if role == "init":
            v = np.asarray(value, _dtype(code)) if value is not None else _value(rng, shape, code)
            if v is None:
                return None
            inits.append(numpy_helper.from_array(v, name))
            continue
        dims = [f"d{name}{i}" for i in range(len(shape))] if dynamic else list(shape)
        graph_in.append(helper.make_tensor_value_info(name, _tp(code), dims))
        v = _value(rng, shape, code)
        if v is None:
            return None
        feeds[name] = v
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, nodes_in, outs, domain=domain or None, **attrs)
    g = helper.make_graph([node], "sweep", graph_in, [helper.ValueInfoProto(name=o) for o in outs], inits)
    opsets = [helper.make_opsetid("", opset if not domain else 17)] + (
        [helper.make_opsetid(domain, opset)] if domain else [])
    return helper.make_model(g, opset_imports=opsets, ir_version=10).SerializeToString(), feeds


def _bad_values(name, default):
    """The values the sweep tries for attribute `name` (by its default's kind), wrong-typed ones included."""
    if isinstance(default, bool) or isinstance(default, int):
        return INT_BAD + [[1, 2], "x"]
    if isinstance(default, float):
        return FLOAT_BAD + [[1.0], 3]
    if isinstance(default, str):
        return STR_BAD + [5]
    if name in INTS_NAMED or isinstance(default, (list, tuple)) and all(isinstance(v, int) for v in default):
        return INTS_BAD + [7]
    if isinstance(default, (list, tuple)):
        return FLOATS_BAD
    return []


def _variants(spec):
    op, domain, opset, inputs, attrs, shape_vars, value_vars, n_out = spec
    yield "base", inputs, attrs
    opdef = registry.lookup(domain, op, opset)
    for name, default in sorted(opdef.attrs.items()):
        for bad in _bad_values(name, attrs.get(name, default)):
            yield f"{name}={bad!r}"[:60], inputs, dict(attrs, **{name: bad})
    for k, shapes in shape_vars.items():
        for shape in shapes:
            yield f"{k}.shape={shape}", [(n, shape if n == k else s, c, r, None if n == k else v)
                                          for n, s, c, r, v in inputs], attrs
    for k, values in value_vars.items():
        for value in values:
            v = np.asarray(value)
            yield f"{k}={value!r}"[:60], [(n, v.shape if n == k else s, c, r, v if n == k else val)
                                          for n, s, c, r, val in inputs], attrs


def cases():
    """[(label, model bytes, feeds)] for every spec and variant, static then symbolic input dims."""
    out = []
    rng = np.random.default_rng(0)
    for spec in SPECS:
        op, domain, opset = spec[:3]
        for label, inputs, attrs in _variants(spec):
            for dynamic in (False, True):
                try:
                    made = _model(op, domain, opset, inputs, attrs, spec[7], dynamic, rng)
                except (ValueError, TypeError, OverflowError):
                    made = None  # a value onnx's helper cannot write (e.g. a string where ints go)
                if made is not None:
                    out.append((f"{op}{'@' + domain if domain else ''}:{label}:{'dyn' if dynamic else 'static'}",
                                *made))
    return out
