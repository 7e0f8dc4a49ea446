"""Native chains (issue 16 item 1): a run of consecutive host steps of a plan whose values are float32 of fixed shapes
and whose ops the native kernels implement becomes one step that runs them all from one call into C (nx_chain_run,
native_eps/cpu_kernels/nx_chain.c) over one arena per run, so Python works only at the chain's borders. Small nodes,
which the EP otherwise leaves to numpy, run natively inside a chain: there the per-call costs they avoid are gone."""
import threading

import numpy as np

from onnxide.execute import give_context
from onnxide.runtime import limits
from onnxide.plan import Step
from onnxide.plan.lifetimes import arena_offsets

from . import cpu_ops as K
from .chain_builder import F32, RECORD, Decline, Builder
from .chain_lower import VIEWS, lower

MIN_KERNELS = 2  # a chain of one kernel saves nothing
# ops whose small instances still gain from a chain (numpy's GEMM / conv calls cost several µs each); a run of only
# small element-wise nodes the partition left to the CPU EP saves a few µs and is left as it is
HEAVY = {"MatMul", "Gemm", "FusedGemm", "Conv", "FusedConv", "MultiHeadAttention", "LayerNormalization",
         "SkipLayerNormalization", "Softmax", "LogSoftmax"}


class Program:
    """Lowered steps ready to run: instructions, the tensor table, the external pointers, the arena size, where the
    chain's inputs go and its outputs are."""

    def __init__(self, lib, steps, types, consts, nt, outputs, known):
        b = Builder(lib, types, consts, nt, known)
        self.owner = []  # the step each instruction comes from
        for i, s in enumerate(steps):
            lower(b, s)
            self.owner += [i] * (len(b.code) - len(self.owner))
        end = len(b.code)
        for key in outputs:  # values read after the chain live to its end
            kind, ref, _ = b.where[key]
            if kind == "buf":
                b.life[ref][1] = end
        offsets, size = arena_offsets({i: tuple(v) for i, v in enumerate(b.life)},
                                      dict(enumerate(b.buffers)), alignment=64)
        self.arena_bytes = size + 64
        self.offsets = np.array([offsets[ref] if kind == "buf" else -ref - 1 for kind, ref in b.tensors] or [0],
                                np.int64)
        code = np.zeros((max(end, 1), RECORD), np.int64)
        for i, (op, p, t, f, act) in enumerate(b.code):
            code[i, 0] = op
            code[i, 1:1 + len(p)] = p
            code[i, 25:37] = -1
            code[i, 25:25 + len(t)] = t
            code[i, 37:39].view(np.float32)[:len(f)] = f
            code[i, 39] = act
        self.code, self.n = code, end
        self.addresses = (code.ctypes.data, self.offsets.ctypes.data)
        self.ext = np.array([0 if a is None else a for a in b.ext] or [0], np.int64)
        self.keep = b.keep
        self.inputs, self.in_shapes = b.inputs, b.in_shapes
        self.staged = [(i, offsets[ref], b.in_shapes[i]) for i, ref in b.staged]
        self.in_place = b.ext_of_input
        by_ext = {e: i for i, e in b.ext_of_input}
        self.outputs = [(offsets[ref], None, shape) if kind == "buf" else (None, by_ext[ref], shape)
                        for kind, ref, shape in (b.where[k] for k in outputs)]


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


class NativeChain:
    """The kernel of a chain step: runs the program for the session's thread count (built on first use) in this
    thread's workspace, or the original steps one by one when the inputs are not float32 arrays of the shapes it
    was lowered for. Outputs are fresh arrays (copied out of the arena), so the workspace is reused."""

    def __init__(self, lib, steps, types, consts, outputs, known):
        self.lib, self.steps, self.types, self.consts, self.outputs = lib, steps, types, consts, outputs
        self.known = known
        for s in steps:  # (their kernels' context, for stepwise runs: the executor no longer sees these steps)
            give_context(s)
        self.programs = {}
        self.local = threading.local()
        first = self.program(1)
        self.inputs, self.in_shapes = first.inputs, first.in_shapes

    def program(self, nt):
        p = self.programs.get(nt)
        if p is None:
            p = self.programs[nt] = Program(self.lib, self.steps, self.types, self.consts, nt, self.outputs,
                                            self.known)
        return p

    def __call__(self, *inputs):
        nt = K.threads()
        prog = self.programs.get(nt) or self.program(nt)
        for x, shape in zip(inputs, prog.in_shapes):
            if type(x) is not np.ndarray or x.dtype != F32 or x.shape != shape:
                return self.stepwise(inputs)
        spaces = getattr(self.local, "spaces", None)
        if spaces is None:
            spaces = self.local.spaces = {}
        ws = spaces.get(nt)
        if ws is None:
            limits.check(prog.arena_bytes, "native chain arena")
            ws = spaces[nt] = _Workspace(prog)
        for i, view in ws.staged:
            np.copyto(view, inputs[i])
        held = list(inputs)
        for i, slot in prog.in_place:
            x = inputs[i] if inputs[i].flags.c_contiguous else np.ascontiguousarray(inputs[i])
            held[i] = x
            ws.ext[slot] = x.ctypes.data
        rc = self.lib.nx_chain_run(prog.addresses[0], prog.n, prog.addresses[1], ws.base, ws.ext_address, nt)
        if rc:
            raise MemoryError(f"{_label(self.steps[prog.owner[-1 - rc]])}: no scratch memory")
        return tuple(view.copy() if view is not None else held[i].reshape(shape)
                     for view, (_, i, shape) in zip(ws.outputs, prog.outputs))

    def stepwise(self, inputs):
        """The original steps' kernels, one after the other (the chain's own check of what it was built for)."""
        env = dict(self.consts)
        env.update(zip(self.inputs, inputs))
        for s in self.steps:
            r = s.kernel(*[env[k] if k is not None else None for k in s.in_keys], **s.call_kwargs)
            env[s.out_keys[0]] = r[0] if isinstance(r, (tuple, list)) else r
        return tuple(env[k] for k in self.outputs)


def _label(step):
    return f"{step.node.op_type} node '{step.node.name}'"


class ChainNode:
    """The node a chain step reports as (profiling, errors)."""

    op_type, domain, attrs = "NativeChain", "", {}

    def __init__(self, steps, inputs, outputs):
        self.name = f"NativeChain[{steps[0].node.name}..{steps[-1].node.name}]({len(steps)} nodes)"
        self.inputs, self.outputs = list(inputs), list(outputs)


def lowers(lib, step, types, consts, known):
    """Whether `step` lowers on its own (the values it reads from other steps as chain inputs); the shapes it gives
    its outputs go into `known`."""
    b = Builder(lib, types, consts, 1, known)
    try:
        lower(b, step)
    except Decline:
        return False
    for k in step.out_keys:
        if k and k in b.where:
            known[k] = b.where[k][2]
    return True


def fuse(plan, lib, ep):
    """`plan.steps` with each run of at least MIN_KERNELS consecutive lowerable steps (views aside), one of them
    worth it (_worth), made one chain step run by `ep`."""
    consts = {k: v for k, v in plan.const_env.items() if (k if isinstance(k, str) else k[0]) not in plan.input_names}
    known = {}
    ok = [lowers(lib, s, plan.types, consts, known) for s in plan.steps]
    steps, i = [], 0
    while i < len(plan.steps):
        j = i
        while j < len(plan.steps) and ok[j]:
            j += 1
        run = plan.steps[i:j]
        if sum(s.node.op_type not in VIEWS for s in run) >= MIN_KERNELS and any(_worth(s, ep) for s in run):
            chained = _chain_step(plan, run, lib, ep, consts, known)
            steps.extend([chained] if chained is not None else run)
        else:
            steps.extend(plan.steps[i:max(j, i + 1)])
        i = max(j, i + 1)
    return steps


def _worth(step, ep):
    """Whether `step` makes a chain worth building: the native EP claimed it, or numpy runs it slowly when small."""
    return step.ep is ep or step.node.op_type in HEAVY


def _chain_step(plan, run, lib, ep, consts, known):
    inside = set(id(s) for s in run)
    read_after = set(plan.output_keys)
    for s in plan.steps:
        if id(s) not in inside:
            read_after.update(k for k in list(s.in_keys) + list(s.body_keys) if k is not None)
    outputs = [k for s in run for k in s.out_keys if k and k in read_after]
    try:
        chain = NativeChain(lib, run, plan.types, consts, outputs, known)
    except Decline:  # (a run whose steps lower one by one but not together: as they were)
        return None
    return Step(ChainNode(run, [k if isinstance(k, str) else k[0] for k in chain.inputs], outputs), chain,
                chain.inputs, outputs, ep, run[0].device)
