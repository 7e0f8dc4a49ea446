"""Custom ops: a user's function declared as an op (`CustomOp`: domain, op type, input / output element types,
typed attributes, an optional shape function) and the OpDef a session resolves its nodes to. Checked at load (input
and output counts, attribute kinds, declared types against the graph's) and at every call (input element types; each
output a numpy array of the declared element type and of the shape the shape function — or else the model — gives).
The public face is onnxide.extensions (`onnx_op`, `PyCustomOpDef`); the partitioner gives these nodes to the CPU EP."""
import inspect

import numpy as np

from .. import dtypes as dt
from ..errors import Fail, InvalidArgument, InvalidGraph, RuntimeException
from .registry import OpDef, normalize_domain, registered_ops

DEFAULT_DOMAIN = "ai.onnx.contrib"  # onnxruntime-extensions' domain for custom ops
_SCALAR_KINDS = {dt.INT64: "int", dt.FLOAT: "float", dt.STRING: "str"}
_KIND_NAMES = {"int": "INT", "float": "FLOAT", "str": "STRING", "ints": "INTS", "floats": "FLOATS", "strs": "STRINGS"}


def _type_code(code, what):
    if code is None:
        return None
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)) or int(code) not in dt.NAMES:
        raise InvalidArgument(f"{what}: {code!r} is not an element type (use PyCustomOpDef.dt_* constants)")
    return int(code)


def _attr_kind(spec, what):
    """'int' / 'float' / 'str' for dt_int64 / dt_float / dt_string, 'ints' / 'floats' / 'strs' for a list of one."""
    listed = isinstance(spec, (list, tuple))
    if listed and len(spec) != 1:
        raise InvalidArgument(f"{what}: a list attribute type holds one element type, got {list(spec)}")
    kind = _SCALAR_KINDS.get(spec[0] if listed else spec) if not isinstance(spec[0] if listed else spec, bool) else None
    if kind is None:
        raise InvalidArgument(f"{what}: attribute type {spec!r} is not one of PyCustomOpDef.dt_int64, dt_float, "
                              f"dt_string (or a list of one of them)")
    return kind + "s" if listed else kind


def _kind_matches(kind, value):
    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    if kind == "int":
        return is_int(value)
    if kind == "float":
        return isinstance(value, float)
    if kind == "str":
        return isinstance(value, str)
    if not isinstance(value, list):
        return False
    return all(is_int(v) if kind == "ints" else isinstance(v, float) if kind == "floats" else isinstance(v, str)
               for v in value)


def _keywords(fn):
    """(names it takes as keywords with a default, names it needs, takes **kwargs) of a function's signature."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return set(), set(), True
    named = [p for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    optional = {p.name for p in named if p.default is not p.empty}
    needed = {p.name for p in named if p.default is p.empty}
    return optional, needed, any(p.kind == p.VAR_KEYWORD for p in params)


def _shape_text(shape):
    return "[" + ", ".join(str(d) if d is not None else "?" for d in shape) + "]"


class CustomOp:
    """A function run as the kernel of `domain:op_type` nodes. `inputs` / `outputs`: an element type code per input /
    output (None: the node decides count and types; an entry None: any type); `attrs`: {name: element type or
    [element type]} (None: the node's attributes as they are); `shape_fn(*input_shapes, **attrs)`: a list with the
    shape of each output (a shape: a list of int, with None / a name for a dim it cannot tell). Calling the object
    calls the function."""

    def __init__(self, fn, op_type, domain=DEFAULT_DOMAIN, inputs=None, outputs=None, attrs=None, shape_fn=None):
        if not callable(fn):
            raise InvalidArgument(f"A custom op's kernel must be callable, not {type(fn).__name__}")
        if not isinstance(op_type, str) or not op_type:
            raise InvalidArgument(f"A custom op needs an op type (a non-empty string), not {op_type!r}")
        if not isinstance(domain, str):
            raise InvalidArgument(f"Custom op {op_type}: the domain must be a string, not {type(domain).__name__}")
        self.fn, self.op_type, self.domain = fn, op_type, normalize_domain(domain)
        self.name = f"{self.domain}:{op_type}"
        if self.domain in ("", "ai.onnx.ml"):
            raise InvalidArgument(f"Custom op {op_type}: the ONNX domains are the ONNX spec's; declare it in a domain "
                                  f"of its own (e.g. '{DEFAULT_DOMAIN}')")
        if (self.domain, op_type) in registered_ops():
            raise InvalidArgument(f"Custom op {self.name}: onnxide implements this op itself, a custom op cannot "
                                  f"replace it")
        self.inputs = None if inputs is None else [_type_code(c, f"{self.name} input {i}")
                                                   for i, c in enumerate(inputs)]
        self.outputs = None if outputs is None else [_type_code(c, f"{self.name} output {i}")
                                                     for i, c in enumerate(outputs)]
        if self.outputs is not None and not self.outputs:
            raise InvalidArgument(f"Custom op {self.name} declares no outputs")
        if shape_fn is not None and not callable(shape_fn):
            raise InvalidArgument(f"Custom op {self.name}: shape_fn must be callable")
        self.shape_fn = shape_fn
        self.attrs, self.required = self._attributes(attrs)

    def _attributes(self, attrs):
        """({name: kind}, required names); (None, set()) when the node's attributes pass as they are."""
        if attrs is None:
            return None, set()
        if isinstance(attrs, (list, tuple)):  # onnxruntime-extensions' form: names of string attributes
            attrs = dict.fromkeys(attrs, dt.STRING)
        if not isinstance(attrs, dict):
            raise InvalidArgument(f"Custom op {self.name}: attrs must be a dict {{name: type}} or a list of names")
        kinds = {str(n): _attr_kind(t, f"{self.name} attribute '{n}'") for n, t in attrs.items()}
        optional, needed, any_kw = _keywords(self.fn)
        if not any_kw:
            unknown = sorted(set(kinds) - optional - needed)
            if unknown:
                raise InvalidArgument(f"Custom op {self.name}: the function takes no keyword parameter for "
                                      f"attribute(s) {unknown}")
        return kinds, {n for n in kinds if n in needed}

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"CustomOp({self.name})"

    # --- load time ---------------------------------------------------------------------------------------------
    def check_node(self, node):
        """InvalidGraph naming the node when its inputs, outputs or attributes do not fit the declaration."""
        label = f"{node.op_type} node. Name:'{node.name}'"
        if self.inputs is not None and len(node.inputs) != len(self.inputs):
            raise InvalidGraph(f"{label}: custom op {self.name} takes {len(self.inputs)} input(s), the node has "
                               f"{len(node.inputs)}")
        if self.outputs is not None and len(node.outputs) != len(self.outputs):
            raise InvalidGraph(f"{label}: custom op {self.name} gives {len(self.outputs)} output(s), the node has "
                               f"{len(node.outputs)}")
        if self.attrs is None:
            return
        unknown = sorted(set(node.attrs) - set(self.attrs))
        if unknown:
            raise InvalidGraph(f"{label}: custom op {self.name} declares no attribute(s) {unknown} (it declares "
                               f"{sorted(self.attrs)})")
        missing = sorted(self.required - set(node.attrs))
        if missing:
            raise InvalidGraph(f"{label}: custom op {self.name} needs attribute(s) {missing}")
        for name, value in node.attrs.items():
            if not _kind_matches(self.attrs[name], value):
                raise InvalidGraph(f"{label}: mismatched attribute type '{name}' of custom op {self.name}: expected "
                                   f"{_KIND_NAMES[self.attrs[name]]}")

    def infer(self, facts):
        """The shape / type rule: declared output types, shapes from shape_fn where it can tell at load."""
        n = facts.n_outputs
        types = self.outputs if self.outputs is not None else [None] * n
        shapes = None
        if self.shape_fn is not None:
            try:  # (load-time shapes may be symbolic or unknown: what the function cannot tell stays unknown)
                shapes = self._shapes([facts.dims(i) for i in range(len(facts.node.inputs))], facts.node.attrs)
            except Exception:  # noqa: BLE001 - checked again on the real shapes at every call
                shapes = None
        return [(types[i] if i < len(types) else None, shapes[i] if shapes is not None else None) for i in range(n)]

    def _shapes(self, input_shapes, attrs):
        """shape_fn's result for these input shapes, checked to be one shape per output."""
        optional, needed, any_kw = _keywords(self.shape_fn)
        kw = {k: v for k, v in attrs.items() if any_kw or k in optional or k in needed}
        res = self.shape_fn(*input_shapes, **kw)
        n = len(self.outputs) if self.outputs is not None else None
        ok = isinstance(res, (list, tuple)) and (n is None or len(res) == n) and all(
            isinstance(s, (list, tuple)) and all(d is None or isinstance(d, str) or
                                                 isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
                                                 for d in s) for s in res)
        if not ok:
            raise RuntimeException(f"custom op {self.name}: shape_fn must return a list with one shape (a list of "
                                   f"dims) per output, got {res!r}")
        return [[int(d) if isinstance(d, (int, np.integer)) else d for d in s] for s in res]

    def bind(self, spec):
        """The kernel for the node `spec` describes (its declared types checked against the graph's first)."""
        node = spec.node
        for i, (want, got) in enumerate(zip(self.inputs or [], spec.input_types)):
            if want is not None and isinstance(got, int) and got != want:
                raise InvalidGraph(f"This is an invalid model. Type Error: Type '{dt.type_string(got)}' of input "
                                   f"parameter ({node.inputs[i]}) of operator ({node.op_type}) in node ({node.name}) "
                                   f"is invalid: custom op {self.name} takes {dt.type_string(want)}")
        for i, (want, got) in enumerate(zip(self.outputs or [], spec.output_types)):
            if want is not None and isinstance(got, int) and got != want:
                raise Fail(f"Type Error: Type ({dt.type_string(got)}) of output arg ({node.outputs[i]}) of node "
                           f"({node.name}) does not match expected type ({dt.type_string(want)}).")
        return _BoundKernel(self, node, spec)


class _BoundKernel:
    """A custom op's kernel for one node: calls the function and checks what it gets and returns."""

    def __init__(self, op, node, spec):
        self.op, self.outs = op, list(node.outputs)
        self.out_types = [(op.outputs[i] if op.outputs is not None else None) or
                          (t if isinstance(t, int) else None) for i, t in enumerate(spec.output_types)]
        self.declared = spec.output_shapes  # (what the model declares; checked where there is no shape_fn)

    def __call__(self, *inputs, **attrs):
        op = self.op
        for i, (x, want) in enumerate(zip(inputs, op.inputs or [])):
            got = _code(x)
            if want is not None and got != want:
                raise InvalidArgument(f"custom op {op.name} input {i} is {_type_text(got, x)}, it takes "
                                      f"{dt.type_string(want)}")
        res = op.fn(*inputs, **attrs)
        if inspect.isawaitable(res):
            return _Later(res, lambda value: self.outputs(value, inputs, attrs))
        return self.outputs(res, inputs, attrs)

    def outputs(self, res, inputs, attrs):
        """The function's result as the node's output tuple, or RuntimeException naming the op and the output."""
        op, n = self.op, len(self.outs)
        values = list(res) if isinstance(res, tuple) or (n > 1 and isinstance(res, list)) else [res]
        if len(values) != n:
            raise RuntimeException(f"custom op {op.name} returned {len(values)} value(s), the node has {n} output(s)")
        expected, source = None, "declared in the model"
        if op.shape_fn is not None:
            expected, source = op._shapes([list(np.shape(x)) if x is not None else None for x in inputs], attrs), \
                "from its shape_fn"
        out = []
        for i, v in enumerate(values):
            what = f"custom op {op.name} output {i} ('{self.outs[i]}')"
            if isinstance(v, np.generic):
                v = np.asarray(v)
            if not isinstance(v, np.ndarray):
                raise RuntimeException(f"{what} is a {type(v).__name__}, not a numpy array")
            got, want = _code(v), self.out_types[i]
            if got is None or (want is not None and got != want):
                raise RuntimeException(f"{what} is {_type_text(got, v)}, declared {dt.type_string(want)}"
                                       if want is not None else f"{what} has dtype {v.dtype}, which is no ONNX type")
            if got == dt.STRING and v.dtype != object:
                v = v.astype(object)
            shape = expected[i] if expected is not None else (self.declared[i] if i < len(self.declared) else None)
            if shape is not None and (len(shape) != v.ndim or any(isinstance(d, int) and d != g
                                                                 for d, g in zip(shape, v.shape))):
                raise RuntimeException(f"{what} has shape {_shape_text(v.shape)}, expected {_shape_text(shape)} "
                                       f"({source})")
            if any(v is x for x in inputs):  # (an output never aliases an input)
                v = v.copy()
            out.append(v)
        return tuple(out) if n > 1 else out[0]


class _Later:
    """An async kernel's awaitable with its results checked once they come; closing it closes the function's own
    (a sync run refuses it unawaited)."""

    def __init__(self, inner, finish):
        self.inner, self.finish = inner, finish

    def __await__(self):
        value = yield from self.inner.__await__()
        return self.finish(value)

    def close(self):
        if hasattr(self.inner, "close"):
            self.inner.close()


def _code(x):
    try:
        return dt.code_of(x.dtype)
    except (KeyError, AttributeError, TypeError):
        return None


def _type_text(code, x):
    return dt.type_string(code) if code is not None else f"dtype {getattr(x, 'dtype', type(x).__name__)}"


class CustomOpDef(OpDef):
    """The OpDef of a custom op in one session: no signature to read, the declaration says it all."""

    def __init__(self, op):  # noqa: super().__init__ reads a kernel's signature, which a custom op has not
        self.custom = op
        self.domain, self.op_type, self.since, self.kernel, self.infer = op.domain, op.op_type, 1, op.fn, op.infer
        self.host_inputs = self.meta_inputs = frozenset()
        self.attrs = {n: None for n in (op.attrs or {}) if n not in op.required}
        self.required, self.any_attrs, self.wants_ctx = set(op.required), op.attrs is None, False
        self.variadic = op.inputs is None
        self.n_inputs = self.n_required = len(op.inputs or [])


DECLARED = {}  # (domain, op_type) -> CustomOp: the @onnx_op ops, which register_custom_ops_library enables


def session_table(registered, with_declared):
    """{(domain, op_type): CustomOpDef} of a session: its options' registered ops, then (with the library
    registered) the declared ones of other names."""
    table = {}
    for op in list(registered) + (list(DECLARED.values()) if with_declared else []):
        if (op.domain, op.op_type) not in table:
            table[(op.domain, op.op_type)] = CustomOpDef(op)
    return table
