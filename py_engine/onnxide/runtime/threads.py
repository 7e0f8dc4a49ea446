"""intra_op_num_threads natively: BLAS thread pools are set to the session's count for each run (threadpoolctl's
library handles, queried once), and put back afterwards; EPs read the running session's count (`current`), per
application thread (two sessions running at once in two threads each see their own)."""
import contextlib
import ctypes
import os
import threading

_blas = None
_running = threading.local()  # .stack: [(intra_op_num_threads, BLAS settings to put back)] of this thread's runs


def current():
    """Threads the running session computes with: its intra_op_num_threads, else BLAS's default (every core)."""
    stack = getattr(_running, "stack", None)
    return (stack[-1][0] if stack else 0) or os.cpu_count() or 1


def _blas_libraries():
    """[(get, set)] thread-count functions of the BLAS libraries loaded: OpenBLAS's own C functions where
    threadpoolctl finds them (its wrappers cost ~2.5 us a call, and a run makes up to four), else the wrappers."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController
            _blas = [_functions(c) for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
        except Exception:  # no threadpoolctl (Pyodide has no threads anyway)
            _blas = []
    return _blas


def _functions(controller):
    symbol = getattr(controller, "_get_symbol", None)  # (threadpoolctl's OpenBLAS controller)
    if controller.internal_api == "openblas" and symbol is not None:
        get, put = symbol("openblas_get_num_threads"), symbol("openblas_set_num_threads")
        if get is not None and put is not None:
            get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
            return get, put
    return controller.get_num_threads, controller.set_num_threads


def blas_threads(n, own_threads=False):
    """A reusable context manager running its body with n BLAS threads (no-op for n <= 0). With `own_threads` (an
    EP splitting its kernels over threads itself) BLAS runs on one thread instead — OpenBLAS's workers spin after
    each call and would fight the EP's threads for the cores — and `current()` gives the EP n (every core for 0)."""
    if own_threads:
        return _Limit(_blas_libraries(), int(n) if n and n > 0 else os.cpu_count() or 1, blas=1)
    if not n or n <= 0:
        return contextlib.nullcontext()
    return _Limit(_blas_libraries(), int(n))


def blas_untouched(limit):
    """`limit` (from blas_threads) for runs that call no BLAS (a plan that is one native or WASM chain): the count
    EPs read, with BLAS's pools left as they are (their get / set calls cost ~0.8 us a run, measured at the time)."""
    return _Limit((), limit.n, limit.blas) if isinstance(limit, _Limit) else limit


class _Limit:
    """One session's limit; entered by each of its runs, in whichever thread (what a run changes is kept per thread,
    not on the shared instance)."""

    def __init__(self, libs, n, blas=None):
        self.libs, self.n, self.blas = libs, n, blas or n

    def __enter__(self):
        saved = []
        for get, put in self.libs:
            old = get()
            if old != self.blas:
                put(self.blas)
                saved.append((put, old))
        stack = getattr(_running, "stack", None)
        if stack is None:
            stack = _running.stack = []
        stack.append((self.n, saved))
        return self

    def __exit__(self, *exc):
        _, saved = _running.stack.pop()
        for put, old in saved:
            put(old)
        return False
