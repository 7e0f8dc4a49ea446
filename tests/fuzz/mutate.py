"""Mutated models from seeds: byte-level (bit flips, byte values, truncation, insertion, deletion, duplicated
chunks), field-level on the decoded message tree (dims, element types, attributes, names, any field of any message;
repeated fields dropped / duplicated / cleared), structural (nesting nodes in If branches, deep nesting, duplicated or
dropped nodes) — and the feeds each mutant gets. Deterministic per (seed, rng)."""
import math

import numpy as np

from onnxide import dtypes as dt
from onnxide import proto
from onnxide.proto import wire

INTS = [0, 1, -1, 2, 3, 7, -2, 64, 255, 2**31 - 1, 2**31, -2**31, 2**32, 2**40, 2**62, -2**63, 2**63 - 1]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, float("nan"), float("inf"), float("-inf"), 1e30, -1e30, 1e-30, 3.4e38]
STRINGS = ["", "x", "y", "bogus", "Relu", "Conv", "If", "Loop", "com.microsoft", "ai.onnx.ml", "no.such.domain",
           "../../../etc/passwd", "/etc/passwd", "\x00", "é" * 3, "z" * 300, "NOTSET", "SAME_UPPER", "VALID",
           "location", "offset", "length", "linear", "nearest", "constant", "reflect"]
ELEM_TYPES = list(range(0, 27)) + [-1, 99, 2**31]
ATTR_TYPES = list(range(0, 15)) + [-1, 99]


def _messages(msg, out, parent=None):
    """Every Message in the tree (with itself first), depth first."""
    out.append(msg)
    for f in msg.FIELDS.values():
        if f.kind != wire.MESSAGE:
            continue
        v = getattr(msg, f.name)
        for m in (v if f.repeated else [v] if v is not None else []):
            if isinstance(m, wire.Message):  # a mutant may have put a scalar where a message belongs
                _messages(m, out)
    return out


def _names(model):
    """Value and node names found in the model (aliasing one to another makes duplicates and dangling refs)."""
    names = set()
    for m in _messages(model, []):
        if isinstance(m, proto.NodeProto):
            names.update(m.input + m.output + [m.name])
        elif isinstance(m, (proto.ValueInfoProto, proto.TensorProto)):
            names.add(m.name)
    names.discard("")
    return sorted(names)


def _clone(v):
    """A deep copy of a message (re-decoded: bytes fields are memoryviews, which copy.deepcopy refuses); a message an
    earlier mutation made unwritable (a scalar where a message belongs) is shared instead."""
    if not isinstance(v, wire.Message):
        return v
    try:
        return wire.decode(type(v), wire.encode(v))
    except Exception:  # noqa: BLE001 - proto.encode(model) fails on it later: the bytes mutation instead
        return v


def _int(rng, v):
    choice = rng.integers(4)
    if choice == 0:
        return int(rng.choice(INTS))
    if choice == 1:
        return int(v) + int(rng.choice([-1, 1, -2, 2]))
    if choice == 2:
        return -int(v) if v else int(rng.integers(-3, 30))
    return int(rng.integers(-4, 40))


def _scalar(rng, f, v, names):
    k = f.kind
    if k in (wire.INT, wire.UINT):
        out = _int(rng, v or 0)
        return out % (1 << 64) if k == wire.UINT else out
    if k in (wire.FLOAT, wire.DOUBLE):
        return float(rng.choice(FLOATS)) if rng.random() < 0.7 else float(v or 0) * float(rng.choice([2, -1, 1e6]))
    if k == wire.STRING:
        return str(rng.choice(names)) if names and rng.random() < 0.5 else str(rng.choice(STRINGS))
    data = bytes(v or b"")  # BYTES
    r = rng.integers(4)
    if r == 0:
        return data[:int(rng.integers(0, len(data) + 1))]
    if r == 1:
        return data + rng.bytes(int(rng.integers(1, 64)))
    if r == 2:
        return rng.bytes(len(data))
    return b""


def _mutate_repeated(rng, msg, f, names, pool):
    items = getattr(msg, f.name)
    r = rng.integers(6)
    if r == 0 and items:
        del items[int(rng.integers(len(items)))]
    elif r == 1 and items:
        i = int(rng.integers(len(items)))
        items.insert(i, _clone(items[i]))
    elif r == 2:
        items.clear()
    elif r == 3 and len(items) > 1:
        i, j = rng.choice(len(items), 2, replace=False)
        items[i], items[j] = items[j], items[i]
    elif f.kind == wire.MESSAGE:
        same = [m for m in pool if type(m).__name__ == f.message]
        if same:
            items.append(_clone(same[int(rng.integers(len(same)))]))
    elif items and rng.random() < 0.6:
        i = int(rng.integers(len(items)))
        items[i] = _scalar(rng, f, items[i], names)
    else:
        items.append(_scalar(rng, f, None, names))


def _mutate_field(rng, msg, f, names, pool):
    if f.repeated:
        return _mutate_repeated(rng, msg, f, names, pool)
    v = getattr(msg, f.name)
    if f.kind == wire.MESSAGE:
        same = [m for m in pool if type(m).__name__ == f.message and m is not v]
        if v is not None and (rng.random() < 0.5 or not same):
            setattr(msg, f.name, None)
        elif same:
            setattr(msg, f.name, _clone(same[int(rng.integers(len(same)))]))
        return
    setattr(msg, f.name, _scalar(rng, f, v, names))


def _set_fields(msg):
    return [f for f in msg.FIELDS.values() if getattr(msg, f.name) not in (None, [], 0, 0.0, "", b"")
            or (f.presence and getattr(msg, f.name) is not None)]


# the fields a focused mutation picks from: (message class, field names)
FOCUS = {
    "attribute": (proto.AttributeProto, ("i", "f", "ints", "floats", "s", "strings", "type", "t", "g", "name")),
    "dims": (None, ("dims", "dim_value", "dim_param", "dim")),
    "types": (None, ("elem_type", "data_type", "key_type")),
    "nodes": (proto.NodeProto, ("input", "output", "op_type", "domain", "attribute")),
    "graph": (proto.GraphProto, ("node", "initializer", "input", "output", "value_info")),
    "opset": (proto.OperatorSetIdProto, ("domain", "version")),
}


def _focused(rng, model, focus, names, pool):
    cls, fields = FOCUS[focus]
    cands = [(m, m._BY_NAME[n]) for m in pool if cls is None or isinstance(m, cls) for n in fields
             if n in m._BY_NAME]
    if not cands:
        return False
    m, f = cands[int(rng.integers(len(cands)))]
    if f.name in ("elem_type", "data_type", "key_type") and rng.random() < 0.8:
        setattr(m, f.name, int(rng.choice(ELEM_TYPES)))
    elif f.name == "type" and rng.random() < 0.8:
        m.type = int(rng.choice(ATTR_TYPES))
    else:
        _mutate_field(rng, m, f, names, pool)
    return True


def _generic(rng, model, names, pool):
    m = pool[int(rng.integers(len(pool)))]
    fields = _set_fields(m)
    if not fields or rng.random() < 0.15:
        fields = list(m.FIELDS.values())
    _mutate_field(rng, m, fields[int(rng.integers(len(fields)))], names, pool)


def _nest(rng, model, depth=1):
    """Wrap a node of the main graph in `depth` nested Ifs with a constant true condition (the then branch holds the
    level below, the else branch the node itself: the size grows linearly with the depth)."""
    g = model.graph
    if g is None or not g.node:
        return False
    i = int(rng.integers(len(g.node)))
    node = g.node[i]
    cond = "__fuzz_cond"
    if not any(t.name == cond for t in g.initializer):
        g.initializer.append(proto.TensorProto(name=cond, data_type=dt.BOOL, dims=[], int32_data=[1]))
    outs = [o for o in node.output if o]
    inner = node
    for level in range(depth):
        branches = []
        for which, body in (("then", inner), ("else", node)):
            b = _clone(body) if body is node else body
            b.output = [f"{o}__{which}{level}" if o else "" for o in body.output]
            branches.append(proto.GraphProto(name=f"{which}{level}", node=[b], output=[
                proto.ValueInfoProto(name=o) for o in b.output if o]))
        inner = proto.NodeProto(op_type="If", input=[cond], output=list(node.output), name=f"__fuzz_if{level}",
                                attribute=[proto.AttributeProto(name=n, type=5, g=b) for n, b in
                                           zip(("then_branch", "else_branch"), branches)])
    g.node[i] = inner
    return bool(outs)


def _structural(rng, model):
    g = model.graph
    if g is None or not g.node:
        return False
    r = rng.integers(5)
    if r == 0:
        return _nest(rng, model)
    if r == 1:
        return _nest(rng, model, int(rng.choice([8, 30, 60])))
    if r == 2:  # a node twice (duplicate output names)
        i = int(rng.integers(len(g.node)))
        g.node.insert(i, _clone(g.node[i]))
    elif r == 3:  # nodes reversed (the order need not be topological)
        g.node.reverse()
    else:  # a node's output renamed to another value's name
        names = _names(model)
        n = g.node[int(rng.integers(len(g.node)))]
        if n.output and names:
            n.output[int(rng.integers(len(n.output)))] = str(rng.choice(names))
    return True


def _bytes_mutation(rng, data):
    b = bytearray(data)
    if not b:
        return bytes(rng.bytes(8))
    r = rng.integers(6)
    n = len(b)
    if r == 0:  # bit flips
        for _ in range(int(rng.integers(1, 9))):
            i = int(rng.integers(n))
            b[i] ^= 1 << int(rng.integers(8))
    elif r == 1:  # interesting byte values
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(n))] = int(rng.choice([0, 1, 0x7F, 0x80, 0xFF, 0x08, 0x12]))
    elif r == 2:
        b = b[:int(rng.integers(n))]
    elif r == 3:
        i = int(rng.integers(n + 1))
        b[i:i] = rng.bytes(int(rng.integers(1, 16)))
    elif r == 4:
        i = int(rng.integers(n))
        del b[i:i + int(rng.integers(1, 16))]
    else:
        i = int(rng.integers(n))
        j = min(n, i + int(rng.integers(1, 256)))
        k = int(rng.integers(n + 1))
        b[k:k] = b[i:j]
    return bytes(b)


def mutate_model(rng, data):
    """(mutated model bytes, description)."""
    r = rng.random()
    if r < 0.25:
        return _bytes_mutation(rng, data), "bytes"
    try:
        model = proto.parse(proto.ModelProto, data)
    except Exception:  # noqa: BLE001 - a seed our codec refuses: mutate its bytes
        return _bytes_mutation(rng, data), "bytes"
    kinds = []
    for _ in range(int(rng.choice([1, 1, 1, 2, 3]))):
        pool = _messages(model, [])
        names = _names(model)
        r = rng.random()
        if r < 0.12:
            done, kind = _structural(rng, model), "structure"
        elif r < 0.85:
            kind = str(rng.choice(["attribute", "attribute", "dims", "dims", "types", "nodes", "graph", "opset"]))
            done = _focused(rng, model, kind, names, pool)
        else:
            _generic(rng, model, names, pool)
            done, kind = True, "field"
        if done:
            kinds.append(kind)
    try:
        out = proto.encode(model)
    except Exception:  # noqa: BLE001 - a value the encoder cannot write (a huge int): the bytes mutation instead
        return _bytes_mutation(rng, data), "bytes"
    return out, "+".join(kinds) or "none"


# ---- feeds ---------------------------------------------------------------------------------------------------------

MAX_FEED = 1 << 18  # elements of one synthesized feed


def _declared(vi):
    """(numpy dtype, dims) of a tensor graph input as declared, or None."""
    tp = vi.type
    if tp is None or tp.tensor_type is None:
        return None
    code = tp.tensor_type.elem_type
    try:
        dtype = dt.np_dtype(code)
    except (KeyError, ValueError, TypeError):
        return None
    if dt.is_exotic(code) or dtype == object and code != dt.STRING:
        return None
    shape = tp.tensor_type.shape
    dims = None if shape is None else [d.dim_value if d.dim_value is not None else None for d in shape.dim]
    return dtype, dims


def _fits(value, decl):
    dtype, dims = decl
    if not isinstance(value, np.ndarray) or value.dtype != dtype:
        return False
    return dims is None or (len(dims) == value.ndim and all(d is None or d == s for d, s in zip(dims, value.shape)))


def _synth(rng, decl, like):
    dtype, dims = decl
    if dims is None:
        dims = list(like.shape) if isinstance(like, np.ndarray) else [2, 3]
    shape = [d if d is not None else (like.shape[i] if isinstance(like, np.ndarray) and i < like.ndim else 2)
             for i, d in enumerate(dims)]
    if any(d < 0 for d in shape) or math.prod(shape) > MAX_FEED:
        return None
    if dtype == object:
        return np.array(["a"] * math.prod(shape), dtype=object).reshape(shape)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 4, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _bad_feed(rng, value):
    if not isinstance(value, np.ndarray):
        return value
    r = rng.integers(5)
    if r == 0:  # (a string tensor becomes a float one: strings need not parse as numbers)
        return np.zeros(value.shape, np.float32) if value.dtype == object else \
            value.astype(np.float64 if value.dtype != np.float64 else np.float32)
    if r == 1:
        return value.reshape(value.shape + (1,))
    if r == 2 and value.ndim:
        return np.zeros((0,) + value.shape[1:], value.dtype)
    if r == 3 and value.dtype.kind == "f":
        v = value.copy()
        v.reshape(-1)[:: 3] = np.nan
        return v
    return value.reshape(-1) if value.ndim > 1 else value[None]


def feeds_for(rng, data, seed_feeds):
    """The feeds a mutant gets: the seed's where they still fit its declared inputs, synthesized from the declared
    type where not, sometimes one made wrong on purpose (dtype, rank, empty, NaN)."""
    try:
        model = proto.parse(proto.ModelProto, data)
        g = model.graph
        inits = {t.name for t in g.initializer}
        inputs = [vi for vi in g.input if vi.name not in inits]
    except Exception:  # noqa: BLE001 - undecodable: the engines refuse it before any feed matters
        return dict(seed_feeds)
    feeds = {}
    for vi in inputs:
        like = seed_feeds.get(vi.name)
        decl = _declared(vi)
        if decl is None or (like is not None and _fits(like, decl)):
            if like is not None:
                feeds[vi.name] = like
            continue
        made = _synth(rng, decl, like)
        if made is not None:
            feeds[vi.name] = made
        elif like is not None:
            feeds[vi.name] = like
    if feeds and rng.random() < 0.05:
        k = sorted(feeds)[int(rng.integers(len(feeds)))]
        feeds[k] = _bad_feed(rng, feeds[k])
    return feeds


def mutant(seeds, base_seed, index):
    """Case `index` of the campaign `base_seed`: (seed name, description, model bytes, feeds)."""
    rng = np.random.default_rng([base_seed, index])
    s = seeds[int(rng.integers(len(seeds)))]
    data, how = mutate_model(rng, s.model)
    return s.name, how, data, feeds_for(rng, data, s.feeds)
