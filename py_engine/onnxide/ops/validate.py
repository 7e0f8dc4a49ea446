"""Static node checks at load, before any EP sees a node: each attribute's kind against the op's (its kernel's default,
or the table below where the default is None) and the required inputs present — onnxruntime's load-time schema
checks, so no kernel, numpy or native, meets an attribute of the wrong kind."""
import numpy as np

from .. import dtypes as dt
from ..errors import Fail, InvalidArgument, InvalidGraph, OnnxideError
from .inference import OptionalOf, SequenceOf, type_proto, type_string
from .registry import node_opset, normalize_domain, resolve_opdef
from .schema_types import BINDS, TYPES

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
          ("com.microsoft", "SkipSimplifiedLayerNormalization"): {"epsilon": (lambda v: v >= 0, "non-negative")}}


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
    overrides = OP_KINDS.get((opdef.domain, opdef.op_type), {})
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
        ok, rule = RANGES.get((opdef.domain, opdef.op_type), {}).get(name, (None, None))
        if ok is not None and not ok(value):
            raise InvalidArgument(f"{label}: attribute '{name}' must be {rule}, got {value}")
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


def check_graph(graph, opsets):
    """check_node for every node of `graph` and its bodies whose op onnxide knows (unknown ops are the partition's
    to report)."""
    from ..ir.model import subgraphs

    for node in graph.nodes:
        try:
            opdef, _ = resolve_opdef(node, opsets)
        except OnnxideError:
            opdef = None
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


def check_input_types(graph, opsets, outer=None):
    """InvalidGraph naming the node and input when an ONNX / ONNX-ML op gets a (declared or inferred) input of an
    element type its schema version under the model's opset does not take (schema_types.TYPES), a sequence / map
    where it takes tensors only, or a sparse tensor, as onnxruntime's type check: no kernel of any EP is written for
    one; Fail where inputs of one type parameter differ (run after inference; bodies included, reading their
    enclosing graphs' types)."""
    from ..ir.infer import value_types
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
            else:
                continue
            raise InvalidGraph(f"This is an invalid model. Type Error: Type '{bad}' of input parameter ({x}) of "
                               f"operator ({node.op_type}) in node ({node.name}) is invalid.")
        _check_bindings(node, types)
        for body in subgraphs(node):
            check_input_types(body, opsets, types)
