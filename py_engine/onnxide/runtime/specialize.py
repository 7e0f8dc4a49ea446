"""Executors specialized to input shapes a session keeps seeing. For models whose inputs have symbolic dims and that
have control flow (If) or run on an EP that gains from fixed shapes (the native EP's chains): once a set of input
shapes has come twice, the model is optimized again with those dims fixed, so shape-dependent Ifs and their shape
arithmetic fold away and every value's shape is known, and runs with those shapes use that executor. In a model with
a top-level If, a scalar integer or bool input's value is part of the set too, and the specialized model takes it as
a constant (silero VAD's If on its sample rate: the branch is inlined, 230 nodes -> 88 with no If left). Bounded: a
few sets per session, models with up to 1 GB of weights, and a specialized executor may hold at most 64 MB of
constants of its own (folded ones: the weights it reads as they are stay shared with the general executor)."""
import numpy as np

from ..ir.model import subgraphs

MAX_SHAPE_SETS = 4           # specialized executors per session
RUNS_BEFORE = 2              # a shape set is specialized on its second run (a one-off run never pays for it)
MAX_WEIGHT_BYTES = 1 << 30   # bigger models are not optimized again (time, transient memory)
MAX_OWN_BYTES = 64 << 20     # constants a specialized executor may hold beyond the general one's (else dropped)


def worthwhile(model, fixed_shapes_help=False):
    """Whether a model could gain: some graph input dim is not static (or a value_inputs input decides an If), there
    is an If (or `fixed_shapes_help`: an EP of the session runs better on fixed shapes), the weights are small."""
    g = model.graph
    symbolic = any(d is None or not isinstance(d, int)
                   for v in g.inputs if v.name not in g.initializers and v.shape is not None for d in v.shape)
    return (symbolic or bool(value_inputs(model))) and _weight_bytes(g) <= MAX_WEIGHT_BYTES and \
        (fixed_shapes_help or _has_if(g))


def value_inputs(model):
    """Names of the graph inputs whose value a specialized executor takes as a constant: 0-d integer or bool inputs of a
    model with a top-level If."""
    g = model.graph
    if not any(n.op_type == "If" for n in g.nodes):
        return frozenset()
    return frozenset(v.name for v in g.inputs if v.name not in g.initializers and v.shape == [] and
                     v.elem_type in _SCALAR_TYPES)


_SCALAR_TYPES = {9, 2, 3, 4, 5, 6, 7, 12, 13}  # bool, uint8, int8, uint16, int16, int32, int64, uint32, uint64


def _has_if(g):
    return any(n.op_type == "If" or any(_has_if(sg) for sg in subgraphs(n)) for n in g.nodes)


def _weight_bytes(g):
    """Bytes of constants in `g` and its bodies (silero VAD keeps its weights inside an If branch)."""
    own = sum(a.nbytes for a in g.initializers.values() if isinstance(a, np.ndarray))
    return own + sum(_weight_bytes(sg) for n in g.nodes for sg in subgraphs(n))


def own_constant_bytes(executor, general):
    """Bytes of `executor`'s constants that are neither views of the model's bytes nor arrays `general` holds too
    (the memory a specialized executor adds: folded weights)."""
    def root(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a
    shared = {id(root(v)) for v in general.main_plan.const_env.values() if isinstance(v, np.ndarray)}
    return sum(v.nbytes for v in executor.main_plan.const_env.values()
               if isinstance(v, np.ndarray) and isinstance(root(v), np.ndarray) and id(root(v)) not in shared)


class Specializations:
    """`executor_for(feeds)`: a specialized executor for the feeds' shapes (and values of `by_value` inputs), or None
    (use the general one). `build(shapes, values)` makes one for {input name: shape} with {input name: value} taken as
    constants; a failure there leaves that set general, as does one holding more than MAX_OWN_BYTES of its own
    constants beside `general` (and then no other set is tried)."""

    def __init__(self, build, general, by_value=frozenset()):
        self._build = build
        self._general = general
        self._by_value = by_value  # (value_inputs)
        self._seen = {}
        self._executors = {}
        self._too_big = False

    def _key(self, feeds):
        """((name, shape, value or None), ...) of the feeds: a value for the inputs in `by_value`."""
        by_value = self._by_value
        return tuple(sorted((name, v.shape, v.item() if name in by_value and v.ndim == 0 else None)
                            for name, v in feeds.items() if isinstance(v, np.ndarray)))

    def give_up(self, feeds):
        """These shapes run on the general executor from now on (their specialized one failed)."""
        self._executors[self._key(feeds)] = None

    def executor_for(self, feeds):
        key = self._key(feeds)
        if key in self._executors:
            return self._executors[key]
        if len(self._executors) >= MAX_SHAPE_SETS or self._too_big:
            return None
        runs = self._seen[key] = self._seen.get(key, 0) + 1
        if runs < RUNS_BEFORE or len(self._seen) > 16 * MAX_SHAPE_SETS:
            return None
        try:
            executor = self._build({name: shape for name, shape, _ in key},
                                   {name: value for name, _, value in key if value is not None})
        except Exception:  # noqa: BLE001 - the general executor runs these shapes as before
            executor = None
        if executor is not None and own_constant_bytes(executor, self._general) > MAX_OWN_BYTES:
            executor, self._too_big = None, True
        self._executors[key] = executor
        return executor
