"""The instruction builder of native chains (chain.py): tensors (arena buffers, external pointers), instructions in
nx_chain.c's record layout, buffer lifetimes; a lowering that cannot take a node raises Decline."""
import math

import numpy as np

F32 = np.dtype(np.float32)
STAGED = 1 << 16  # chain inputs up to this many bytes are copied into the arena (numpy's .ctypes.data costs ~2.5 us)
RECORD = 40  # longs per instruction (nx_chain.c's nx_instr)
OP = {name: i + 1 for i, name in enumerate(("gemm", "act", "bias_act", "binary", "softmax", "layernorm", "affine",
                                            "maxpool", "gavg", "dwconv", "conv_shifted", "winograd", "copy", "strided",
                                            "upsample", "attention", "fill"))}


class Decline(Exception):
    """This node does not lower (an op, attribute, type or shape the chain kernels do not take)."""


class Builder:
    """Lowers steps into instructions over tensors: arena buffers (values made inside, scratch) and external pointers
    (the chain's inputs, constants, packed weights). `consts` holds the plan's constants by key."""

    def __init__(self, lib, types, consts, nt, known=None):
        self.lib, self.types, self.consts, self.nt = lib, types, consts, nt
        self.known = known if known is not None else {}  # key -> shape the lowering of an earlier step gave it
        self.code = []          # [(op, p, t, f, act)]
        self.tensors = []       # ("buf", buffer id) | ("ext", ext index)
        self.ext = []           # fixed addresses (constants); None for an input slot, filled per run
        self.keep = []          # arrays whose addresses the program holds
        self.buffers = []       # bytes per arena buffer
        self.life = []          # [first, last] instruction per buffer
        self.where = {}         # key -> ("buf", buffer id, shape) | ("in", input index, shape)
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
        """The tensor to read value `key` from (None: no tensor). A chain input of up to STAGED bytes is copied into
        the arena at the start of a run (cheaper than taking its address), a larger one is read where it is."""
        if key is None:
            return -1
        if key not in self.where:
            shape = self.shape(key)
            if key in self.consts:
                return self.fixed(np.ascontiguousarray(self.consts[key]))
            self.inputs.append(key)
            self.in_shapes.append(shape)
            if 4 * math.prod(shape) <= STAGED:
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
        self.keep.append(array)
        self.ext.append(array.ctypes.data)
        return self._tensor("ext", len(self.ext) - 1)

    def scratch(self, floats):
        return self._tensor("buf", self._buffer(4 * floats)) if floats else -1

    def emit(self, op, p=(), t=(), f=(), act=0):
        self.code.append((OP[op], list(p), list(t), list(f), act))

    def _buffer(self, nbytes):
        self.buffers.append(nbytes)
        self.life.append([len(self.code), len(self.code)])
        return len(self.buffers) - 1

    def _tensor(self, kind, ref):
        self.tensors.append((kind, ref))
        return len(self.tensors) - 1


# --- lowerings: (builder, step, node, opdef, attrs) -> instructions, or Decline -------------------------------------
