"""Chains (issue 16 item 1), the part every backend shares: a run of consecutive host steps of a plan whose values
are float32 of fixed shapes becomes one step that runs them all from one call into a kernel interpreter (the native
EP's nx_chain_run, the WASM side module's ox_chain_run) over one arena, so Python works only at the chain's borders.
Here: tensors (arena buffers, external pointers), instruction records, buffer lifetimes, staged inputs, the program,
the step that runs it (or its original steps one by one for other inputs) and the plan pass. A backend gives its op
codes, its lowerings and the call (`Backend`)."""
import collections
import math
import threading

import numpy as np

from ..execute import give_context
from ..runtime import limits
from . import Step
from .lifetimes import arena_offsets

F32 = np.dtype(np.float32)
MIN_KERNELS = 2  # a chain of one light kernel saves nothing; one heavy kernel alone is chained (see fuse)
# ops whose small instances still gain from a chain (numpy's GEMM / conv calls cost several µs each); a run of only
# small element-wise nodes the partition left to the CPU EP saves a few µs and is left as it is
HEAVY = frozenset({"MatMul", "Gemm", "FusedGemm", "FusedMatMul", "Conv", "FusedConv", "MultiHeadAttention",
                   "LayerNormalization", "SkipLayerNormalization", "Softmax", "LogSoftmax", "DynamicQuantizeMatMul"})
VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")  # the output is the input's buffer


class Decline(Exception):
    """This node does not lower (an op, attribute, type or shape the chain kernels do not take)."""


class Layout:
    """An instruction record in words of the interpreter's `word` type: op, p[24] (sizes, geometry), t[12] (tensor
    indices, -1 for none), f[4] (float32 parameters), act."""

    P, T, F = 24, 12, 4

    def __init__(self, word):
        self.word = np.dtype(word)
        self.t0 = 1 + self.P
        self.f0 = self.t0 + self.T
        self.act = self.f0 + 4 * self.F // self.word.itemsize
        self.record = self.act + 1

    def encode(self, code):
        out = np.zeros((max(len(code), 1), self.record), self.word)
        for i, (op, p, t, f, act) in enumerate(code):
            out[i, 0] = op
            out[i, 1:1 + len(p)] = p
            out[i, self.t0:self.f0] = -1
            out[i, self.t0:self.t0 + len(t)] = t
            out[i, self.f0:self.act].view(np.float32)[:len(f)] = f
            out[i, self.act] = act
        return out


class Backend:
    """What a chain needs from its EP: the op codes of its interpreter (`ops`, by instruction name), its record
    `layout`, the steps it may take (`host_eps`), `lower(builder, step)` (raises Decline), the thread count a run
    uses, where constants live (`pins`) and the run itself (`run`). `lib` is the EP's kernel handle (lowerings
    ask it for sizes and packed weights)."""

    node_type = "Chain"      # the op type a chain step reports
    ops = {}
    layout = Layout(np.int64)
    staged_bytes = 1 << 16   # chain inputs up to this many bytes are copied into the arena, larger ones read in place
    host_eps = ()
    heavy = HEAVY
    lib = None

    def __init__(self, ep):
        self.ep = ep

    def lower(self, b, step):
        raise Decline(step.node.op_type)

    def threads(self):
        return 1

    def pins(self):
        """Where a program's constant arrays live while it does: `.add(array)` gives the interpreter's address."""
        return HostPins()

    def run(self, chain, prog, nt, inputs):
        raise NotImplementedError

    def worth(self, step):
        """Whether `step` makes a chain worth building: the EP claimed it, or numpy runs it slowly when small."""
        return step.ep is self.ep or step.node.op_type in self.heavy


class HostPins:
    """Constants an interpreter in this process reads where numpy keeps them."""

    def __init__(self):
        self.keep = []

    def add(self, array):
        self.keep.append(array)
        return array.ctypes.data


class Builder:
    """Lowers steps into instructions over tensors: arena buffers (values made inside, scratch) and external pointers
    (the chain's inputs, constants, packed weights). `consts` holds the plan's constants by key."""

    def __init__(self, backend, types, consts, nt, known=None, steps=(), kept=()):
        self.backend, self.lib, self.types, self.consts, self.nt = backend, backend.lib, types, consts, nt
        self.known = known if known is not None else {}  # key -> shape the lowering of an earlier step gave it
        # key -> how many of the chain's `steps` read it; the keys read after the chain
        self.readers = collections.Counter(k for s in steps for k in s.in_keys if k is not None)
        self.kept = set(kept)
        self.code = []          # [(op, p, t, f, act)]
        self.tensors = []       # ("buf", buffer id) | ("ext", ext index)
        self.ext = []           # constant arrays; None for an input slot, filled per run
        self.buffers = []       # bytes per arena buffer
        self.life = []          # [first, last] instruction per buffer
        self.where = {}         # key -> ("buf", buffer id, shape) | ("in", ext index, shape)
        self.inputs = []        # keys read from outside, in order
        self.in_shapes = []
        self.staged = []        # (input index, arena buffer) of the inputs copied in
        self.ext_of_input = []  # (input index, ext index) of the inputs read in place

    # --- values --------------------------------------------------------------------------------------------------
    def shape(self, key):
        """The fixed float32 shape of value `key`, else Decline."""
        if key in self.where:
            return self.where[key][2]
        if key in self.known:  # (a graph output may declare less than the node makes)
            return self.known[key]
        if key in self.consts:
            c = self.consts[key]
            if not isinstance(c, np.ndarray) or c.dtype != F32:
                raise Decline(key)
            return c.shape
        name = key if isinstance(key, str) else key[0]
        entry = self.types.get(name)
        if not entry or entry[0] != 1 or entry[1] is None or not all(
                isinstance(d, (int, np.integer)) and d > 0 for d in entry[1]):
            raise Decline(name)
        return tuple(int(d) for d in entry[1])

    def const(self, key):
        """The constant array of `key`, or None when it is not a constant."""
        return self.consts.get(key) if key is not None else None

    def src(self, key):
        """The tensor to read value `key` from (-1: no tensor). A chain input of up to the backend's staged_bytes is
        copied into the arena at the start of a run (cheaper than taking its address), a larger one is read where
        it is."""
        if key is None:
            return -1
        if key not in self.where:
            shape = self.shape(key)
            if key in self.consts:
                return self.fixed(np.ascontiguousarray(self.consts[key]))
            self.inputs.append(key)
            self.in_shapes.append(shape)
            if 4 * math.prod(shape) <= self.backend.staged_bytes:
                ref = self._buffer(4 * math.prod(shape))
                self.life[ref][0] = 0
                self.staged.append((len(self.inputs) - 1, ref))
                self.where[key] = ("buf", ref, shape)
            else:
                self.ext.append(None)
                self.ext_of_input.append((len(self.inputs) - 1, len(self.ext) - 1))
                self.where[key] = ("in", len(self.ext) - 1, shape)
        kind, ref, _ = self.where[key]
        if kind == "buf":
            self.life[ref][1] = len(self.code)
        return self._tensor(kind if kind == "buf" else "ext", ref)

    def dst(self, key, shape):
        """A new arena buffer for value `key` of `shape`, written by the next instruction."""
        self.where[key] = ("buf", self._buffer(4 * math.prod(shape)), tuple(shape))
        return self._tensor("buf", self.where[key][1])

    def alias(self, out_key, in_key, shape):
        """Value `out_key` is value `in_key` (same elements) in `shape`."""
        if in_key in self.consts:
            raise Decline("a view of a constant")  # (constant folding's work)
        self.src(in_key)
        kind, ref, _ = self.where[in_key]
        self.where[out_key] = (kind, ref, tuple(shape))

    def fixed(self, array):
        """A tensor reading constant `array` (C-contiguous) where the backend pins it."""
        self.ext.append(array)
        return self._tensor("ext", len(self.ext) - 1)

    def scratch(self, floats):
        return self._tensor("buf", self._buffer(4 * floats)) if floats else -1

    def emit(self, op, p=(), t=(), f=(), act=0):
        self.code.append((self.backend.ops[op], list(p), list(t), list(f), act))

    def written_to_end(self, t):
        """Tensor `t` (an arena buffer) is written by every instruction so far (a fill, then copies into it)."""
        life = self.life[self.tensors[t][1]]
        life[1] = max(life[1], len(self.code) - 1)

    def _buffer(self, nbytes):
        self.buffers.append(nbytes)
        self.life.append([len(self.code), len(self.code)])
        return len(self.buffers) - 1

    def _tensor(self, kind, ref):
        self.tensors.append((kind, ref))
        return len(self.tensors) - 1


class Program:
    """Lowered steps ready to run: instructions, the tensor table (an arena byte offset, or -(i + 1) for external
    pointer i), the external pointers, the arena size, where the chain's inputs go and its outputs are."""

    def __init__(self, backend, steps, types, consts, nt, outputs, known):
        b = Builder(backend, types, consts, nt, known, steps, outputs)
        self.owner = []  # the step each instruction comes from
        for i, s in enumerate(steps):
            backend.lower(b, s)
            self.owner += [i] * (len(b.code) - len(self.owner))
        end = len(b.code)
        for key in outputs:  # values read after the chain live to its end
            kind, ref, _ = b.where[key]
            if kind == "buf":
                b.life[ref][1] = end
        offsets, size = arena_offsets({i: tuple(v) for i, v in enumerate(b.life)},
                                      dict(enumerate(b.buffers)), alignment=64)
        layout = backend.layout
        top = np.iinfo(layout.word).max
        if size + 64 > top or any(abs(int(v)) > top for _, p, *_ in b.code for v in p):
            raise Decline(f"sizes past the interpreter's {layout.word} words")  # (the kernels report them)
        self.arena_bytes = size + 64
        self.offsets = np.array([offsets[ref] if kind == "buf" else -ref - 1 for kind, ref in b.tensors] or [0],
                                layout.word)
        self.code, self.n = layout.encode(b.code), end
        self.pins = backend.pins()
        unsigned = np.dtype(f"u{layout.word.itemsize}")
        self.ext = np.array([0 if a is None else self.pins.add(a) for a in b.ext] or [0], unsigned)
        # (the pointer table's own address: for an interpreter that keeps one table; host arenas copy it per thread)
        self.addresses = (self.pins.add(self.code), self.pins.add(self.offsets), self.pins.add(self.ext))
        self.inputs, self.in_shapes = b.inputs, b.in_shapes
        self.staged = [(i, offsets[ref], b.in_shapes[i]) for i, ref in b.staged]
        self.in_place = b.ext_of_input
        by_ext = {e: i for i, e in b.ext_of_input}
        self.outputs = [(offsets[ref], None, shape) if kind == "buf" else (None, by_ext[ref], shape)
                        for kind, ref, shape in (b.where[k] for k in outputs)]


class Chain:
    """The kernel of a chain step: runs the program for the backend's thread count (built on first use), or the
    original steps one by one when the inputs are not float32 arrays of the shapes it was lowered for. Outputs are
    fresh arrays (copied out of the arena), so the arena is reused."""

    returns_array_tuple = True  # (the executor may call a one-chain plan directly: execute._one_chain)

    def __init__(self, backend, steps, types, consts, outputs, known):
        self.backend, self.steps, self.types, self.consts, self.outputs = backend, steps, types, consts, outputs
        self.known = known
        for s in steps:  # (their kernels' context, for stepwise runs: the executor no longer sees these steps)
            give_context(s)
        self.programs = {}
        self.local = threading.local()
        nt = backend.threads()
        self.programs[nt] = first = Program(backend, steps, types, consts, nt, outputs, known)  # (Decline: no chain)
        self.inputs, self.in_shapes = first.inputs, first.in_shapes

    def program(self, nt):
        """The program for `nt` threads (built once), or None where it declines (its steps then run one by one)."""
        if nt not in self.programs:
            try:
                self.programs[nt] = Program(self.backend, self.steps, self.types, self.consts, nt, self.outputs,
                                            self.known)
            except Decline:
                self.programs[nt] = None
        return self.programs[nt]

    def __call__(self, *inputs):
        nt = self.backend.threads()
        prog = self.programs.get(nt) or self.program(nt)
        if prog is None:
            return self.stepwise(inputs)
        for x, shape in zip(inputs, prog.in_shapes):
            if type(x) is not np.ndarray or x.dtype != F32 or x.shape != shape:
                return self.stepwise(inputs)
        return self.backend.run(self, prog, nt, inputs)

    def stepwise(self, inputs):
        """The original steps' kernels, one after the other (the chain's own check of what it was built for)."""
        env = dict(self.consts)
        env.update(zip(self.inputs, inputs))
        for s in self.steps:
            r = s.kernel(*[env[k] if k is not None else None for k in s.in_keys], **s.call_kwargs)
            env[s.out_keys[0]] = r[0] if isinstance(r, (tuple, list)) else r
        return tuple(env[k] for k in self.outputs)

    def failed(self, prog, rc):
        """The error for an interpreter's return code -1 - i (instruction i could not get scratch memory). (A return
        code 1 + i, instruction i met input only the steps' own kernels define, reruns the chain stepwise.)"""
        step = self.steps[prog.owner[-1 - rc]]
        return MemoryError(f"{step.node.op_type} node '{step.node.name}': no scratch memory")


class _Workspace:
    """One thread's arena for one program (kept between runs: its address and views are made once), and its copy
    of the external pointers."""

    def __init__(self, prog):
        self.arena = np.empty(prog.arena_bytes, np.uint8)
        base = -self.arena.ctypes.data % 64
        self.base = self.arena.ctypes.data + base
        self.ext = prog.ext.copy()
        self.ext_address = self.ext.ctypes.data
        view = lambda off, shape: np.ndarray(shape, F32, self.arena, base + off)  # noqa: E731
        self.staged = [(i, view(off, shape)) for i, off, shape in prog.staged]
        self.outputs = [view(off, shape) if off is not None else None for off, _, shape in prog.outputs]


def run_in_host_arena(chain, prog, nt, inputs, call):
    """A run for an interpreter that reads this process's memory: this thread's arena (numpy), small inputs copied
    in, large ones read in place, `call(prog, workspace, nt)` (its return code), outputs copied out."""
    spaces = getattr(chain.local, "spaces", None)
    if spaces is None:
        spaces = chain.local.spaces = {}
    ws = spaces.get(nt)
    if ws is None or ws.ext.size != prog.ext.size:
        limits.check(prog.arena_bytes, f"{chain.backend.node_type} arena")
        ws = spaces[nt] = _Workspace(prog)
    for i, view in ws.staged:
        np.copyto(view, inputs[i])  # (half the cost of view[...] = x in the page, measured at the time)
    held = inputs
    if prog.in_place:
        held = list(inputs)
        for i, slot in prog.in_place:
            x = inputs[i] if inputs[i].flags.c_contiguous else np.ascontiguousarray(inputs[i])
            held[i] = x
            ws.ext[slot] = x.ctypes.data
    rc = call(prog, ws, nt)
    if rc > 0:  # (input only the steps' own kernels define)
        return chain.stepwise(inputs)
    if rc:
        raise chain.failed(prog, rc)
    return tuple([view.copy() if view is not None else held[i].reshape(shape)
                  for view, (_, i, shape) in zip(ws.outputs, prog.outputs)])


class ChainNode:
    """The node a chain step reports as (profiling, errors)."""

    domain, attrs = "", {}

    def __init__(self, op_type, steps, inputs, outputs):
        self.op_type = op_type
        self.name = f"{op_type}[{steps[0].node.name}..{steps[-1].node.name}]({len(steps)} nodes)"
        self.inputs, self.outputs = list(inputs), list(outputs)


def lowers(backend, step, types, consts, known):
    """Whether `step` lowers on its own (the values it reads from other steps as chain inputs); the shapes it gives
    its outputs go into `known`."""
    b = Builder(backend, types, consts, 1, known)
    try:
        backend.lower(b, step)
    except Decline:
        return False
    for k in step.out_keys:
        if k and k in b.where:
            known[k] = b.where[k][2]
    return True


def fuse(plan, backend):
    """`plan.steps` with each run of at least MIN_KERNELS consecutive lowerable steps (views aside), or of one
    heavy one, one of them worth it (backend.worth), made one chain step run by the backend's EP. (A heavy op alone
    gains too: its direct kernel plans it and allocates its output on every call; measured at the time, a model of
    one 3×3 conv ran in 2.9× onnxruntime's time that way, 1.04× as a chain.)"""
    consts = {k: v for k, v in plan.const_env.items() if (k if isinstance(k, str) else k[0]) not in plan.input_names}
    known = {}
    ok = [lowers(backend, s, plan.types, consts, known) for s in plan.steps]
    steps, i = [], 0
    while i < len(plan.steps):
        j = i
        while j < len(plan.steps) and ok[j]:
            j += 1
        run = plan.steps[i:j]
        kernels = [s.node.op_type for s in run if s.node.op_type not in VIEWS]
        if ((len(kernels) >= MIN_KERNELS or any(op in backend.heavy for op in kernels))
                and any(backend.worth(s) for s in run)):
            chained = _chain_step(plan, run, backend, consts, known)
            steps.extend([chained] if chained is not None else run)
        else:
            steps.extend(plan.steps[i:max(j, i + 1)])
        i = max(j, i + 1)
    return steps


def _chain_step(plan, run, backend, consts, known):
    inside = set(id(s) for s in run)
    read_after = set(plan.output_keys)
    for s in plan.steps:
        if id(s) not in inside:
            read_after.update(k for k in list(s.in_keys) + list(s.body_keys) if k is not None)
    outputs = [k for s in run for k in s.out_keys if k and k in read_after]
    try:
        chain = Chain(backend, run, plan.types, consts, outputs, known)
    except Decline:  # (a run whose steps lower one by one but not together: as they were)
        return None
    node = ChainNode(backend.node_type, run, [k if isinstance(k, str) else k[0] for k in chain.inputs], outputs)
    return Step(node, chain, chain.inputs, outputs, backend.ep, run[0].device)
