"""The op registry: each op defined once — (domain, name, since-version) → numpy kernel with its attributes.

A kernel is a plain function registered with `@op`:

    @op("LeakyRelu", since=6)
    def leaky_relu(x, *, alpha=0.01):
        return np.where(x >= 0, x, x * np.asarray(alpha, x.dtype))

- Positional parameters are the node's inputs in order; an omitted optional input arrives as None.
  A `*inputs` parameter takes variadic inputs.
- Keyword-only parameters are the ONNX attributes; their defaults are the ONNX defaults. An attribute without a
  default is required. A node carrying an attribute the kernel does not declare is refused at session creation
  (never silently ignored) unless the kernel takes `**attrs`.
- A keyword-only parameter named `ctx` receives the `KernelContext` (number of outputs, opset, node name,
  subgraph execution for If/Loop/Scan: their kernels are generators, `outs = yield from ctx.run_graph(g, ins)`, so
  a body may await device work).
- Return one array, or a tuple/list of arrays for several outputs (sequence outputs are Python lists, an absent
  optional is None). Kernels must return the ONNX output dtype exactly.
- Placement facts, read by every device EP and the planner: `host_inputs` are the input indices whose values the
  kernel reads as parameters (shapes, axes, pads, scales, repeats, k, conditions...): they are always host values,
  also when a GPU EP runs the node. `meta_inputs` are inputs of which only the shape and dtype are read (Shape,
  Size, the *Like ops): they are passed where they live, never transferred, and kernels read only `.shape`,
  `.dtype`, `.ndim`, `.size` of them.

Lookup picks the registration with the largest `since` not above the model's opset for that domain. A session's
custom ops (ops/custom.py) are resolved first while the session is being built (`session_ops`).
"""
import contextlib
import contextvars
import inspect

from ..errors import Fail, InvalidGraph, NotImplemented as OrtNotImplemented
from .ort_contrib_names import SCHEMA_NAMES

_REGISTRY = {}  # (domain, op_type) -> sorted list of OpDef by since
_DOMAINS = set()  # the domains onnxide has ops of
_SESSION_OPS = contextvars.ContextVar("onnxide_session_ops", default=None)  # {(domain, op_type): OpDef} or None

ONNX_DOMAIN = ""
ML_DOMAIN = "ai.onnx.ml"
MS_DOMAIN = "com.microsoft"


class OpDef:
    """One registered version of an op: its kernel and the attribute names/defaults read from the signature."""

    __slots__ = ("domain", "op_type", "since", "kernel", "attrs", "required", "any_attrs", "wants_ctx",
                 "n_inputs", "n_required", "variadic", "infer", "host_inputs", "meta_inputs")
    custom = None  # the CustomOp of a custom op's OpDef (ops/custom.py)

    def __init__(self, domain, op_type, since, kernel, infer=None, host_inputs=(), meta_inputs=()):
        self.domain, self.op_type, self.since, self.kernel, self.infer = domain, op_type, since, kernel, infer
        self.host_inputs, self.meta_inputs = frozenset(host_inputs), frozenset(meta_inputs)
        self.attrs, self.required = {}, set()
        self.any_attrs = self.wants_ctx = self.variadic = False
        self.n_inputs = self.n_required = 0  # inputs it takes; the leading ones it needs (no default)
        for kind, name, default in _parameters(kernel):
            if kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
                self.n_inputs += 1
                if default is _P.empty and self.n_required == self.n_inputs - 1:
                    self.n_required += 1
            elif kind == _P.VAR_POSITIONAL:
                self.variadic = True
            elif kind == _P.VAR_KEYWORD:
                self.any_attrs = True
            elif name == "ctx":
                self.wants_ctx = True
            elif default is _P.empty:
                self.required.add(name)
            else:
                self.attrs[name] = default

    def __repr__(self):
        return f"OpDef({self.domain or 'ai.onnx'}::{self.op_type} since {self.since})"


_P = inspect.Parameter


def _parameters(kernel):
    """(kind, name, default or _P.empty) of `kernel`'s parameters, as inspect.signature gives them: its own where a
    kernel sets __signature__, else read from the (unwrapped) function's code object (inspect.signature took ~17 us
    a kernel natively, several times that in Pyodide's import; measured at the time)."""
    fn = inspect.unwrap(kernel, stop=lambda f: hasattr(f, "__signature__"))
    if hasattr(fn, "__signature__") or not hasattr(fn, "__code__"):
        return [(p.kind, p.name, p.default) for p in inspect.signature(fn).parameters.values()]
    code, defaults, kw_defaults = fn.__code__, fn.__defaults__ or (), fn.__kwdefaults__ or {}
    names, n_pos, n_kw = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    first_default = n_pos - len(defaults)
    out = [(_P.POSITIONAL_ONLY if i < code.co_posonlyargcount else _P.POSITIONAL_OR_KEYWORD, names[i],
            defaults[i - first_default] if i >= first_default else _P.empty) for i in range(n_pos)]
    rest = n_pos + n_kw
    if code.co_flags & inspect.CO_VARARGS:
        out.append((_P.VAR_POSITIONAL, names[rest], _P.empty))
        rest += 1
    out += [(_P.KEYWORD_ONLY, k, kw_defaults.get(k, _P.empty)) for k in names[n_pos:n_pos + n_kw]]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        out.append((_P.VAR_KEYWORD, names[rest], _P.empty))
    return out


def op(op_type, since=1, domain=ONNX_DOMAIN, infer=None, host_inputs=(), meta_inputs=()):
    """Register the decorated function as the kernel of `op_type` from opset `since` on (see module doc)."""

    def deco(fn):
        defs = _REGISTRY.setdefault((domain, op_type), [])
        if any(d.since == since for d in defs):
            raise ValueError(f"{domain}::{op_type} since {since} registered twice")
        defs.append(OpDef(domain, op_type, since, fn, infer, host_inputs, meta_inputs))
        _DOMAINS.add(domain)
        defs.sort(key=lambda d: d.since)
        _FOUND.clear()
        return fn

    return deco


def normalize_domain(domain):
    return "" if domain in ("", "ai.onnx") else domain


_FOUND = {}  # (domain, op_type, opset) -> OpDef that lookup found (cleared when an op is registered)


def lookup(domain, op_type, opset):
    """The OpDef for `op_type` at `opset` of `domain`, or raise onnxide's NotImplemented naming the op."""
    key = (domain, op_type, opset)
    found = _FOUND.get(key)
    if found is not None:
        return found
    domain = normalize_domain(domain)
    defs = _REGISTRY.get((domain, op_type))
    if not defs:
        raise OrtNotImplemented(
            f"Could not find an implementation for {op_type}({opset}) node of domain '{domain or 'ai.onnx'}'")
    best = None
    for d in defs:
        if d.since <= opset:
            best = d
    if best is None:
        raise OrtNotImplemented(
            f"Could not find an implementation for {op_type}({opset}) node of domain '{domain or 'ai.onnx'}'"
            f" (implemented from opset {defs[0].since})")
    _FOUND[key] = best
    return best


DEFAULT_OPSETS = {ML_DOMAIN: 5, MS_DOMAIN: 1, "ai.onnx.preview.training": 1, "ai.onnx.preview": 1}


@contextlib.contextmanager
def session_ops(table):
    """While building a session: its custom ops ({(domain, op_type): OpDef}) resolve ahead of the registry."""
    token = _SESSION_OPS.set(table or None)
    try:
        yield
    finally:
        _SESSION_OPS.reset(token)


def node_opset(node, opsets):
    """The opset version `node` is read under: its own (from a function body), else the model's for its domain, else
    onnxide's default for that domain."""
    domain = normalize_domain(node.domain)
    version = node.opset if node.opset is not None else opsets.get(domain)
    if version is None and domain == "":  # onnx's checker refuses it; onnxruntime would read it as the newest opset
        raise InvalidGraph(f"No opset import for domain '' (ai.onnx), which node '{node.name}' ({node.op_type}) "
                           "uses")
    return DEFAULT_OPSETS.get(domain, 1) if version is None else version


def known_domain(domain):
    """Whether onnxide has ops of the (normalized) `domain` or reads it by default (ONNX, ONNX-ML, com.microsoft, the
    preview ones); a session's custom ops resolve before this is asked."""
    return domain == "" or domain in _DOMAINS or domain in DEFAULT_OPSETS


def resolve_opdef(node, opsets):
    """(OpDef, opset version) for `node` under the model's opsets (a node may carry its own opset from a function
    body). An op of a domain onnxide has no ops of is onnxruntime's Fail for an unregistered op."""
    domain = normalize_domain(node.domain)
    version = node_opset(node, opsets)
    custom = _SESSION_OPS.get()
    if custom is not None and (domain, node.op_type) in custom:
        return custom[(domain, node.op_type)], version
    if not known_domain(domain) or (
            domain == MS_DOMAIN and (domain, node.op_type) not in _REGISTRY and node.op_type not in SCHEMA_NAMES):
        raise Fail(f"Fatal error: {domain}:{node.op_type}(-1) is not a registered function/op")
    return lookup(domain, node.op_type, version), version


def newest_opset(domain):
    """The newest opset of `domain` onnxide implements an op of (onnxruntime's too), or None for another domain."""
    defs = [d.since for (dom, _), ds in _REGISTRY.items() if dom == normalize_domain(domain) for d in ds]
    return max(defs) if defs else None


def registered_ops():
    """{(domain, op_type): [since, ...]} for reports."""
    return {k: [d.since for d in v] for k, v in _REGISTRY.items()}
