"""Finds and loads the native CPU kernels (native_eps/cpu_kernels, built by its build.py at wheel build or set-up)
through ctypes and types their exports: of the per-level builds (baseline x86-64, x86-64-v3: AVX2 + FMA, x86-64-v4:
AVX-512) the best this CPU runs, which the baseline build's nx_cpu_level() says; kernels take numpy buffers by
address, in place, and release the GIL while they run. Standard library only (build.py reads the names here)."""
import ctypes
import os
import sys

# argument letters: l = long, i = int, f = float, p = pointer (an address or None)
SIGNATURES = {
    "nx_act": "lpppiffi",
    "nx_bias_act": "llppp" + "iffi",
    "nx_layernorm": "llpppppfppppi",
    "nx_softmax": "llppfplliiii",
    "nx_binary": "iilllipppi",
    "nx_dwconv": "l" * 14 + "pppp" + "iffi",
    "nx_maxpool": "l" * 13 + "ppi",
    "nx_upsample_nearest": "lllllppi",
    "nx_global_avg": "llppi",
    "nx_gemm_packed_size": "ll",
    "nx_gemm_pack_b": "llpllp",
    "nx_gemm_packed_a_size": "ll",
    "nx_gemm_pack_a": "llplp",
    "nx_gemm_scratch_size": "lllii",
    "nx_gemm": "lll" + "plp" + "plp" + "pl" + "ppp" + "l" + "iff" + "pi",
    "nx_conv_shifted_scratch": "l" * 10,
    "nx_place_taps": "l" * 5 + "ppi",
    "nx_channel_affine": "lll" + "pppp" + "i",
    "nx_attention": "l" * 6 + "pppp" + "ii" + "f" + "p" + "i",
    "nx_dw_transpose": "l" * 5 + "ppppi",
    "nx_conv_shifted": "l" * 13 + "plpp" + "pp" + "iff" + "plpi",
    "nx_winograd_f4_scratch": "llll",
    "nx_winograd_f4": "l" * 9 + "pppppp" + "iffi",
    "nx_qgemm_packed_size": "ll",
    "nx_qgemm_pack_b": "llpip",
    "nx_qgemm": "lll" + "pipl" + "ppp" + "i",
    "nx_set_parallel_work": "l",
    "nx_set_pool_spin": "l",
    "nx_qgemm_f32": "lll" + "pipl" + "pp" + "plp" + "iff" + "p" + "i",
    "nx_dynamic_quantize": "lppppi",
    "nx_chain_run": "plpppi",
    "nx_lstm": "llll" + "pppp" + "ppp" + "i",
    "nx_tree_walk": "llpl" + "p" * 7 + "lpi",
}
# 0, or -1 when the kernel could not allocate its scratch
RETURNS_STATUS = {"nx_dwconv", "nx_gemm", "nx_winograd_f4", "nx_conv_shifted", "nx_attention", "nx_qgemm", "nx_qgemm_f32",
                  "nx_dynamic_quantize", "nx_chain_run", "nx_lstm"}  # (nx_dynamic_quantize: 1 for a NaN / inf)
RETURNS_LONG = {"nx_gemm_packed_size", "nx_gemm_packed_a_size", "nx_gemm_scratch_size", "nx_winograd_f4_scratch",
                "nx_conv_shifted_scratch", "nx_qgemm_packed_size",
                "nx_set_parallel_work", "nx_set_pool_spin"}
_CT = {"l": ctypes.c_long, "i": ctypes.c_int, "f": ctypes.c_float, "p": ctypes.c_void_p}
FILE = "libonnxide_cpu.so"  # a single build (off x86-64, or the debug build)
# the per-level builds, by psABI level name: the level number nx_cpu_level() / nx_build_level() report
LEVELS = {"x86-64": 1, "x86-64-v3": 3, "x86-64-v4": 4}
BASELINE = "x86-64"
ISA_ENV = "ONNXIDE_NATIVE_ISA"  # a level name: use no build above it (to test a lower build on a newer CPU)


def level_file(name):
    """The file name of the build for level `name`."""
    return f"libonnxide_cpu-{name}.so"


def search_dirs():
    """Folders that may hold the library, in order: $ONNXIDE_NATIVE_DIR, this package, the repo's build/native."""
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.environ["ONNXIDE_NATIVE_DIR"]] if os.environ.get("ONNXIDE_NATIVE_DIR") else []
    return dirs + [here, os.path.join(os.path.dirname(os.path.dirname(here)), "build", "native")]


def builds(folder):
    """{level name: path} of the per-level builds in `folder`, else {None: path} of a single build, else {}."""
    found = {n: os.path.join(folder, level_file(n)) for n in LEVELS}
    found = {n: p for n, p in found.items() if os.path.isfile(p)}
    single = os.path.join(folder, FILE)
    return found or ({None: single} if os.path.isfile(single) else {})


def _cap():
    name = os.environ.get(ISA_ENV)
    if name and name not in LEVELS:
        raise RuntimeError(f"{ISA_ENV}={name!r} is not a level name: one of {', '.join(LEVELS)}")
    return LEVELS[name] if name else max(LEVELS.values())


def find():
    """The library to load: from the first folder holding a build, the best per-level build this CPU runs (capped by
    $ONNXIDE_NATIVE_ISA), else its single build; None when no folder holds one."""
    for d in search_dirs():
        found = builds(d)
        if None in found:
            return found[None]
        if found:
            if BASELINE not in found:
                raise RuntimeError(f"{d} holds per-level builds but not {level_file(BASELINE)}")
            cpu = ctypes.CDLL(found[BASELINE]).nx_cpu_level()
            top = min(cpu, _cap())
            return max(((LEVELS[n], p) for n, p in found.items() if LEVELS[n] <= top), default=(0, found[BASELINE]))[1]
    return None


class Library:
    """The loaded library: one typed ctypes function per export, as attributes."""

    def __init__(self, path):
        self.path = path
        self.cdll = ctypes.CDLL(path)
        for name, sig in SIGNATURES.items():
            fn = getattr(self.cdll, name)
            fn.argtypes = [_CT[c] for c in sig]
            fn.restype = ctypes.c_int if name in RETURNS_STATUS else ctypes.c_long if name in RETURNS_LONG else None
            setattr(self, name, fn)
        # the x86-64 level it was compiled for and the one this CPU runs (0: not x86-64; None: a build before these)
        self.build_level, self.cpu_level = (getattr(self.cdll, f, lambda: None)() for f in ("nx_build_level",
                                                                                           "nx_cpu_level"))


_LIB = None


def load():
    """The Library, loaded once; raises RuntimeError naming what is missing."""
    global _LIB
    if _LIB is None:
        if sys.platform == "emscripten":
            raise RuntimeError("native kernels do not exist in Pyodide")
        path = None
        try:
            path = find()
            if path is None:
                raise RuntimeError(f"no {FILE} or {level_file(BASELINE)} in {search_dirs()} "
                                   "(build it: native_eps/cpu_kernels/build.sh)")
            _LIB = Library(path)
        except (OSError, AttributeError) as e:
            raise RuntimeError(f"{path or 'the baseline build'} does not load: {e}") from None
    return _LIB
