"""Static node checks at load, before any EP sees a node: each attribute's kind against the op's (its kernel's default,
or the table below where the default is None) and the required inputs present — onnxruntime's load-time schema
checks, so no kernel, numpy or native, meets an attribute of the wrong kind."""
import numpy as np

from .. import dtypes as dt
from ..errors import Fail, InvalidArgument, InvalidGraph, OnnxideError
from .activation import check_prelu_slope
from .inference import OptionalOf, SequenceOf, type_proto, type_string
from .registry import known_domain, node_opset, normalize_domain, resolve_opdef
from .schema_nodes import NODES, OUTPUT_COUNTS
from .schema_types import BINDS, NESTED, TYPES
from .spec_shapes import check_broadcast, check_resize_sizes, check_string_normalizer

# attribute kinds where a kernel's default (None, or none: required) does not say; per op where names collide
_INTS = ("kernel_shape", "strides", "dilations", "pads", "perm", "axes", "output_shape", "output_padding", "split",
         "shape", "starts", "ends", "pooled_shape", "paddings", "directions", "scan_input_axes", "scan_output_axes",
         "scan_input_directions", "scan_output_directions", "consumed_inputs", "ngram_counts", "ngram_indexes",
         "pool_int64s", "cats_int64s", "classlabels_int64s", "classlabels_ints", "int64_vocabulary",
         "inputdimensions", "qkv_hidden_sizes", "vectors_per_class", "keys_int64s", "values_int64s",
         "imputed_value_int64s", "leaf_targetids", "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids",
         "nodes_missing_value_tracks_true", "nodes_nodeids", "nodes_trueleafs", "nodes_truenodeids",
         "nodes_treeids", "tree_roots", "class_ids", "class_nodeids", "class_treeids", "target_ids",
         "target_nodeids", "target_treeids")
_INT = ("axis", "blocksize", "hidden_size", "num_groups", "num_heads", "kv_num_heads", "q_num_heads", "k",
        "num_outputs", "num_scan_inputs", "size", "dtype", "end", "ignore_index", "max_gram_length",
        "min_gram_length", "max_skip_count", "maxsplit", "n_targets", "value_int", "block_size", "K", "N",
        "softmax_precision")
_FLOAT = ("seed", "alpha", "beta", "norm_coefficient", "min", "max", "clip", "height_scale", "width_scale", "value_float",
          "k_norm_epsilon", "q_norm_epsilon")
_FLOATS = ("activation_alpha", "activation_beta", "activation_params", "base_values", "class_weights",
           "coefficients", "intercepts", "kernel_params", "nodes_hitrates", "nodes_values", "prob_a", "prob_b", "rho",
           "support_vectors", "target_weights", "weights", "scales", "imputed_value_floats", "keys_floats",
           "values_floats", "leaf_weights", "nodes_splits", "membership_values", "value_floats", "offset")
_STRS = ("activations", "cats_strings", "classes_strings", "classlabels_strings", "keys_strings", "nodes_modes",
         "pool_strings", "stopwords", "string_vocabulary", "values_strings", "value_strings")
_STR = ("direction", "equation", "mode", "locale", "pattern", "delimiter", "value_string")
_GRAPH = ("body", "then_branch", "else_branch", "score_mod", "prob_mod")
_TENSOR = ("value", "sparse_value", "default_tensor", "keys_tensor", "values_tensor", "base_values_as_tensor",
           "class_weights_as_tensor", "nodes_hitrates_as_tensor", "nodes_values_as_tensor",
           "target_weights_as_tensor")  # (TreeEnsemble's tensor nodes_modes: OP_KINDS)
KINDS = {**{n: "ints" for n in _INTS}, **{n: "int" for n in _INT}, **{n: "float" for n in _FLOAT},
         **{n: "floats" for n in _FLOATS}, **{n: "strs" for n in _STRS}, **{n: "str" for n in _STR},
         **{n: "graph" for n in _GRAPH}, **{n: "tensor" for n in _TENSOR}}
OP_KINDS = {("ai.onnx.ml", "Scaler"): {"scale": "floats", "offset": "floats"}, ("", "Constant"): {"value": "tensor"},
            ("", "Dropout"): {"seed": "int"},
            ("", "Pad"): {"value": "float"},
            ("ai.onnx.ml", "TreeEnsemble"): {n: "tensor" for n in ("nodes_modes", "nodes_splits", "leaf_weights",
                                                                   "membership_values")},
            ("", "Optional"): {"type": "type"}}
# kinds that only some versions of an op have: (domain, op_type, since) -> {attribute: kind}
VERSION_KINDS = {("", "Cast", 1): {"to": "str"}}  # (Cast-1 names the type: to="FLOAT")


# flags the spec defines as 0 or 1 (onnxruntime reads some as `== 1`, refuses others: any other value is refused)
FLAGS = frozenset(("keepdims", "largest", "sorted", "ceil_mode", "is_causal", "unidirectional", "exclusive", "reverse",
                   "center_point_box", "count_include_pad", "training_mode", "select_last_index",
                   "noop_with_empty_axes", "transA", "transB", "fmod", "do_rotary", "interleaved", "allowzero",
                   "layout", "storage_order", "exclude_outside", "antialias", "onesided", "inverse", "upper",
                   "detect_negative", "detect_positive", "saturate", "input_forget"))


# attributes holding an element type code (0: the op's default, where the spec gives one)
ELEMENT_TYPES = {"to": False, "dtype": False, "output_dtype": True, "output_datatype": False}

# attribute values onnxruntime refuses at load where an EP's fast path would not look (op -> name -> (ok, rule))
RANGES = {("com.microsoft", "SkipLayerNormalization"): {"epsilon": (lambda v: v >= 0, "non-negative")},
          ("com.microsoft", "SkipSimplifiedLayerNormalization"): {"epsilon": (lambda v: v >= 0, "non-negative")},
          **{("", op): {"hidden_size": (lambda v: v > 0, "positive", Fail)} for op in ("RNN", "GRU", "LSTM")},
          ("ai.onnx.ml", "LabelEncoder"): {"default_tensor": (lambda v: np.ndim(v) == 1 and np.size(v) == 1,
                                                              "a singleton 1D tensor", Fail)},
          ("", "ConstantOfShape"): {"value": (lambda v: np.ndim(v) == 1 and np.size(v) == 1,
                                              "a one-element 1-D tensor (onnxruntime: 'Attribute expected to have a "
                                              "one-dim tensor')", Fail)}}


# input shapes the spec fixes where onnxruntime's kernels check them: (domain, op) -> {input position: (ranks it
# may have, whether it must hold one value, onnxruntime's class and message)}; checked at load where the shape is
# known (check_input_types) and before the kernel of any EP otherwise (input_guard)
_AXES = ((1,), False, Fail, "An axes tensor must be a vector tensor.")
INPUT_SHAPES = {
    **{("", op): {1: _AXES} for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                       "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
                                       "Squeeze")},
    ("", "Unsqueeze"): {1: ((0, 1), False, Fail, "An axes tensor must be a scalar or a 1-D tensor.")},
    ("", "Pad"): {3: ((1,), False, Fail, "Axes tensor should be a 1D tensor")},
    ("", "ConstantOfShape"): {0: ((1,), False, Fail, "shape input must be 1D tensor")},
    ("", "Expand"): {1: ((1,), False, Fail, "'shape' input must be 1D tensor")},
    ("", "Dropout"): {1: ((0,), False, Fail, "Ratio of Dropout must be a scalar."),
                      2: ((0,), False, Fail, "training_mode of Dropout must be a scalar.")},
    ("", "Slice"): {1: ((1,), False, Fail, "Starts must be a 1-D array"),
                    2: ((1,), False, Fail, "Ends must be a 1-D array"),
                    3: ((1,), False, Fail, "Axes must be a 1-D array"),
                    4: ((1,), False, Fail, "Steps must be a 1-D array")},
    ("", "TopK"): {1: ((1,), True, Fail, "k tensor should be a 1D tensor of size 1")},
    ("", "CumSum"): {1: ((0, 1), True, InvalidArgument, "Axis tensor must be a scalar (0-D) or 1-D tensor with "
                                                        "exactly one element")},
    ("", "CumProd"): {1: ((0, 1), True, InvalidArgument, "Axis tensor must be a scalar (0-D) or 1-D tensor with "
                                                         "exactly one element")},
    ("", "QLinearMatMul"): {1: ((0, 1), False, Fail, "QLinearMatmul : a_scale must be a scalar or a 1-D tensor"),
                            2: ((0, 1), False, Fail, "QLinearMatmul : a_zero_point must be a scalar or a 1-D tensor"),
                            4: ((0, 1), False, Fail, "QLinearMatmul : b_scale must be a scalar or a 1-D tensor"),
                            5: ((0, 1), False, Fail, "QLinearMatmul : b_zero_point must be a scalar or a 1-D tensor"),
                            6: ((0, 1), True, Fail, "QLinearMatmul : result scale must be a scalar or 1D tensor of "
                                                    "size 1"),
                            7: ((0, 1), True, Fail, "QLinearMatmul : result zero point must be a scalar or 1D tensor "
                                                    "of size 1")},
    ("", "QLinearConv"): {1: ((0, 1), True, Fail, "QLinearConv : input scale must be a scalar or 1D tensor of size 1"),
                          2: ((0, 1), True, Fail, "QLinearConv : input zero point must be a scalar or 1D tensor of "
                                                  "size 1"),
                          4: ((0, 1), False, Fail, "QLinearConv : filter scale shape invalid"),
                          5: ((0, 1), False, Fail, "QLinearConv : filter zero point shape invalid"),
                          6: ((0, 1), True, Fail, "QLinearConv : result scale must be a scalar or 1D tensor of size 1"),
                          7: ((0, 1), True, Fail, "QLinearConv : result zero point must be a scalar or 1D tensor of "
                                                  "size 1")},
}


def _shape_error(node, i, dims):
    """The error for input `i` of `node` of (int / None) `dims` outside INPUT_SHAPES, or None where it fits or where
    what is known does not say."""
    rule = INPUT_SHAPES.get((normalize_domain(node.domain), node.op_type), {}).get(i)
    if rule is None or dims is None:
        return None
    ranks, one, cls, msg = rule
    size = int(np.prod(dims)) if all(isinstance(d, int) for d in dims) else None
    if len(dims) not in ranks or one and size is not None and size != 1:
        return cls(f"{node.op_type} node. Name:'{node.name}': {msg} (input '{node.inputs[i]}' has shape "
                   f"{list(dims)})")
    return None


# relations between inputs' shapes the spec states (checked, like INPUT_SHAPES, before the kernel of any EP):
# (domain, op) -> (the first opset it holds in, check(shapes) raising the op's error)
INPUT_RELATIONS = {("", "PRelu"): (7, lambda shapes: check_prelu_slope(shapes[0], shapes[1]))}


def input_guard(node, kernel, opset=None):
    """`kernel` checking, before it runs, the inputs INPUT_SHAPES has a rule for and the INPUT_RELATIONS of its op
    (on any EP: host-side values or device tensors with a shape); `kernel` itself for other ops."""
    key = normalize_domain(node.domain), node.op_type
    rules = INPUT_SHAPES.get(key, {})
    since, relation = INPUT_RELATIONS.get(key, (None, None))
    if relation is not None and (opset is None or opset < since):
        relation = None
    positions = [i for i in rules if i < len(node.inputs) and node.inputs[i]]
    if not positions and relation is None:
        return kernel

    def guarded(*args, **kwargs):
        for i in positions:
            shape = getattr(args[i], "shape", None) if i < len(args) else None
            error = None if shape is None else _shape_error(node, i, [int(d) for d in shape])
            if error is not None:
                raise error
        if relation is not None:
            shapes = [getattr(a, "shape", None) for a in args]
            if None not in shapes:
                relation(shapes)
        return kernel(*args, **kwargs)

    return guarded


def _kind_of_default(v):
    if isinstance(v, bool) or isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (list, tuple)) and v:
        return "ints" if all(isinstance(x, int) for x in v) else "floats" if all(
            isinstance(x, (int, float)) for x in v) else "strs" if all(isinstance(x, str) for x in v) else None
    return "list" if isinstance(v, (list, tuple)) else None


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) or isinstance(v, bool)


def _matches(kind, v):
    if kind == "int":
        return _is_int(v)
    if kind == "float":
        return isinstance(v, float)
    if kind == "str":
        return isinstance(v, str)
    if kind == "graph":
        return hasattr(v, "nodes")
    if kind == "tensor":
        return isinstance(v, np.ndarray)
    if not isinstance(v, list):
        return kind == "type"
    if kind == "ints":
        return all(_is_int(x) for x in v)
    if kind == "floats":
        return all(isinstance(x, (int, float)) for x in v)
    if kind == "strs":
        return all(isinstance(x, str) for x in v)
    return True  # "list": any list


_KIND_NAMES = {"int": "INT", "float": "FLOAT", "str": "STRING", "ints": "INTS", "floats": "FLOATS",
               "strs": "STRINGS", "graph": "GRAPH", "tensor": "TENSOR", "list": "a list", "type": "TYPE_PROTO"}


def _actual(v):
    if isinstance(v, list):
        return "INTS" if all(_is_int(x) for x in v) else "FLOATS" if all(isinstance(x, float) for x in v) else \
            "STRINGS" if all(isinstance(x, str) for x in v) else "a list"
    return {int: "INT", bool: "INT", float: "FLOAT", str: "STRING"}.get(type(v), type(v).__name__)


def check_node(node, opdef):
    """InvalidGraph naming the node when an attribute has the wrong kind or a required input is missing."""
    if opdef.custom is not None:  # (a custom op checks a node against its own declaration)
        return opdef.custom.check_node(node)
    label = f"{node.op_type} node. Name:'{node.name}'"
    overrides = {**OP_KINDS.get((opdef.domain, opdef.op_type), {}),
                 **VERSION_KINDS.get((opdef.domain, opdef.op_type, opdef.since), {})}
    for name, value in node.attrs.items():
        kind = overrides.get(name) or (_kind_of_default(opdef.attrs[name]) if name in opdef.attrs else None) or \
            KINDS.get(name)
        if kind is not None and not _matches(kind, value) and type(value).__name__ != "AttrRef":
            raise InvalidGraph(f"{label}: mismatched attribute type '{name}': expected {_KIND_NAMES[kind]}, got "
                               f"{_actual(value)}")
        if name in FLAGS and kind == "int" and value not in (0, 1):
            raise InvalidArgument(f"{label}: attribute '{name}' must be 0 or 1, got {value}")
        if name in ELEMENT_TYPES and not opdef.domain and _is_int(value) and value not in dt.NAMES and \
                not (value == 0 and ELEMENT_TYPES[name]):
            raise Fail(f"{label}: attribute '{name}' does not specify a valid element type: {value}")
        ok, rule, *cls = RANGES.get((opdef.domain, opdef.op_type), {}).get(name, (None, None))
        if ok is not None and not ok(value):
            raise (cls or [InvalidArgument])[0](f"{label}: attribute '{name}' must be {rule}, got {value}")
    if opdef.op_type == "Constant" and not opdef.domain and not node.attrs:
        raise Fail(f"{label}: Constant node has no data attributes")  # (onnxruntime, making it an initializer)
    if not node.outputs and node.op_type not in ("RNN", "GRU", "LSTM"):  # (the only ops whose outputs are all optional)
        raise InvalidGraph(f"{label}: has output size 0 ({node.op_type} gives at least one output)")
    required = opdef.n_required
    given = list(node.inputs)
    # (an empty name counts as missing for ai.onnx ops, whose kernels take the optional inputs with defaults;
    # contrib kernels may take an optional input without one)
    missing = [i for i in range(required) if i >= len(given) or not given[i] and not opdef.domain]
    if missing:
        raise InvalidGraph(f"{label}: required input {missing[0]} missing ({len([x for x in given if x])} given, "
                           f"{node.op_type} needs {required})")


def _schema_rule(node, opsets):
    """(since_version, (min, max) inputs, (min, max) outputs, attribute names, required names) of the node's ONNX /
    ONNX-ML schema version under the model's opset (schema_nodes.NODES), or None where the table has none."""
    domain = normalize_domain(node.domain)
    versions = NODES.get((domain, node.op_type))
    if not versions:
        return None
    opset = node_opset(node, opsets)
    for sinces, ins, outs, attrs, required in reversed(versions):
        since = max((v for v in sinces if v <= opset), default=None)
        if since is not None:
            return since, ins, outs, attrs, required
    return None


def _count_error(node, since, what, n, bounds, allowed=None):
    """onnx's checker message for an input / output count outside the schema's."""
    schema = f"schema({normalize_domain(node.domain)}::{node.op_type}:{since})"
    if allowed:
        return f"Node with {schema} has {what} size {n} not in allowed {what} sizes."
    lo, hi = bounds
    return f"Node with {schema} has {what} size {n} not in range [min={lo}, max={2147483647 if hi is None else hi}]."


def check_schema(node, opsets):
    """InvalidGraph, as onnx's checker and onnxruntime, when a node of an ONNX / ONNX-ML op has an attribute its schema
    version does not define (names starting with `__` are internal symbols, allowed), lacks a required one, has an
    attribute without a type, has more or fewer inputs / outputs than the schema allows, or leaves one of its
    required outputs unnamed."""
    for a in node.attr_protos:
        if not a.type and not a.ref_attr_name:
            v = node.attrs.get(a.name)  # (the value its set field gave: a tensor's array counts, however many values)
            why = "Field 'type' of 'attr' is required but missing." if not isinstance(v, np.ndarray) and not v else \
                f"type field and data field mismatch in attribute {a.name}."
            raise InvalidGraph(f"This is an invalid model. In Node, (\"{node.name}\", {node.op_type}, "
                               f"\"{node.domain}\", -1) , Error {why}")
    rule = _schema_rule(node, opsets)
    if rule is None:
        return
    since, ins, outs, attrs, required = rule
    allowed = OUTPUT_COUNTS.get((normalize_domain(node.domain), node.op_type, since))
    why = None
    for name in node.attrs:
        if name not in attrs and not name.startswith("__"):
            why = f"Unrecognized attribute: {name} for operator {node.op_type}"
            break
    if why is None:
        n_in, n_out = len(node.inputs), len(node.outputs)
        if n_in < ins[0] or ins[1] is not None and n_in > ins[1]:
            why = _count_error(node, since, "input", n_in, ins)
        elif n_out < outs[0] or outs[1] is not None and n_out > outs[1]:
            why = _count_error(node, since, "output", n_out, outs)
        elif allowed and n_out not in allowed:
            why = _count_error(node, since, "output", n_out, outs, allowed)
        elif outs[1] is not None and not all(node.outputs[:outs[0]]):  # (the schema's single, not optional, ones)
            i = node.outputs.index("")
            why = f"Node ({node.name})'s output {i} is marked single but has an empty string in the graph"
        else:
            why = next((f"Required attribute '{a}' is missing." for a in required if a not in node.attrs), None)
    if why is not None:
        raise InvalidGraph(f"This is an invalid model. In Node, (\"{node.name}\", {node.op_type}, \"{node.domain}\", "
                           f"-1) , Error {why}")


def check_body_counts(node, opsets=None):
    """Fail, as onnxruntime's type inference, when a body takes another number of inputs than its node hands it, If's
    branches give different numbers of outputs or another number than the node has, or a Loop / Scan body gives
    another number than the node's outputs (plus Loop's condition; SequenceMap's body as many as the node)."""
    op, where = node.op_type, f"Node ({node.name}) Op ({node.op_type}) [TypeInferenceError]"
    n = len(node.outputs)
    if normalize_domain(node.domain) or op not in ("If", "Loop", "Scan", "SequenceMap"):
        return
    _check_body_inputs(node, where, opsets)
    if op == "If":
        then, other = node.attrs.get("then_branch"), node.attrs.get("else_branch")
        if not hasattr(then, "outputs") or not hasattr(other, "outputs"):
            return
        a, b = len(then.outputs), len(other.outputs)
        if a != b:
            raise Fail(f"{where} then_branch and else_branch produce different number of outputs. {a} != {b}")
        if a != n:
            raise Fail(f"{where} If node has {n} but subgraphs produce {a}")
        return
    body = node.attrs.get("body")
    want = n + (op == "Loop")
    if hasattr(body, "outputs") and len(body.outputs) != want:
        raise Fail(f"{where} Graph attribute inferencing returned type information for {len(body.outputs)} outputs. "
                   f"Expected {want}")


def _check_body_inputs(node, where, opsets):
    """Fail, as onnxruntime's subgraph inference, where a body has another number of inputs than its node hands it
    (If: none; Loop: its inputs, iteration number and condition included; Scan: its inputs, less Scan-8's
    sequence_lens; SequenceMap: its inputs) and than those not backed by an initializer."""
    given = 0 if node.op_type == "If" else len(node.inputs)
    if node.op_type == "Scan" and opsets is not None and node_opset(node, opsets) < 9:
        given -= 1  # (Scan-8: sequence_lens first)
    for body in node.attrs.values():
        if not hasattr(body, "inputs"):
            continue
        has = len(body.inputs)
        required = sum(1 for v in body.inputs if v.name not in body.initializers)
        if given not in (has, required):
            raise Fail(f"{where} Graph attribute inferencing failed: Size mismatch validating subgraph inputs. Got "
                       f"{given} inputs but subgraph has {has} inputs and requires {required} inputs. Either provide "
                       "all subgraph inputs, or just the required inputs.")


def check_graph(graph, opsets):
    """check_schema for every node of `graph` and its bodies, and check_node for those whose op onnxide knows
    (unknown ops are the partition's to report)."""
    from ..ir.model import subgraphs

    for node in graph.nodes:
        check_schema(node, opsets)
        check_body_counts(node, opsets)
        if node.op_type == "Attention" and not normalize_domain(node.domain) and node_opset(node, opsets) >= 25 and \
                len({bool(i < len(node.outputs) and node.outputs[i]) for i in (1, 2)}) == 2:  # (its schema from 25)
            raise Fail(f"Node ({node.name}) Op (Attention) [ShapeInferenceError] present_key and present_value must "
                       "be requested together.")
        try:
            opdef, _ = resolve_opdef(node, opsets)
        except OnnxideError as e:
            opdef = None
            domain = normalize_domain(node.domain)
            if not known_domain(domain) and node.op_type != "Constant":  # (untaken branches too, as onnxruntime;
                # a Constant of any domain becomes an initializer there first)
                if domain not in opsets:
                    raise InvalidGraph(f"This is an invalid model. In Node, (\"{node.name}\", {node.op_type}, "
                                       f"\"{node.domain}\", -1) , Error No opset import for domain "
                                       f"'{node.domain}'") from None
                raise e from None
            if domain in ("", "ai.onnx.ml") and _schema_rule(node, opsets) is None:  # (a dead node's too)
                raise InvalidGraph(f"This is an invalid model. In Node, (\"{node.name}\", {node.op_type}, "
                                   f"\"{node.domain}\", -1) , Error No Op registered for {node.op_type} with "
                                   f"domain_version of {node_opset(node, opsets)}") from None
        if opdef is not None:
            check_node(node, opdef)
        for body in subgraphs(node):
            check_graph(body, opsets)


def _check_bindings(node, types):
    """Fail, as onnxruntime, when inputs an ONNX / ONNX-ML op types with one type parameter (schema_types.BINDS) have
    different (known) element types."""
    names, repeat = BINDS.get((node.domain if node.domain != "ai.onnx" else "", node.op_type), ((), False))
    bound = {}
    for i, x in enumerate(node.inputs):
        param = names[i] if i < len(names) else names[-1] if repeat and names else None
        code = types.get(x, (None,))[0] if x and param else None
        if isinstance(code, int) and code > 0:
            first = bound.setdefault(param, code)
            if first != code:
                raise Fail(f"Type Error: Type parameter ({param}) of Optype ({node.op_type}) bound to different types "
                           f"(tensor({dt.NAMES.get(first)}) and tensor({dt.NAMES.get(code)}) in node ({node.name}).")


def _input_masks(node, opsets):
    """(masks, variadic) of the node's schema version under the model's opset (schema_types.TYPES), or None where
    the table has no version of the op at that opset."""
    versions = TYPES.get((normalize_domain(node.domain), node.op_type), ())
    opset = node_opset(node, opsets)
    masks = next((ms for since, ms in reversed(versions) if since <= opset), None)
    if masks is None:
        return None
    variadic = bool(masks) and masks[-1] is ...
    return (masks[:-1] if variadic else masks), variadic


def _nested_ok(node, opsets, i, entry):
    """False where input `i` of `node` is a sequence / optional whose element type (known) its schema version does not
    take in that form (schema_types.NESTED: bit 0 of TYPES stands for any sequence, optional or map)."""
    versions = NESTED.get((normalize_domain(node.domain), node.op_type), ())
    opset = node_opset(node, opsets)
    masks = next((ms for since, ms in reversed(versions) if since <= opset), None)
    if not masks:
        return True
    form = masks[min(i, len(masks) - 1)]
    of = entry[0].of
    if form is None or of is None:
        return True
    k = 0 if isinstance(entry[0], SequenceOf) else 1
    if k == 1 and isinstance(of[0], SequenceOf):  # optional(seq(...))
        k, of = 2, of[0].of
        if of is None:
            return True
    code = of[0]
    if isinstance(code, (SequenceOf, OptionalOf)):
        return False  # (a sequence / optional of one: no ONNX op takes it)
    return not isinstance(code, int) or code <= 0 or bool(form[k] >> code & 1)


def check_input_types(graph, opsets, outer=None):
    """InvalidGraph naming the node and input when an ONNX / ONNX-ML op gets a (declared or inferred) input of an
    element type its schema version under the model's opset does not take (schema_types.TYPES), a sequence / map
    where it takes tensors only, or a sparse tensor, as onnxruntime's type check: no kernel of any EP is written for
    one; Fail where inputs of one type parameter differ (run after inference; bodies included, reading their
    enclosing graphs' types)."""
    from ..ir.infer import check_body_inputs, value_types
    from ..ir.model import subgraphs

    types = {**(outer or {}), **value_types(graph)}  # (a body reads its enclosing graphs' values)
    # (graph inputs of types inference does not carry: maps, and sparse tensors, which no ONNX / ONNX-ML op takes)
    maps = {v.name: v.type for v in graph.inputs if v.type is not None and v.type.map_type is not None}
    sparse = {v.name: v.type for v in graph.inputs if v.type is not None and v.type.sparse_tensor_type is not None}
    for node in graph.nodes:
        masks, variadic = _input_masks(node, opsets) or ((), False)
        for i, x in enumerate(node.inputs if masks else ()):
            if i >= len(masks) and not variadic:
                break  # (inputs past the schema's: not a type question)
            entry = types.get(x) if x else None
            code = entry[0] if entry else None
            mask = masks[min(i, len(masks) - 1)]
            if not mask:
                continue
            if x in sparse:
                bad = type_string(sparse[x])
            elif isinstance(code, int) and code > 0 and not mask >> code & 1:
                bad = f"tensor({dt.NAMES.get(code)})"
            elif (isinstance(code, (SequenceOf, OptionalOf)) or x in maps) and not mask & 1:  # (bit 0)
                bad = type_string(maps[x] if x in maps else type_proto(*entry))
            elif isinstance(code, (SequenceOf, OptionalOf)) and not _nested_ok(node, opsets, i, entry):
                bad = type_string(type_proto(*entry))
            else:
                continue
            raise InvalidGraph(f"This is an invalid model. Type Error: Type '{bad}' of input parameter ({x}) of "
                               f"operator ({node.op_type}) in node ({node.name}) is invalid.")
        for i, x in enumerate(node.inputs):
            entry = types.get(x) if x else None
            error = _shape_error(node, i, entry[1]) if entry and isinstance(entry[0], int) else None
            if error is not None:
                raise error
        _check_bindings(node, types)
        check_resize_sizes(node, types, graph, opsets)
        check_broadcast(node, types, graph, opsets)
        check_string_normalizer(node, types, graph, opsets)
        check_body_inputs(node, types, opsets)
        for body in subgraphs(node):
            check_input_types(body, opsets, types)
