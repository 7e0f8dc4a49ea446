"""Loads the onnxide wasm kernel module and calls it: in place through ctypes in Pyodide, through wasmtime natively.

The module (wasm_kernels/, built by wasm_kernels/build.sh) is an Emscripten PIC side module whose only imports are
env.memory, env.__stack_pointer, env.__memory_base and env.__table_base. In Pyodide, `ctypes.CDLL` hands it to
Pyodide's dynamic linker, so its pointers are numpy's own `arr.ctypes.data` and kernels work on numpy buffers in
place. Natively the same bytes are instantiated by wasmtime against a private memory (a tiny loader does the side
module's relocation); arrays are copied into a per-call arena and results copied back.

Callers describe each argument: a Python int/float, `In(array)` (read), `Out(array)` (written), `InOut(array)`,
or `Scratch(n_floats)`. Only this module knows which backend is running (chains ask `shares_memory`; natively they
pin their program in the module's memory and `run_chain` copies only the chain's inputs in and outputs out).
"""
import atexit
import math
import os
import sys
import threading

import numpy as np

# C signatures of the exports: i = int32, f = float32, p = pointer
SIGNATURES = {
    "ox_gemm": "iiiipiiipiiipiifpiiififfp",
    "ox_gemm_scratch_floats": "",
    "ox_gemm_packed_b_floats": "ii",
    "ox_gemm_pack_b": "iipiip",
    "ox_gemm_pb": "iiiipiiippiifpiiififfp",
    "ox_conv2d": "i" * 16 + "pppp" + "iffp",
    "ox_conv2d_scratch_floats": "iiiiiiiiiii",
    "ox_conv3x3_wino": "iiiiiiiii" + "pppp" + "iffp",
    "ox_conv3x3_wino_scratch_floats": "iiii",
    "ox_pool2d": "i" * 17 + "ppp",
    "ox_pool2d_scratch_floats": "iiiiiiii",
    "ox_global_pool": "iippi",
    "ox_upsample_nearest": "iiiiipp",
    "ox_softmax": "iippi",
    "ox_rownorm": "iippfppiipp",
    "ox_channel_affine": "iiipppppiff",
    "ox_unary": "ippiff",
    "ox_binary": "ipppp",
    "ox_chain_run": "pippp",
    "ox_qgemm_packed_size": "ii",
    "ox_qgemm_scratch_floats": "ii",
    "ox_qgemm_pack_b": "iipip",
    "ox_qgemm": "iiipipippppippp",
    "ox_dynamic_quantize": "ipppp",
    "ox_lstm": "iiiipppppppp",
    "ox_qgemm_f32_scratch_floats": "iii",
}
RETURNS_INT = {"ox_chain_run", "ox_gemm_scratch_floats", "ox_gemm_packed_b_floats", "ox_conv3x3_wino_scratch_floats",
               "ox_conv2d_scratch_floats", "ox_pool2d_scratch_floats", "ox_qgemm_packed_size", "ox_qgemm_scratch_floats",
               "ox_dynamic_quantize", "ox_qgemm_f32_scratch_floats"}

BUILDS = ("relaxed", "simd128")
FILE_PATTERN = "onnxide_kernels_{}.wasm"

# a tiny module whose one function uses f32x4.relaxed_madd: validates only where relaxed SIMD is supported
RELAXED_PROBE = bytes.fromhex(
    "0061736d01000000" "0105016000017b" "03020100" "0a3d013b00"
    + "fd0c" + "00" * 16 + "fd0c" + "00" * 16 + "fd0c" + "00" * 16 + "fd8502" + "0b")

IS_PYODIDE = sys.platform == "emscripten"


class In:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


class Out(In):
    __slots__ = ()


class InOut(In):
    __slots__ = ()


class Scratch:
    __slots__ = ("n",)

    def __init__(self, n_floats):
        self.n = int(n_floats)


def search_dirs():
    """Folders that may hold the built modules, in order: $ONNXIDE_WASM_DIR, the package, the repo build dir."""
    dirs = []
    env = os.environ.get("ONNXIDE_WASM_DIR")
    if env:
        dirs.append(env)
    here = os.path.dirname(os.path.abspath(__file__))
    dirs.append(os.path.join(here, "_wasm"))
    dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), "build", "wasm"))
    return dirs


def find_build(name):
    for d in search_dirs():
        p = os.path.join(d, FILE_PATTERN.format(name))
        if os.path.isfile(p):
            return p
    return None


def _read_leb(buf, i):
    result = shift = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def dylink_mem_info(data):
    """(memory size, log2 alignment) the side module's static data needs, from its dylink.0 section."""
    i = 8
    while i < len(data):
        sid = data[i]
        size, j = _read_leb(data, i + 1)
        end = j + size
        if sid == 0:
            nlen, k = _read_leb(data, j)
            if bytes(data[k:k + nlen]) == b"dylink.0":
                k += nlen
                while k < end:
                    sub, k = _read_leb(data, k)
                    slen, k = _read_leb(data, k)
                    if sub == 1:  # WASM_DYLINK_MEM_INFO
                        mem_size, m = _read_leb(data, k)
                        mem_align, m = _read_leb(data, m)
                        return mem_size, mem_align
                    k += slen
        i = end
    return 0, 0


class WasmtimeBackend:
    """The side module run by wasmtime against its own memory; arrays are copied through a per-call arena."""

    STACK = 1 << 20
    PAGE = 65536

    def __init__(self, path, relaxed):
        import wasmtime

        cfg = wasmtime.Config()
        cfg.wasm_simd = True
        cfg.wasm_relaxed_simd = bool(relaxed)
        cfg.wasm_bulk_memory = True
        self._wt = wasmtime
        self.engine = wasmtime.Engine(cfg)
        self.store = wasmtime.Store(self.engine)
        with open(path, "rb") as f:
            data = f.read()
        module = wasmtime.Module(self.engine, data)
        mem_size, mem_align = dylink_mem_info(data)
        align = max(16, 1 << mem_align)
        memory_base = (1024 + align - 1) // align * align
        stack_top = (memory_base + mem_size + self.STACK + 15) // 16 * 16
        self.arena_base = stack_top + 64
        pages = (self.arena_base + (1 << 22)) // self.PAGE + 1
        self.memory = wasmtime.Memory(self.store, wasmtime.MemoryType(wasmtime.Limits(pages, None)))
        i32 = wasmtime.ValType.i32()
        imports = []
        for imp in module.imports:
            key = (imp.module, imp.name)
            if key == ("env", "memory"):
                imports.append(self.memory)
            elif key == ("env", "__stack_pointer"):
                imports.append(wasmtime.Global(self.store, wasmtime.GlobalType(i32, True), wasmtime.Val.i32(stack_top)))
            elif key == ("env", "__memory_base"):
                imports.append(wasmtime.Global(self.store, wasmtime.GlobalType(i32, False),
                                               wasmtime.Val.i32(memory_base)))
            elif key == ("env", "__table_base"):
                imports.append(wasmtime.Global(self.store, wasmtime.GlobalType(i32, False), wasmtime.Val.i32(0)))
            else:
                raise RuntimeError(f"wasm kernels import {imp.module}.{imp.name}, which the native loader lacks")
        self.instance = wasmtime.Instance(self.store, module, imports)
        ex = self.instance.exports(self.store)
        for init in ("__wasm_apply_data_relocs", "__wasm_call_ctors"):
            if init in ex:
                ex[init](self.store)
        self.funcs = {}
        for name, sig in SIGNATURES.items():
            fn = ex[name]
            params = [str(p) for p in fn.type(self.store).params]
            want = ["f32" if c == "f" else "i32" for c in sig]
            if params != want:
                raise RuntimeError(f"wasm kernel {name} takes {params}, the Python side expects {want}")
            self.funcs[name] = fn
        self._view = None
        self._view_len = 0
        self._lock = threading.Lock()
        self._pinned, self._free, self._unpinned = {}, [], []  # pinned blocks: address -> bytes; free (address, bytes)

    def _mem(self, need):
        size = self.memory.data_len(self.store)
        if need > size:
            self.memory.grow(self.store, (need - size + self.PAGE - 1) // self.PAGE)
            size = self.memory.data_len(self.store)
        if self._view is None or self._view_len != size:
            ptr = self.memory.data_ptr(self.store)
            self._view = np.ctypeslib.as_array(ptr, shape=(size,))
            self._view_len = size
        return self._view

    shares_memory = False  # (numpy's arrays are not in the module's memory: everything is copied)

    def pin(self, array):
        """Copies `array` into a block of the module's memory kept until unpin(address) (the constants and tables
        of a chain's program, read every run); the per-call arena starts above the pinned blocks."""
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        size = max(64, (data.nbytes + 63) // 64 * 64)
        with self._lock:
            self._reclaim()
            fits = [(s, a) for a, s in self._free if s >= size]
            if fits:
                s, addr = min(fits)
                self._free.remove((addr, s))
                if s > size:
                    self._free.append((addr + size, s - size))
            else:
                addr = (self.arena_base + 63) // 64 * 64
                self.arena_base = addr + size
            self._pinned[addr] = size
            view = self._mem(self.arena_base)
            view[addr:addr + data.nbytes] = data
        return addr

    def unpin(self, address):
        """Frees a pinned block (at the next pin or chain run: a finalizer may call this anywhere)."""
        self._unpinned.append(address)

    def _reclaim(self):
        while self._unpinned:
            addr = self._unpinned.pop()
            self._free.append((addr, self._pinned.pop(addr)))
        self._free.sort()
        while self._free and sum(self._free[-1]) >= self.arena_base:  # (blocks at the top give the arena room)
            self.arena_base = self._free.pop()[0]

    def run_chain(self, code, n, offsets, ext, arena_bytes, staged, in_place, outputs):
        """ox_chain_run on a pinned program (`code`, tensor table `offsets`, pointer table `ext`) over an arena
        above the pinned blocks: `staged` (arena offset, array) copied in, `in_place` (ext slot, array) copied
        behind the arena with their addresses written into `ext`, then `outputs` (arena offset, shape) copied out
        as fresh arrays: (return code, outputs)."""
        with self._lock:
            self._reclaim()
            base = (self.arena_base + 63) // 64 * 64
            end, places = base + arena_bytes, []
            for _, x in in_place:
                places.append(end)
                end += (x.nbytes + 63) // 64 * 64
            view = self._mem(end)
            for at, x in zip([base + off for off, _ in staged] + places, [x for _, x in staged + in_place]):
                np.copyto(view[at:at + x.nbytes].view(np.float32).reshape(x.shape), x)
            for (slot, _), at in zip(in_place, places):
                view[ext + 4 * slot:ext + 4 * slot + 4].view(np.uint32)[0] = at
            rc = self.funcs["ox_chain_run"](self.store, code, n, offsets, base, ext)
            outs = [view[base + off:base + off + 4 * math.prod(shape)].view(np.float32).reshape(shape).copy()
                    for off, shape in outputs]
        return rc, outs

    def call(self, name, args):
        with self._lock:  # one arena and one stack: a call at a time (threads sharing a session)
            fn, vals, placed, view = self._place(name, args)
            res = fn(self.store, *vals)
            for a, where in zip(args, placed):
                if isinstance(a, (Out, InOut)) and a.a.nbytes:
                    arr = a.a
                    arr[...] = view[where:where + arr.nbytes].view(arr.dtype).reshape(arr.shape)
        return res

    def bind(self, name, args):
        """A zero-argument callable running the kernel on these arguments as placed now (outputs stay in the
        module's memory): for timing the kernel alone."""
        fn, vals, _, _ = self._place(name, args)
        store = self.store
        return lambda: fn(store, *vals)

    def _place(self, name, args):
        # lay out every array in the arena, then copy inputs in
        off = self.arena_base
        placed = []
        for a in args:
            if isinstance(a, In):
                nbytes = a.a.nbytes
                placed.append(off)
                off += (nbytes + 63) // 64 * 64 + 64
            elif isinstance(a, Scratch):
                placed.append(off)
                off += (a.n * 4 + 63) // 64 * 64 + 64
            else:
                placed.append(None)
        view = self._mem(off)
        vals = []
        for a, where in zip(args, placed):
            if where is None:
                vals.append(a)
                continue
            vals.append(where)
            if isinstance(a, In) and not isinstance(a, Out):
                arr = np.ascontiguousarray(a.a)
                view[where:where + arr.nbytes] = arr.reshape(-1).view(np.uint8)
        return self.funcs[name], vals, placed, view


class CtypesBackend:
    """The side module loaded into Pyodide's own memory with ctypes.CDLL: pointers are numpy's, nothing copied."""

    shares_memory = True  # (a chain's arena and constants are numpy arrays, their addresses passed as they are)

    def __init__(self, path, relaxed):
        import ctypes

        self._ct = ctypes
        self.lib = ctypes.CDLL(os.path.abspath(path))
        codes = {"i": ctypes.c_int32, "f": ctypes.c_float, "p": ctypes.c_void_p}
        self.funcs = {}
        for name, sig in SIGNATURES.items():
            fn = getattr(self.lib, name)  # a dead library raises AttributeError here: the caller falls back
            fn.argtypes = [codes[c] for c in sig]
            fn.restype = ctypes.c_int32 if name in RETURNS_INT else None
            self.funcs[name] = fn
        self._scratch = np.empty(0, np.float32)

    def call(self, name, args):
        return self.funcs[name](*self._values(args))

    def bind(self, name, args):
        """A zero-argument callable running the kernel on these (in place) arguments: for timing."""
        fn, vals = self.funcs[name], self._values(args)
        return lambda: fn(*vals)

    def _values(self, args):
        vals = []
        for a in args:
            if isinstance(a, In):
                arr = a.a
                if not arr.flags.c_contiguous:
                    raise ValueError("wasm kernels need C-contiguous arrays")
                vals.append(arr.__array_interface__["data"][0])  # about half the cost of arr.ctypes.data here
            elif isinstance(a, Scratch):
                if self._scratch.size < a.n:
                    self._scratch = np.empty(max(a.n, 2 * self._scratch.size) + 16, np.float32)
                vals.append(self._scratch.__array_interface__["data"][0])
            else:
                vals.append(a)
        return vals


def relaxed_supported():
    """Whether the host's wasm engine accepts relaxed-SIMD opcodes."""
    if IS_PYODIDE:
        try:
            import js
            from pyodide.ffi import to_js

            return bool(js.WebAssembly.validate(to_js(RELAXED_PROBE)))
        except Exception:
            return False
    try:
        import wasmtime

        cfg = wasmtime.Config()
        cfg.wasm_relaxed_simd = True
        wasmtime.Module(wasmtime.Engine(cfg), RELAXED_PROBE)
        return True
    except Exception:
        return False


def runtime_present():
    """True when a wasm engine to run the kernels is importable (Pyodide's own, or wasmtime natively)."""
    if IS_PYODIDE:
        return True
    import importlib.util

    return importlib.util.find_spec("wasmtime") is not None


_LOADED = {}


@atexit.register
def _unload():
    # drop wasmtime objects while the interpreter is still whole (their finalizers need the module's globals)
    for be in list(_LOADED.values()):
        be.__dict__.clear()
    _LOADED.clear()


def load(prefer="auto"):
    """(backend, build name) for `prefer` in auto / relaxed / simd128; cached per process. Raises when none loads."""
    order = {"auto": BUILDS, "relaxed": ("relaxed",), "simd128": ("simd128",)}.get(prefer)
    if order is None:
        raise ValueError(f"unknown wasm build '{prefer}' (auto, relaxed or simd128)")
    errors = []
    for build in order:
        if build in _LOADED:
            return _LOADED[build], build
        path = find_build(build)
        if path is None:
            errors.append(f"{build}: {FILE_PATTERN.format(build)} not found in {search_dirs()}")
            continue
        if build == "relaxed" and not relaxed_supported():
            errors.append("relaxed: the wasm engine does not support relaxed SIMD")
            continue
        try:
            backend = (CtypesBackend if IS_PYODIDE else WasmtimeBackend)(path, build == "relaxed")
        except Exception as e:  # a module this engine cannot compile: try the next build
            errors.append(f"{build}: {type(e).__name__}: {e}")
            continue
        _LOADED[build] = backend
        return backend, build
    raise RuntimeError("no wasm kernel build could be loaded: " + "; ".join(errors))
