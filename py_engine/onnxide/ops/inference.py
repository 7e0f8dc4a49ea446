"""The vocabulary of shape and type rules: what each op module uses to state, next to its kernels, the element types
and dims of its outputs (ir/infer.py runs the rules over a graph).

A rule is attached to every version of an op with `rule("Op", ...)` (or `@op(..., infer=fn)`) and called with the
node's `Facts`; it returns one (elem_type, dims) entry per output, None for an output it cannot tell. An elem_type is
an ONNX element type code, a `SequenceOf` / `OptionalOf` an entry, or None (unknown); dims is a list of int (static)
/ str (symbolic) / None (unknown) per dim, or None for an unknown rank. Rules state only what the ONNX spec fixes from
the inputs and attributes; what it leaves open stays None — inference never guesses.
"""
from collections import namedtuple

import numpy as np

from .. import dtypes as dt
from .. import proto as P
from ..errors import NotImplemented as OrtNotImplemented
from ..ir.model import type_dims
from .registry import ONNX_DOMAIN, lookup

UNKNOWN = (None, None)
SequenceOf = namedtuple("SequenceOf", "of")  # the type of a sequence whose tensors are of entry `of`
OptionalOf = namedtuple("OptionalOf", "of")  # the type of an optional holding a value of entry `of`


class Facts:
    """What a rule reads of a node: `node`, `ins` (an (elem_type, dims) entry per input, UNKNOWN when absent or
    unknown), `opset` (the node's opset version for its domain), `consts` (name -> small constant array) and `sv`
    (name -> (entries, is_scalar) of the small int tensors that hold shapes). A rule whose op computes such a tensor
    states its entries with `holds()`."""

    __slots__ = ("node", "ins", "opset", "consts", "sv", "value")

    def __init__(self, node, ins, opset, consts, sv):
        self.node, self.ins, self.opset, self.consts, self.sv = node, ins, opset, consts, sv
        self.value = None

    def attr(self, name, default=None):
        return self.node.attrs.get(name, default)

    @property
    def n_outputs(self):
        return len(self.node.outputs)

    def has(self, i):
        """True when input i is given (not omitted)."""
        return i < len(self.node.inputs) and bool(self.node.inputs[i])

    def type(self, i=0):
        return self.ins[i][0] if i < len(self.ins) else None

    def dims(self, i=0):
        return self.ins[i][1] if i < len(self.ins) else None

    def rank(self, i=0):
        d = self.dims(i)
        return None if d is None else len(d)

    def common_type(self, indices=None):
        """The element type of inputs the spec types alike (all present inputs, or `indices`): the first one known."""
        for i in range(len(self.ins)) if indices is None else indices:
            t = self.type(i)
            if t is not None:
                return t
        return None

    def const(self, i):
        """Input i's value when it is a small constant, else None."""
        return self.consts.get(self.node.inputs[i]) if self.has(i) else None

    def ints(self, i):
        """Input i's constant value as a list of ints, else None."""
        v = self.const(i)
        return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]

    def shape_value(self, i):
        """(entries, is_scalar) of input i when it holds shape entries, else None."""
        return self.sv.get(self.node.inputs[i]) if self.has(i) else None

    def holds(self, entries, scalar=False):
        """State that output 0 holds these shape entries (int / symbolic name / None each)."""
        self.value = (list(entries), scalar)


def _versions(domain, op_type):
    """Every registered OpDef of an op, newest first."""
    defs, opset = [], 1 << 30
    while True:
        try:
            d = lookup(domain, op_type, opset)
        except OrtNotImplemented:
            return defs
        defs.append(d)
        opset = d.since - 1


def rule(*op_types, domain=ONNX_DOMAIN):
    """Decorator: `fn` is the shape/type rule of every version of each of `op_types` (registered before it)."""

    def attach(fn):
        for op_type in op_types:
            defs = _versions(domain, op_type)
            if not defs:
                raise ValueError(f"{domain or 'ai.onnx'}::{op_type}: a rule for an op without a kernel")
            for d in defs:
                d.infer = fn
        return fn

    return attach


# ---------------------------------------------------------------------------------------------------------------
# dims helpers
# ---------------------------------------------------------------------------------------------------------------

def positive_axis(axis, rank):
    """`axis` counted from the front (a negative axis counts from the end); no range check."""
    return axis + rank if axis < 0 else axis


def product(dims):
    """The product of dims when all are static, else None."""
    if all(isinstance(d, int) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    return None


def broadcast(shapes):
    """Numpy broadcasting of dims lists (None when a rank is unknown); a dim stays unknown unless it is certain."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = [d for d in dims if d != 1]
        if not known:
            out.append(1)
        elif all(d == known[0] for d in known) and known[0] is not None:
            out.append(known[0])
        else:
            ints = {d for d in known if isinstance(d, int)}  # one static size: the others (symbolic or unknown)
            out.append(ints.pop() if len(ints) == 1 else None)  # are 1 or it, in any run that succeeds
    return out


def unknown_dims(rank):
    """Dims of a known rank with every dim unknown (None when the rank is unknown)."""
    return None if rank is None else [None] * rank


def same_dims(entries):
    """The dims all entries share, else None."""
    dims = [e[1] for e in entries]
    return dims[0] if dims and all(d is not None and d == dims[0] for d in dims) else None


# ---------------------------------------------------------------------------------------------------------------
# common rules
# ---------------------------------------------------------------------------------------------------------------

def same_as_input(f):
    """One output of input 0's type and dims (unary elementwise, normalisations, shape-preserving ops)."""
    return [f.ins[0] if f.ins else UNKNOWN]


def broadcast_inputs(f):
    """The dims of an ai.onnx op broadcasting its inputs together: numpy broadcasting from opset 7; before, B is
    broadcast onto A (or shapes are equal), so A's dims."""
    return f.dims(0) if f.opset < 7 else broadcast([d for _, d in f.ins])


def elementwise(f):
    """Inputs of one type broadcast together: that type, broadcast dims."""
    return [(f.common_type(), broadcast_inputs(f))]


def predicate(f):
    """Comparisons and logic: bool, the inputs' broadcast dims."""
    return [(dt.BOOL, broadcast_inputs(f))]


def fixed_type(code):
    """A rule for one output of element type `code` with input 0's dims."""

    def fixed(f):
        return [(code, f.dims(0))]

    fixed.__name__ = f"fixed_{dt.NAMES.get(code, code)}"
    return fixed


# ---------------------------------------------------------------------------------------------------------------
# entries <-> TypeProto
# ---------------------------------------------------------------------------------------------------------------

def tensor_type(elem, shape):
    """A tensor TypeProto of element type `elem` and dims `shape` (int / symbolic name / None each, or None)."""
    tt = P.TypeProtoTensor(elem_type=elem or 0)
    if shape is not None:
        tt.shape = P.TensorShapeProto(dim=[P.Dimension(dim_value=d) if isinstance(d, int) else
                                           P.Dimension(dim_param=d) if isinstance(d, str) else P.Dimension()
                                           for d in shape])
    return P.TypeProto(tensor_type=tt)


def type_proto(elem, dims):
    """The TypeProto of an entry: a tensor, or a sequence / optional of an entry (an empty TypeProto inside when
    that entry is unknown)."""
    if isinstance(elem, SequenceOf):
        return P.TypeProto(sequence_type=P.TypeProtoSequence(elem_type=_inner_proto(elem.of)))
    if isinstance(elem, OptionalOf):
        return P.TypeProto(optional_type=P.TypeProtoOptional(elem_type=_inner_proto(elem.of)))
    return tensor_type(elem, dims)


def _inner_proto(entry):
    return P.TypeProto() if entry is None or entry[0] is None else type_proto(*entry)


def type_string(tp):
    """onnxruntime's string for a TypeProto: 'tensor(float)', 'seq(tensor(int64))', 'map(string,tensor(float))', ..."""
    if tp is None:
        return "unknown"
    if tp.tensor_type is not None:
        return dt.type_string(tp.tensor_type.elem_type)
    if tp.sparse_tensor_type is not None:
        return f"sparse_tensor({dt.NAMES.get(tp.sparse_tensor_type.elem_type, 'undefined')})"
    if tp.sequence_type is not None:
        return f"seq({type_string(tp.sequence_type.elem_type)})"
    if tp.map_type is not None:
        return f"map({dt.NAMES.get(tp.map_type.key_type, 'undefined')},{type_string(tp.map_type.value_type)})"
    if tp.optional_type is not None:
        return f"optional({type_string(tp.optional_type.elem_type)})"
    return "unknown"


def entry_of(tp):
    """The (elem_type, dims) entry of a TypeProto: tensors, sequences and optionals; None for other or no types."""
    if tp is None:
        return None
    if tp.tensor_type is not None:
        return (tp.tensor_type.elem_type or None, type_dims(tp))
    if tp.sequence_type is not None:
        return (SequenceOf(entry_of(tp.sequence_type.elem_type) or UNKNOWN), None)
    if tp.optional_type is not None:
        return (OptionalOf(entry_of(tp.optional_type.elem_type) or UNKNOWN), None)
    return None
